#pragma once
// The trampoline-lifetime scenarios of the simulated kernel (SCENARIOS.md tramp-free-preempted and
// ops-uaf-no-sync), explored over schedules.
//
// tramp-free-preempted: CPU 1 runs two tasks calling posix_cpu_timer_set (workload_timers; each
// schedules voluntarily after every 4th call); the patcher on CPU 0 registers a DYNAMIC ops on
// that function — which gets a trampoline of its own, so the site calls it directly — sleeps one
// RCU-tasks grace period while the tasks call through it (optionally sleeps until a task calls the
// function again: sleepUntilCall), then unregisters it and frees it. Freed
// trampoline memory is poisoned and watched: a task that fetches from it (resuming there after a
// preemption) is the machine's TrampolineLifetime finding.
//
// ops-uaf-no-sync: per-ops trampolines off (an arch without them, like arm64 in 2022), two
// identical DYNAMIC ops on posix_cpu_timer_set: the site calls ftrace_regs_caller/ftrace_caller
// and the list function. Unregistering the second changes no code; the owner frees it as soon as
// unregister returns. The list function reads ftrace_ops_list and walks it one event later
// (Trampolines.h): walking the freed ops is an OpsUseAfterFree.
//
// Exploration (a systematic search with the machine's own scheduling, stated bounds): the base
// schedule is round robin over CPUs and the patcher (never a timer preemption; stale fetch bytes
// newest). With --preempt, every schedule that inserts at most `preemptionBound` timer
// preemptions at any decision where one is enabled is run — the CHESS preemption-bounded space
// around round robin; without, every schedule that deviates from round robin at at most
// `delayBound` decisions by running another enabled event instead (delay bounding, Emmi, Qadeer,
// Rakamarić, POPL 2011). Exhaustive within these bounds unless `maxExecutions` is hit
// (TrampolineCheckResult::complete says which).

#include "ftsim/model/OpsTrampolines.h"
#include "ftsim/sim/Finding.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

enum class TrampolineScenarioKind {
  TrampFreePreempted, // tramp-free-preempted
  OpsUafNoSync,       // ops-uaf-no-sync
};

struct TrampolineCheckOptions {
  TrampolineScenarioKind scenario = TrampolineScenarioKind::TrampFreePreempted;
  std::string imagePath; // a built guest kernel.elf: x86_64-fentry, ppc32-mcount or ppc32-pfe
                         // (the image names the ISA; ppc32 ops trampolines sit within `bl` reach)
  std::string protocol;  // "" = the ISA's correct protocol (int3 / word)
  model::TrampolineFreePolicy free;
  bool preempt = true;          // timer preemption (CONFIG_PREEMPTION)
  unsigned preemptionBound = 1; // with preempt
  unsigned delayBound = 1;      // without preempt
  std::uint64_t maxExecutions = 20000;
  // After the grace period, the patcher sleeps (no-op publications) until the traced function's
  // site runs again, so the unregistration races a call inside the trampoline. nullopt: per ISA —
  // off on x86-64 (its next call follows the grace period at once; the published x86 counts were
  // measured without it), on for ppc32 (its next call comes after the unregistration otherwise,
  // and no schedule within the bounds would race it).
  std::optional<bool> sleepUntilCall;
  bool stopAtFirst = true;
};

struct TrampolineCheckResult {
  std::uint64_t executions = 0;
  std::uint64_t baseDecisions = 0; // decisions of the round-robin schedule
  std::uint64_t events = 0;        // over all executions
  bool complete = false;           // every schedule within the bounds was run
  // The first violation: the machine's finding (TrampolineLifetime, guest fault, deadlock) or a
  // use-after-free of an ops, as one line, with its timeline (CPU 0 / CPU 1 events that led there).
  std::optional<std::string> violation;
  std::string timeline;
  std::vector<std::uint32_t> choices; // the violating schedule (sim::ReplayScheduler answers)
  std::string bounds;                 // "preemptions <= 1 around round robin, 2 CPUs, 2 tasks"
};

// FatalError for a bad image or an ISA without per-ops trampolines.
TrampolineCheckResult checkTrampolineScenario(const TrampolineCheckOptions &options);

// The result for people: "VERIFIED ..." / "FOUND ..." plus the timeline.
std::string formatTrampolineCheck(const TrampolineCheckOptions &options,
                                  const TrampolineCheckResult &result);

} // namespace ftsim::verify
