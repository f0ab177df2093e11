#pragma once
// The harness of trampoline-lifetime scenarios (code kind "trampoline"): a dynamic ops' trampoline
// (or, on an ISA without per-ops trampolines, the ops itself) freed while tasks may still be on
// it, on the simulated kernel.
//
// tramp-free-preempted: CPU 1 runs two tasks calling posix_cpu_timer_set (workload_timers; each
// schedules voluntarily after every 4th call); the patcher on CPU 0 registers a DYNAMIC ops on
// that function — which gets a trampoline of its own, so the site calls it directly — waits one
// RCU-tasks grace period while the tasks call through it (optionally sleeps until a task calls the
// function again, or no task is left to call it: sleep_until_call), then unregisters it and frees
// it as the scenario's `free` policy says. Freed trampoline memory is poisoned and watched: a task
// that fetches from it (resuming there after a preemption) is the machine's trampoline-lifetime
// finding.
//
// ops-uaf-no-sync: per-ops trampolines off (an arch without them, like arm64 in 2022), two
// identical DYNAMIC ops on posix_cpu_timer_set: the site calls ftrace_regs_caller/ftrace_caller
// and the list function. Unregistering the second changes no code; the owner frees it as soon as
// unregister returns. The list function reads ftrace_ops_list and walks it one event later:
// walking the freed ops is an ops use-after-free (trampoline-lifetime).
// The list function runs with preemption disabled (as Linux's), so synchronize_rcu_tasks_rude()
// (free = "rude": a schedule on each CPU) is enough to wait for every walk in progress.
//
// idle-tramp-free: as tramp-free-preempted, but CPU 1 runs only its idle task (sim::TaskSpec::idle:
// preempt count 1, not waited for by RCU-tasks), whose loop calls posix_cpu_timer_set and schedules
// after every 4th call. synchronize_rcu_tasks() alone (free = "rcu-tasks-classic") frees the
// trampoline while the idle task may be on it; ftrace's synchronize_rcu_tasks_rude() first
// (free = "rcu-tasks") waits for the idle loop to schedule.
//
// irq-tramp-free: CPU 1 runs only its idle task, whose loop (workload_idle) runs no traced code;
// the traced function is called only by the timer interrupt's handler (ftsim_timer_interrupt, on
// top of the idle task: once in hardirq context, once in its softirq part with interrupts on).
// The patcher sleeps until the handler calls it (or cpu1's idle loop has ended), then unregisters
// and frees the trampoline. synchronize_rcu_tasks() alone frees it under the softirq; the rude
// flavour first waits for it.
//
// Explored by default with the rr-bounded explorer (Explore.h): every schedule that deviates from
// round robin at most `bounds.preemptions` times — by a timer preemption when the scenario has
// preemption, else by running another enabled event.

#include "ftsim/verify/harness/KernelBackedHarness.h"

#include <map>
#include <memory>

namespace ftsim::model {
class FtraceOps;
}
namespace ftsim::kernel {}

namespace ftsim::kernel {
class Kernel;
}

namespace ftsim::verify {

class TrampolineHarness final : public KernelBackedHarness {
public:
  // FatalError for a bad image, an ISA without per-ops trampolines, or a reference run that
  // does not finish.
  TrampolineHarness(Scenario scenario, std::string imagePath);
  ~TrampolineHarness() override;

  sim::RunResult runExecution(sim::Scheduler &scheduler,
                              const std::function<bool()> &stop = {}) override;
  OracleList kindOracles() const override;
  std::string describeSetup() const override;

  // Whether the patcher sleeps after the grace period until the traced function runs again (the
  // scenario's sleep_until_call, or the ISA's default).
  bool sleepsUntilCall() const;
  // Whether timer interrupts run the guest's handler (sim::Machine::setTimerHandler).
  bool runsTimerHandler() const;

private:
  void setUp(bool withPatcher);
  void sleepUntil(::ftsim::kernel::Kernel &k,
                  const std::function<bool(const sim::EventRecord &)> &seen) const;
  std::uint64_t historyHash() const override;

  // Where a CPU enters and leaves a trampoline, preemptions and switches.
  void annotateExecution() const override;

  std::vector<std::unique_ptr<model::FtraceOps>> ops_;
  std::uint64_t site_ = 0; // the traced function's patch site
};

} // namespace ftsim::verify
