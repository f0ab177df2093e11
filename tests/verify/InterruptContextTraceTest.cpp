// Interrupt context on the simulated kernel: a timer interrupt's handler (ftsim_timer_interrupt)
// calls the traced function on top of a task (in hardirq and in softirq context), and each call is
// traced — it goes through the site,
// ftrace_caller and the list function, which then walk the ops — and the task goes on as if
// nothing had happened. ops-uaf-no-sync with its walk non-preemptible: the rude flavour alone
// (schedule_on_each_cpu) keeps the walk safe, no RCU-tasks wait is needed because of the model.

#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/TrampolineHarness.h"

#include "Corpus.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ftsim::verify {
namespace {

using test::corpusScenario;

struct Observed {
  std::vector<kernel::CallbackEvent> callbacks;
  std::vector<std::uint64_t> results;
  std::uint64_t irqEvent = UINT64_MAX;
  int irqTask = -1;
  std::size_t findings = 0;
};

// Round robin without timer interrupts; with `interrupt`, one timer interrupt on cpu1 once the
// list function has been called twice (both ops registered, the site calls ftrace_caller).
Observed runOnce(TrampolineHarness &h, bool interrupt) {
  Observed out;
  sim::RoundRobinScheduler rr;
  sim::FunctionScheduler sched([&](const sim::Machine &m, const sim::DecisionPoint &p) {
    if (p.kind == sim::DecisionKind::Event && interrupt && out.irqEvent == UINT64_MAX &&
        h.kernel().callbacks().size() >= 2)
      for (std::uint32_t i = 0; i < p.options; ++i)
        if (p.events[i].kind == sim::EventKind::Irq && p.events[i].cpu == 1) {
          out.irqEvent = m.eventCount();
          return i;
        }
    std::uint32_t pick = rr.decide(m, p);
    while (p.events[pick].kind == sim::EventKind::Irq ||
           p.events[pick].kind == sim::EventKind::Preempt)
      pick = (pick + 1) % p.options;
    return pick;
  });
  h.runExecution(sched);
  const sim::Machine &m = h.machine();
  out.callbacks = h.kernel().callbacks();
  for (std::size_t t = 0; t < m.taskCount(); ++t)
    out.results.push_back(m.task(static_cast<int>(t)).result);
  if (out.irqEvent != UINT64_MAX)
    out.irqTask = m.events()[out.irqEvent].task;
  out.findings = m.findings().size();
  return out;
}

TEST(InterruptContextTrace, TheHandlersCallsAreTracedOnTopOfTheTaskWhichGoesOnUnchanged) {
  for (const char *name : {"ops-uaf-no-sync-fixed", "ppc32-ops-uaf-no-sync-fixed"}) {
    const Scenario s = corpusScenario(name);
    TrampolineHarness h(s, test::builtImagePath(s));
    ASSERT_TRUE(h.runsTimerHandler());
    const Observed plain = runOnce(h, false);
    const Observed irq = runOnce(h, true);
    ASSERT_NE(irq.irqEvent, UINT64_MAX) << name;
    EXPECT_EQ(irq.findings, 0u) << name;
    // Two traced calls more, from the handler (hardirq, then softirq): their parent is
    // ftsim_timer_interrupt, they ran on the interrupted task, after the interrupt.
    EXPECT_EQ(irq.callbacks.size(), plain.callbacks.size() + 2) << name;
    const arch::ImageSymbol *handler = h.kernel().image().findSymbol("ftsim_timer_interrupt");
    ASSERT_NE(handler, nullptr);
    unsigned fromHandler = 0;
    for (const kernel::CallbackEvent &c : irq.callbacks) {
      if (c.parentIp < handler->addr || c.parentIp >= handler->addr + handler->size)
        continue;
      ++fromHandler;
      EXPECT_GT(c.event, irq.irqEvent);
      EXPECT_EQ(c.task, irq.irqTask);
      EXPECT_EQ(c.function, "ftrace_ops_list_func");
    }
    EXPECT_EQ(fromHandler, 2u) << name;
    // The interrupted task's registers and stack survived: every task returns what it returns
    // without the interrupt.
    EXPECT_EQ(irq.results, plain.results) << name;
  }
}

TEST(InterruptContextTrace, TheRudeFlavourAloneKeepsTheNonPreemptibleWalkSafe) {
  Scenario s = corpusScenario("ops-uaf-no-sync-fixed");
  s.linuxProfile.clear();
  s.trampoline.free = "rude";
  auto h = makeHarness(s, test::builtImages());
  const CheckReport r = check(*h, exploreOptionsFor(s));
  EXPECT_EQ(r.verdict, Verdict::Verified) << formatCheck(*h, r, "");
  EXPECT_TRUE(r.result.stats.complete);
  EXPECT_GT(r.result.stats.executions, 20u);
}

} // namespace
} // namespace ftsim::verify
