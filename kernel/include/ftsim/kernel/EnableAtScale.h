#pragma once
// Enabling a tracer at scale: the simulated kernel booted on an N-function synthetic image
// (arch::syntheticImage), then one tracefs write (`current_tracer`) run as the machine's patcher
// while the other CPUs idle and answer its IPIs, so every store and every sync is a scheduled
// event (round robin). What a user compares with Linux: how many batches, syncs and stores
// enabling N sites costs (x86 text_poke_bp_batch: 3 syncs per batch of up to 256 sites).

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/sim/Machine.h"

#include <cstdint>
#include <string>

namespace ftsim::kernel {

struct EnableAtScaleReport {
  std::string image;       // "synthetic-50000"
  std::size_t records = 0; // records the engine created at boot (patch sites)
  std::string protocol;
  arch::PatchStats stats;   // of the enabling alone (boot's nops are not counted)
  std::uint64_t events = 0; // machine events of the enabling
  bool completed = false;   // the patcher finished within the event budget
};

class Kernel;
struct KernelConfig;

// The machine it runs on: `cpus` CPUs, fast mode, no event log.
KernelConfig enableAtScaleConfig(unsigned cpus, const std::string &protocol);
// Writes `tracer` to current_tracer as the patcher of a booted kernel and runs it to the end.
EnableAtScaleReport enableTracer(Kernel &kernel, const std::string &tracer);
// Both on arch::syntheticImage(isa, functions, seed), as Linux `linuxProfile` when one is named
// (its protocol, record flags and the rest: applyLinuxProfile). FatalError for a bad function
// count, ISA, protocol or profile name, or a protocol that is not the profile's.
EnableAtScaleReport enableAtScale(const arch::Arch &isa, std::size_t functions, unsigned cpus,
                                  const std::string &tracer, const std::string &protocol = {},
                                  std::uint64_t seed = 1, const std::string &linuxProfile = {});

} // namespace ftsim::kernel
