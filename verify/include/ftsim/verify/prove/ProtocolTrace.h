#pragma once
// The sequence of machine-visible steps a patch protocol makes, obtained by running the real
// protocol code (arch::PatchProtocol) against a recording MachinePort: each atomic store (after the
// store model's split), each sync, and — probed through the protocol's own trap handler after
// every step — whether a CPU trapping at each site now would be handled.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/sim/Models.h"

#include <string>
#include <vector>

namespace ftsim::verify {

struct TraceStep {
  enum class Kind { Store, Sync } kind = Kind::Store;
  std::uint64_t addr = 0; // Store: first byte
  arch::Bytes bytes;      // Store: one atomic store
};

// Where a trap the handler took resumes: the pc it set, and the 8-byte value it pushed (a call's
// return address), 0 when it pushed none. Both 0 when the trap was declined.
struct TrapResume {
  std::uint64_t pc = 0;
  std::uint64_t pushed = 0;
  bool operator==(const TrapResume &) const = default;
};

// An instant between two of the protocol's visible events. A new point follows every atomic
// store, every completed sync and every publication of handler state.
struct TracePoint {
  std::size_t stores = 0;  // atomic stores made so far: the text state at this point
  bool afterSync = false;  // this point follows a completed sync: every CPU has serialised
  std::vector<bool> armed; // per request: a trap at its address now is handled by the protocol
  std::vector<TrapResume> resume; // per request: where that trap resumes
};

struct ProtocolTrace {
  std::vector<arch::PatchRequest> requests;
  std::vector<TraceStep> steps;
  std::vector<TracePoint> points; // points[0]: before the first event
  std::size_t stores() const { return points.back().stores; }
  std::size_t syncs() const;
  // The bytes of request `s` after `k` atomic stores.
  arch::Bytes siteAt(std::size_t k, std::size_t s) const;
};

// Runs `protocol` on `requests` (queued in order, then finish()).
ProtocolTrace traceProtocol(const arch::Arch &arch, std::string_view protocol,
                            sim::StoreModel store, const std::vector<arch::PatchRequest> &requests);

} // namespace ftsim::verify
