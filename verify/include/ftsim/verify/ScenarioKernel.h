#pragma once
// Engine-level scenarios (Scenario code kind "kernel"): the built-in guest image booted through
// kernel::Kernel, guest workloads on CPUs 1.., and the scenario's engine operation sequence
// (register/unregister ops, set/append/remove filters, switch tracers) run as the machine's
// patcher on CPU 0, so every store, sync and publication the engine makes is a scheduled event.
//
// One execution boots a fresh kernel (the engine's host-side state cannot be snapshotted with the
// machine), registers the `boot` ops, watches every patch site and patched trampoline instruction,
// runs under a Scheduler and checks the execution with these oracles:
//  - torn-fetch, guest-fault, deadlock, trampoline-lifetime: the machine's findings; an ops
//    use-after-free (Kernel::opsUseAfterFree) is a trampoline-lifetime violation too;
//  - transparency: every task's result equals the reference run (the boot-time ops, no patcher,
//    round robin) — for a livepatch scenario the reference already runs the new function;
//  - trace-completeness, over the scenario's own ops (their callbacks are recorded with the CPU,
//    task and event): a callback for a function its ops was not enabled for at any state the call
//    could have seen (the state before and after every operation overlapping the call) is a
//    violation; a call whose site ran while no operation was in progress, and whose next site
//    execution by the same task also precedes the next operation, must reach every ops enabled
//    for it exactly once. Tracer ops (tracefs' global_ops) are covered by the other oracles only;
//  - engine-invariant, after boot and after every operation (when the engine is quiescent): every
//    record's reference count, ENABLED, REGS and (with ops trampolines) TRAMP flag equal a
//    reference model computed from the live ops' hashes; every CPU's view of each site is the
//    nop or the call the model says (ftrace_caller, ftrace_regs_caller or the one ops'
//    trampoline); ftrace_call / ftrace_regs_call target ftrace_stub with no live ops and the list
//    function with two or more.
//
// Exploration is randomised (a fresh kernel per execution costs milliseconds, too much for
// stateless exhaustive search over the workloads' thousands of events): uniform random or PCT
// (Burckhardt et al. 2010, depth d over the previous execution's event count), seeded, `runs`
// executions. A counterexample's schedule is minimised by the shortest prefix of its decisions
// that, completed with the first enabled event at every later decision, still shows a violation of
// the same oracle.

#include "ftsim/sim/Scheduler.h"
#include "ftsim/verify/Explore.h"
#include "ftsim/verify/Oracle.h"
#include "ftsim/verify/Replay.h"
#include "ftsim/verify/Scenario.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::kernel {
class Kernel;
}

namespace ftsim::verify {

struct KernelExecution {
  std::vector<Violation> violations; // sorted by event
  std::vector<std::uint32_t> choices;
  std::uint64_t events = 0;
  std::uint64_t logHash = 0;
  unsigned preemptions = 0;       // timer preemptions taken
  std::vector<std::string> notes; // engine operations that failed (errno), one line each
  std::vector<std::uint64_t> results;
};

class KernelScenarioRunner {
public:
  // `imagePath`: the linked guest image. FatalError when the scenario is not of kind kernel, the
  // image does not boot, or the reference run does not complete.
  KernelScenarioRunner(Scenario scenario, std::string imagePath);
  ~KernelScenarioRunner();

  const Scenario &scenario() const { return scenario_; }
  const std::vector<std::uint64_t> &referenceResults() const { return reference_; }

  // One execution under `scheduler`. `inspect` (optional) sees the kernel after the run (for
  // timelines and Chrome traces).
  KernelExecution
  run(sim::Scheduler &scheduler,
      const std::function<void(const kernel::Kernel &, const KernelExecution &)> &inspect = {});
  // Replays `choices` (then the first enabled event at every later decision).
  KernelExecution
  replay(const std::vector<std::uint32_t> &choices,
         const std::function<void(const kernel::Kernel &, const KernelExecution &)> &inspect = {});

private:
  Scenario scenario_;
  std::string imagePath_;
  std::vector<std::uint64_t> reference_;
};

struct KernelExploreResult {
  std::uint64_t executions = 0;
  std::uint64_t events = 0;
  std::uint64_t violatingExecutions = 0;
  std::optional<Counterexample> counterexample; // minimised
  std::optional<Counterexample> found;          // as found
  std::string coverage; // "40 random runs (seed 1), at most 400000 events per execution"
  double seconds = 0;
};

KernelExploreResult exploreKernelScenario(KernelScenarioRunner &runner, bool stopAtFirst = true);

// The shortest-prefix minimisation described above.
Counterexample minimiseKernel(KernelScenarioRunner &runner, const Counterexample &found);

// A PCT scheduler over the machine's processes (the patcher, and per CPU its execution, IPI and
// preemption), seeded; `expectedEvents` is k.
class PctScheduler final : public sim::Scheduler {
public:
  PctScheduler(std::uint64_t seed, unsigned depth, std::uint64_t expectedEvents);
  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override;

private:
  std::uint64_t state_;
  std::vector<std::uint64_t> changePoints_;
  std::vector<std::int64_t> priority_; // by process id
  std::uint64_t steps_ = 0;
  std::uint64_t next();
};

// Reproduces a replay file of an engine-level scenario: the execution's log must hash to the
// file's log_fnv1a and show a violation with the recorded summary; FatalError "<origin>: ..."
// otherwise. `chrome`: also the Chrome trace-event JSON of the execution.
struct KernelReproduction {
  KernelExecution execution;
  Violation violation; // the recorded one, as observed again
  std::string timeline;
  std::string chrome;
};
KernelReproduction reproduceKernel(KernelScenarioRunner &runner, const ReplayFile &file,
                                   const std::string &origin, bool chrome = false);

// Timeline of a kernel execution: patcher operations, stores, publications, IPIs, preemptions,
// site executions, callbacks and findings, one line each (up to `upTo`).
std::string kernelTimeline(const kernel::Kernel &kernel, std::uint64_t upTo = UINT64_MAX);

} // namespace ftsim::verify
