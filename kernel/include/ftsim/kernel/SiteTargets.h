#pragma once
// The exact legal states of every record's call site at each moment, for the torn-fetch/target
// oracle (sim::FindingKind::TornFetch: a fetch at a watched site that sees none of its allowed
// states). Derived from the records and the engine's state, never from what the patcher writes:
//
//  - at rest a site may hold only what its record says it holds (ftrace_get_addr_curr(), or the
//    nop of a disabled record);
//  - while an update of the record is pending, the old state and the new one
//    (ftrace_get_addr_new(), or the nop), nothing else;
//  - the old state stays legal until every other CPU context-synchronised after the new state was
//    stored (the IPI of syncCores(), schedule_on_each_cpu()): until then a CPU may still fetch it
//    under the stale fetch model, which on powerpc (no IPI, c96f83856f56) lasts past the update. An
//    update of the same record before that keeps every state not yet synchronised away.
//
// So a patcher that writes a call to the wrong trampoline (not the one the record's flags and
// ops say) is reported where a CPU fetches it, with the legal states in the message.
//
// TargetCheckedPatcher decorates the kernel's ArchPatcher: before the core's makeCall / makeNop /
// modifyCall for a record reaches the real patcher, the site's legal states become old and new
// as above. SyncObservingPort decorates the MachinePort the patcher and the core use and reports
// every all-CPU context synchronisation.

#include "ftsim/arch/MachinePort.h"
#include "ftsim/model/ArchPatcher.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace ftsim::kernel {

class SiteTargets {
public:
  using Publish = std::function<void(std::uint64_t, const std::vector<arch::Bytes> &)>;
  using Read = std::function<arch::Bytes(std::uint64_t ip, std::size_t size)>;
  // `publish(ip, states)` hands a site's legal states to the machine (Machine::watchSite);
  // `read(ip, size)` reads the text as stored (what every CPU fetches once synchronised).
  SiteTargets(Publish publish, Read read) : publish_(std::move(publish)), read_(std::move(read)) {}

  // The state the record says its site holds now (boot, watch time).
  void rest(std::uint64_t ip, arch::Bytes now);
  // An update of the site from `old` to `now` is about to be written.
  void update(std::uint64_t ip, arch::Bytes old, arch::Bytes now);
  // Every other CPU context-synchronised: a pending site whose text already holds its newest
  // state narrows to it (one whose store is still to come, a later phase of the protocol, keeps
  // its old state).
  void contextSynchronised();
  // The legal states of a site (empty: never told).
  std::vector<arch::Bytes> legal(std::uint64_t ip) const;
  bool known(std::uint64_t ip) const { return sites_.count(ip) != 0; }
  // The newest state the engine wants at `ip`.
  const arch::Bytes &newest(std::uint64_t ip) const { return sites_.at(ip).newest; }

private:
  struct Site {
    std::vector<arch::Bytes> states; // legal now (newest included)
    arch::Bytes newest;
  };
  Publish publish_;
  Read read_;
  std::map<std::uint64_t, Site> sites_;
  // The sites with more than one legal state, in address order: the only ones a synchronisation
  // can narrow (enabling a tracer on 50,000 sites syncs 600 times; each visits these alone).
  std::set<std::uint64_t> pending_;
};

// A MachinePort that forwards everything and calls `synced` after each syncCores() and
// scheduleOnEachCpu() returned (both leave every CPU context-synchronised).
std::unique_ptr<arch::MachinePort> makeSyncObservingPort(arch::MachinePort &inner,
                                                         std::function<void()> synced);

// An ArchPatcher that forwards to `inner` after telling `targets` the old and new state of each
// record's site. `addrNew` is the core's ftrace_get_addr_new() (bound after the core exists).
std::unique_ptr<model::ArchPatcher>
makeTargetCheckedPatcher(model::ArchPatcher &inner, SiteTargets &targets,
                         std::function<std::uint64_t(const model::DynFtrace &)> addrNew);

} // namespace ftsim::kernel
