#pragma once
// The configuration of a Machine, fixed at construction.

#include "ftsim/sim/FetchModel.h"
#include "ftsim/sim/Models.h"

#include <cstdint>

namespace ftsim::sim {

struct MachineConfig {
  unsigned cpus = 2; // 1..8
  StoreModel storeModel = StoreModel::Word;
  const FetchModel *fetchModel = &fetchModelByName("atomic");
  unsigned patcherCpu = 0; // the CPU the patcher runs on
  bool preemption = true;  // offer timer preemption events
  // 1: every instruction is an event (instruction-granular interleaving). >1: fast mode, a CPU
  // whose next instruction is not watched runs up to `quantum` instructions as one Run event,
  // stopping before watched text (patch sites, text the patcher wrote, trampoline memory).
  unsigned quantum = 1;
  // Fast mode on x86: steps by the trace flag, one instruction per translated block (sim/README.md,
  // "Steps by the trace flag"), and runs by blocks, with a hook before each translated block
  // instead of one before each instruction ("Runs by blocks"; not once the machine watches data).
  // Events, registers and findings are the same either way; only the speed differs.
  bool traceFlagSteps = false;
  // Trampoline memory for allocText and task stacks; 0 picks the ISA's default (x86-64:
  // MODULES_VADDR 0xffffffffa0000000, stacks at 0xffffffffc0000000; ppc32: 0xb0000000, stacks at
  // 0xd0000000).
  std::uint64_t moduleBase = 0;
  std::uint64_t moduleSize = 1 << 20;
  std::uint64_t stackBase = 0;
  std::uint64_t stackSize = 16 << 10; // per task
  unsigned maxTasks = 64;
  // true: every event and decision is recorded (events(), schedule(), logText()), as the explorers
  // and replays need. false: events are only counted (eventCount()), so a long run's memory stays
  // bounded whatever its length (ftsim trace runs tens of millions of events).
  bool keepLog = true;
  // Restores after which every CPU's Unicorn engine is closed and opened again (sim/Engines.cpp):
  // it bounds Unicorn's translated-code buffer, which restores otherwise fill (up to 1 GiB per
  // CPU, with a crash inside Unicorn when it overflows). No effect on what a run does; 0: never.
  std::uint32_t restoresPerEngine = 4096;
  // Machines that use the same engines in turn (sim/EnginePool.cpp): a destroyed machine leaves
  // its engines (and the memory they map) to the next machine its thread makes with the same
  // architecture, CPU count and quantum 1 or not, which keeps the translations of the code that did
  // not change; after this many machines (or restoresPerEngine restores) they are closed, which
  // bounds Unicorn's code buffer (a machine that keeps the last one's translations adds little:
  // sim/README.md, "The engine pool"). 1: every machine opens its own. No effect on what a run
  // does.
  std::uint32_t machinesPerEngine = 256;
  // NOHZ_FULL deferral of the text-patching IPI (V. Schneider's series "context_tracking,x86:
  // Defer some IPIs until a user->kernel transition", 2025, not merged): syncCores() does not
  // interrupt a CPU between UserEnter and KernelEntry and does not wait for it; the CPU
  // serialises at its KernelEntry instead. false: a CPU in user mode takes the IPI as any other.
  bool deferSyncInUser = false;
};

} // namespace ftsim::sim
