// Trampoline-lifetime scenarios on the simulated kernel: one execution (TrampolineHarness.h).

#include "ftsim/verify/harness/TrampolineHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/harness/KernelHarness.h"

#include <fmt/format.h>

namespace ftsim::verify {

using namespace ftsim::kernel;
namespace {

constexpr const char *kTracedFunction = "posix_cpu_timer_set";

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

bool TrampolineHarness::sleepsUntilCall() const {
  if (scenario_.trampoline.variant == TrampolineVariant::OpsUafNoSync)
    return false;
  // By default only where the next call does not follow the grace period at once (ppc32).
  return scenario_.trampoline.sleepUntilCall.value_or(!arch().nextCallFollowsGracePeriod());
}

void TrampolineHarness::setUp(bool withPatcher) {
  const TrampolineSpec &spec = scenario_.trampoline;
  const bool uaf = spec.variant == TrampolineVariant::OpsUafNoSync;
  KernelConfig config;
  config.machine.cpus = scenario_.cpus;
  config.machine.quantum = 64;
  config.machine.preemption = scenario_.preemption;
  config.machine.storeModel = scenario_.store;
  config.machine.fetchModel = scenario_.fetch;
  config.protocol = scenario_.protocol;
  config.livePatchingRule = true;
  config.opsTrampolines = !uaf;
  config.splitListFunction = uaf;
  config.freePolicy.free = model::parseTrampolineFree(spec.free);
  config.freePolicy.syncWhenUnchanged = spec.syncWhenUnchanged;
  kernel_.reset();
  ops_.clear();
  kernel_ = std::make_unique<Kernel>(arch::loadImage(imagePath_), config);
  Kernel &kernel = *kernel_;
  if (spec.variant == TrampolineVariant::IdleTrampFree) {
    // CPU 1 runs only its idle task, whose loop calls the traced function.
    kernel.addIdleWorkload("timers", 1, 1);
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
    // case schedule_on_each_cpu(), which a preempted reader does not hold up.
    if (uaf)
      k.machine().scheduleOnEachCpu();
    else
      k.machine().synchronizeRcuTasks();
    // Then, optionally, sleep (one no-op publication at a time, the tasks running meanwhile)
    // until a task calls the function again, so the unregistration races a call that is inside
    // the trampoline. (How soon a call follows the end of the grace period depends on the ISA's
    // code: on ppc32 the next call comes too late for the round-robin schedule otherwise.)
    sleepUntilCall(k, sleep);
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      k.core().unregisterFunction(**it);
      k.freeOps(**it); // the owner's kfree()
    }
  });
}

// Sleep (one no-op publication at a time, the tasks running meanwhile) until a task calls the
// traced function.
void TrampolineHarness::sleepUntilCall(Kernel &k, bool sleep) const {
  std::uint64_t scanned = k.now();
  for (int i = 0; sleep && i < 100000; ++i) {
    bool called = false;
    const auto events = k.machine().events();
    for (; scanned < events.size(); ++scanned)
      called =
          called || (events[scanned].kind == sim::EventKind::Step && events[scanned].pc == site_);
    if (called)
      break;
    k.machine().publish("sleep", [] {});
  }
}

// The patcher sleeping in sleepUntilCall() wakes when a task called the traced function since it
// last looked, right after its last event: whether one did is the only history it reads. The
// use-after-free records are in the kernel's hostStateHash().
std::uint64_t TrampolineHarness::historyHash() const {
  const auto events = machine().events();
  bool called = false;
  for (std::size_t i = events.size(); i-- > 0;) {
    const sim::EventRecord &e = events[i];
    if (e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish)
      break;
    called = called || (e.kind == sim::EventKind::Step && e.pc == site_);
  }
  return called ? 1 : 0;
}

sim::RunResult TrampolineHarness::runExecution(sim::Scheduler &scheduler,
                                               const std::function<bool()> &stop) {
  setUp(true);
  const sim::RunResult total = runKernel(scheduler, stop);
  annotateTrampolineVisits();
  return total;
}

// Where a CPU enters and leaves a trampoline, which preemptions and switches are (not) quiescent
// states.
void TrampolineHarness::annotateTrampolineVisits() {
  std::map<unsigned, bool> inside;
  for (const sim::EventRecord &e : machine().events()) {
    if (e.kind == sim::EventKind::Preempt)
      annotateEvent(e.index, "timer preemption: not a quiescent state");
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
  const bool idle = scenario_.trampoline.variant == TrampolineVariant::IdleTrampFree;
  return fmt::format(
      "{} CPUs (patcher on cpu0), {} x 16 calls, fast mode quantum 64 "
      "(trampolines and patched sites stepped per instruction){}",
      scenario_.cpus,
      idle ? "cpu1's idle task only (preempt count 1, schedules after every 4th call; RCU-tasks "
             "does not wait for it)"
           : "2 tasks on cpu1",
      sleepsUntilCall() ? "; after the grace period the patcher sleeps until the next call" : "");
}

} // namespace ftsim::verify
