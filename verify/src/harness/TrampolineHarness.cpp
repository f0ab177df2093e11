// Trampoline-lifetime scenarios on the simulated kernel: one execution (TrampolineHarness.h).

#include "ftsim/verify/harness/TrampolineHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/model/LinuxProfile.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/harness/KernelHarness.h"

#include <fmt/format.h>

namespace ftsim::verify {

using namespace ftsim::kernel;
namespace {

constexpr const char *kTracedFunction = "posix_cpu_timer_set";
// The guest's timer interrupt handler (corpora/guest/kernel/irq/handler.c): it calls
// kTracedFunction in hardirq context, then in its softirq part with interrupts on.
constexpr const char *kTimerHandler = "ftsim_timer_interrupt";

} // namespace

TrampolineHarness::TrampolineHarness(Scenario scenario, std::string imagePath)
    : KernelBackedHarness(std::move(scenario), std::move(imagePath)) {
  if (scenario_.code != CodeKind::Trampoline)
    fatal("{}: not a trampoline scenario (code kind is not \"trampoline\")", scenario_.name);
  // The reference: the same tasks without the patcher, round robin.
  setUp(false);
  sim::RoundRobinScheduler rr;
  runKernel(rr, {});
  takeReference("the same tasks, no patcher");
}

TrampolineHarness::~TrampolineHarness() = default;

// Timer interrupts run the guest's handler (sim/README.md, "Interrupt context") where the
// variant is about what interrupt context reaches: the list function's walk, non-preemptible, is
// delayed by a handler on top of the reader (ops-uaf-no-sync); a handler on top of the idle task
// is the only caller of the traced function (irq-tramp-free).
bool TrampolineHarness::runsTimerHandler() const {
  return scenario_.preemption && (scenario_.trampoline.variant == TrampolineVariant::OpsUafNoSync ||
                                  scenario_.trampoline.variant == TrampolineVariant::IrqTrampFree);
}

bool TrampolineHarness::sleepsUntilCall() const {
  if (scenario_.trampoline.variant == TrampolineVariant::OpsUafNoSync)
    return false;
  if (scenario_.trampoline.variant == TrampolineVariant::IrqTrampFree)
    return true; // only an interrupt calls the function: the unregistration waits for one
  // By default only where the next call does not follow the grace period at once (ppc32).
  return scenario_.trampoline.sleepUntilCall.value_or(!arch().nextCallFollowsGracePeriod());
}

void TrampolineHarness::setUp(bool withPatcher) {
  const TrampolineSpec &spec = scenario_.trampoline;
  const bool uaf = spec.variant == TrampolineVariant::OpsUafNoSync;
  KernelConfig config;
  config.machine.cpus = scenario_.cpus;
  config.machine.quantum = 64;
  // Steps by the trace flag: 0.76 of the host instructions of tramp-free-rcu-tasks (callgrind),
  // where the kernel harness's list-to-single-race-fixed took 1.03 (MachineConfig.h).
  config.machine.traceFlagSteps = true;
  config.machine.preemption = scenario_.preemption;
  config.machine.storeModel = scenario_.store;
  config.machine.fetchModel = scenario_.fetch;
  config.protocol = scenario_.protocol;
  config.livePatchingRule = true;
  config.opsTrampolines = !uaf;
  config.splitListFunction = uaf;
  config.freePolicy.free = model::parseTrampolineFree(spec.free);
  config.freePolicy.syncWhenUnchanged = spec.syncWhenUnchanged;
  config.release = scenarioReleaseCode(scenario_);
  kernel_.reset();
  ops_.clear();
  kernel_ = std::make_unique<Kernel>(image(), config);
  Kernel &kernel = *kernel_;
  if (spec.variant == TrampolineVariant::IdleTrampFree) {
    // CPU 1 runs only its idle task, whose loop calls the traced function.
    kernel.addIdleWorkload("timers", 1, 1);
  } else if (spec.variant == TrampolineVariant::IrqTrampFree) {
    // CPU 1 runs only its idle task, whose loop calls nothing traced: the timer interrupt does.
    kernel.addIdleWorkload("idle", 1, 1);
  } else {
    kernel.addWorkload("timers", 1, 1);
    kernel.addWorkload("timers", 1, 2);
  }
  // kmalloc'ed ops (FTRACE_OPS_FL_DYNAMIC), like perf's or a kprobe's.
  for (unsigned i = 0; i < (uaf ? 2u : 1u); ++i) {
    ops_.push_back(std::make_unique<model::FtraceOps>(
        fmt::format("dynamic_ops{}", i),
        [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {},
        model::OpsFlag::Dynamic));
    kernel.core().setFilter(*ops_.back(), kTracedFunction, true);
  }
  if (runsTimerHandler()) {
    const arch::ImageSymbol *handler = kernel.image().findSymbol(kTimerHandler);
    if (!handler)
      fatal("{}: no {} for the timer interrupt to run", kernel.image().name, kTimerHandler);
    kernel.machine().setTimerHandler(handler->addr);
  }
  const arch::ImageSymbol *traced = kernel.image().findSymbol(kTracedFunction);
  if (!traced)
    fatal("{}: no {} to trace", kernel.image().name, kTracedFunction);
  site_ = 0;
  kernel.core().records().forEach([&](const model::DynFtrace &rec) {
    if (!site_ && rec.ip >= traced->addr && rec.ip < traced->addr + traced->size)
      site_ = rec.ip;
  });
  if (!withPatcher)
    return;
  kernel.patcher([this, uaf, sleep = sleepsUntilCall()](Kernel &k) {
    for (auto &op : ops_)
      k.core().registerFunction(*op);
    // The tasks call through it for a while: an RCU-tasks grace period; for the list function
    // case schedule_on_each_cpu().
    if (uaf)
      k.machine().scheduleOnEachCpu();
    else
      k.machine().synchronizeRcuTasks();
    // Then, optionally, sleep (one no-op publication at a time, the tasks running meanwhile)
    // until a task calls the function again, so the unregistration races a call that is inside
    // the trampoline. (How soon a call follows the end of the grace period depends on the ISA's
    // code: on ppc32 the next call comes too late for the round-robin schedule otherwise.) For
    // the list function: until a task has read ftrace_ops_list, so the unregistration races a
    // walk in progress on another CPU, as in 0e792b89e680's report.
    const std::uint64_t read = k.trampolines().listFuncTrap;
    if (uaf)
      sleepUntil(k, [read](const sim::EventRecord &e) {
        return e.outcome == sim::StepOutcome::Hypercall && e.detail == read;
      });
    else if (sleep)
      sleepUntil(k, [this](const sim::EventRecord &e) {
        return e.kind == sim::EventKind::Step && e.pc == site_;
      });
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      k.core().unregisterFunction(**it);
      k.freeOps(**it); // the owner's kfree()
    }
  });
}

// Sleep (one no-op publication at a time, the tasks running meanwhile) until an event the
// predicate accepts has run, or no task is left to run one.
void TrampolineHarness::sleepUntil(
    Kernel &k, const std::function<bool(const sim::EventRecord &)> &seen) const {
  std::uint64_t scanned = k.now();
  // Whether such an event ran since the last look.
  auto found = [&] {
    bool any = false;
    const auto events = k.machine().events();
    for (; scanned < events.size(); ++scanned)
      any = any || seen(events[scanned]);
    return any;
  };
  // The events it waits for are the tasks' (a call, a read of the list): once every task has
  // exited or faulted none can come, and the patcher went on publishing alone until the bound
  // (most of the events of ops-uaf-no-sync's executions were such publications).
  const sim::Machine &m = k.machine();
  auto taskLeft = [&m] {
    for (std::size_t t = 0; t < m.taskCount(); ++t)
      if (m.task(static_cast<int>(t)).state == sim::TaskState::Runnable)
        return true;
    return false;
  };
  if (found() || !taskLeft())
    return;
  // At most 100,000 publications; the machine asks after each, without resuming the patcher.
  k.machine().publishWhile(
      "sleep", [] {}, [&] { return !found() && taskLeft(); }, 100000);
}

// The patcher sleeping in sleepUntil() wakes when an event its predicate accepts ran since it last
// looked, right after its last event: a task's call of the traced function, or (ops-uaf-no-sync)
// a task's read of ftrace_ops_list. Whether each did is the only history it reads; both are
// hashed, whichever the patcher waits for. The use-after-free records are in the kernel's
// hostStateHash().
std::uint64_t TrampolineHarness::historyHash() const {
  const auto events = machine().events();
  const std::uint64_t read = kernel().trampolines().listFuncTrap;
  bool called = false, listRead = false;
  for (std::size_t i = events.size(); i-- > 0;) {
    const sim::EventRecord &e = events[i];
    if (e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish)
      break;
    called = called || (e.kind == sim::EventKind::Step && e.pc == site_);
    listRead = listRead || (e.outcome == sim::StepOutcome::Hypercall && e.detail == read);
  }
  return (called ? 1 : 0) | (listRead ? 2 : 0);
}

sim::RunResult TrampolineHarness::runExecution(sim::Scheduler &scheduler,
                                               const std::function<bool()> &stop) {
  setUp(true);
  return runKernel(scheduler, stop);
}

// Where a CPU enters and leaves a trampoline, which preemptions and switches are (not) quiescent
// states.
void TrampolineHarness::annotateExecution() const {
  std::map<unsigned, bool> inside;
  for (const sim::EventRecord &e : machine().events()) {
    if (e.kind == sim::EventKind::Preempt)
      annotateEvent(e.index, "timer preemption: not a quiescent state");
    if (e.kind == sim::EventKind::Irq)
      annotateEvent(e.index,
                    fmt::format("timer interrupt: {} runs on top of the task", kTimerHandler));
    if (e.outcome == sim::StepOutcome::IrqReturn)
      annotateEvent(e.index, "back from the interrupt (iret): the task resumes");
    if (e.kind != sim::EventKind::Step && e.kind != sim::EventKind::Run)
      continue;
    bool now = false;
    for (const OpsTrampoline &t : kernel_->opsTrampolines())
      now = now || (e.pc >= t.addr && e.pc < t.addr + t.size);
    if (now != inside[e.cpu])
      annotateEvent(e.index, now ? "enters the ops trampoline" : "leaves the ops trampoline");
    inside[e.cpu] = now;
    if (e.outcome == sim::StepOutcome::Schedule)
      annotateEvent(e.index, "schedule(): voluntary switch (quiescent)");
  }
}

OracleList TrampolineHarness::kindOracles() const {
  return {makeOpsUseAfterFreeOracle([this]() -> const Kernel & { return *kernel_; })};
}

std::string TrampolineHarness::describeSetup() const {
  const TrampolineVariant v = scenario_.trampoline.variant;
  return fmt::format(
      "{} CPUs (patcher on cpu0), {}, fast mode quantum 64 "
      "(trampolines and patched sites stepped per instruction){}{}{}",
      scenario_.cpus,
      v == TrampolineVariant::IdleTrampFree
          ? "cpu1's idle task only (preempt count 1, schedules after every 4th call; RCU-tasks "
            "does not wait for it) x 16 calls"
      : v == TrampolineVariant::IrqTrampFree
          ? "cpu1's idle task only (no traced call of its own, idles 16 times; RCU-tasks does not "
            "wait for it), the traced function called by the timer interrupt's handler"
          : "2 tasks on cpu1 x 16 calls",
      sleepsUntilCall()
          ? "; after the grace period the patcher sleeps until the next call (or no task is left)"
          : "",
      scenario_.trampoline.variant == TrampolineVariant::OpsUafNoSync
          ? "; after the grace period the patcher sleeps until a task has read ftrace_ops_list (or "
            "no task is left)"
          : "",
      runsTimerHandler()
          ? fmt::format("; a timer interrupt runs {} (one call with interrupts off, then one in "
                        "its softirq part with interrupts on)",
                        kTimerHandler)
          : "");
}

} // namespace ftsim::verify
