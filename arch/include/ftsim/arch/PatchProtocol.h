#pragma once
// How an ISA rewrites live code on a running SMP machine: the x86 int3 batch protocol
// (text_poke_bp_batch) and its historical variants, the powerpc aligned word store + icache
// synchronisation. The ftrace core decides *what* each site becomes; a PatchProtocol decides the
// order of stores, breakpoints and syncs that gets it there, and owns the trap handler that covers
// CPUs hitting a site mid-patch.
//
// Who calls it, and when: the engine, on the patcher CPU, with text_mutex held in Linux terms:
//   attach(port)      once, before the first patch (installs the trap handler)
//   queue(request)    per site of an update (text_poke_queue); may flush a full or unsorted batch
//   finish()          at the end of an update (text_poke_finish): flushes what is queued
//   pokeNow(request)  a single immediate patch (text_poke_bp), e.g. the ftrace_call site
// Every call blocks until its stores and syncs have been scheduled on the machine.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ftsim::arch {

struct PatchRequest {
  std::uint64_t addr = 0;
  Bytes oldBytes; // what the engine verified is there (ftrace_verify_code)
  Bytes newBytes; // what it must become; same length as oldBytes
};

// Counts a user can compare between protocols ("enabling N sites costs 3 syncs, not 3*N").
struct PatchStats {
  std::uint64_t batches = 0;
  std::uint64_t sites = 0;
  std::uint64_t stores = 0; // writeText calls (each may be several atomic stores)
  std::uint64_t syncs = 0;  // syncCores calls
  std::uint64_t trapsHandled = 0;
};

class PatchProtocol {
public:
  virtual ~PatchProtocol() = default;
  virtual std::string_view name() const = 0;
  // The one documented difference from the ISA's correct protocol ("" for the correct one).
  virtual std::string_view difference() const = 0;
  virtual void attach(MachinePort &port) = 0;
  virtual void queue(const PatchRequest &request) = 0;
  virtual void finish() = 0;
  virtual void pokeNow(const PatchRequest &request) = 0;
  virtual const PatchStats &stats() const = 0;
};

struct ProtocolInfo {
  std::string name;
  std::string arch;
  std::string difference; // "" for the ISA's correct (today's) protocol
  bool correct = false;   // expected to verify
};

// One row of a target's protocol table (Arch::protocolTable) or mutant list (Arch::mutants).
// `program` is the protocol as data (ProtocolProgram.h) when it is one.
struct ProtocolProgram;
using ProtocolFactory =
    std::function<std::unique_ptr<PatchProtocol>(const Arch &, const ProtocolInfo &)>;
struct ProtocolEntry {
  ProtocolInfo info;
  ProtocolFactory make;
  std::shared_ptr<const ProtocolProgram> program;
};

// A mutant that is not a protocol Linux ran: a protocol built only to be killed, or a broken
// encoder under the correct protocol (`make` then builds the correct one). An encoder mutant names
// the checker that holds it to the proven call range (`rangeCheck`, "bl-range") and where that
// checker probes it: `probeSite`, and targets at `probeOffsets` from it.
struct MutantEntry {
  ProtocolInfo info;
  ProtocolFactory make;
  std::function<EncodeResult(std::uint64_t site, std::uint64_t target)> brokenCall;
  std::string rangeCheck;
  std::uint64_t probeSite = 0;
  std::vector<std::int64_t> probeOffsets;
};

// The ISA's correct protocol (the first of its table): int3 on x86-64, word on powerpc.
std::string_view defaultProtocol(const Arch &arch);

// The protocols known for `arch`, correct one first. Names: x86_64: int3, int3-skip, int3-nosync,
// direct, and the mutants (see ProtocolInfo::difference); ppc32: word, ... .
std::vector<ProtocolInfo> protocolsFor(const Arch &arch);
// Throws FatalError naming `name` and the known protocols of `arch`.
std::unique_ptr<PatchProtocol> makePatchProtocol(const Arch &arch, std::string_view name);
// A table protocol or one of the target's mutants (Arch::mutants) by name.
std::unique_ptr<PatchProtocol> makeMutantProtocol(const Arch &arch, std::string_view name);

} // namespace ftsim::arch
