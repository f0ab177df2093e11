// Tasks and waiting: RCU-tasks grace periods (a preempted task holds them), trampoline lifetime
// (fetching freed text is a finding), and fast mode (same results, site fetches still seen).

#include "X86Scenario.h"

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ftsim::sim {
namespace {

using test::X86Scenario;

const arch::Arch &x86() { return arch::archByName("x86_64"); }

std::uint64_t firstEvent(const Machine &m, auto pred) {
  for (const EventRecord &e : m.events())
    if (pred(e))
      return e.index;
  return UINT64_MAX;
}

TEST(RcuTasks, APreemptedTaskHoldsTheGracePeriodUntilItSchedules) {
  X86Scenario s(4);
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  s.install(m, {1, 1}); // tasks 0 and 1 share CPU 1
  m.startPatcher([](arch::MachinePort &port) {
    port.synchronizeRcuTasks();
    port.publish("grace period over", [] {});
  });
  // Preempt task 0 at its first instruction, then run round-robin without preemption.
  bool preempted = false;
  RoundRobinScheduler rr;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    for (std::uint32_t i = 0; i < p.options && !preempted; ++i)
      if (p.events[i].kind == EventKind::Preempt) {
        preempted = true;
        return i;
      }
    return rr.decide(mm, p);
  });
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed);
  const std::uint64_t publish =
      firstEvent(m, [](const EventRecord &e) { return e.kind == EventKind::Publish; });
  const std::uint64_t task0Quiescent = firstEvent(m, [](const EventRecord &e) {
    return e.task == 0 && (e.outcome == StepOutcome::Schedule || e.outcome == StepOutcome::Exit);
  });
  const std::uint64_t task1Quiescent = firstEvent(m, [](const EventRecord &e) {
    return e.task == 1 && (e.outcome == StepOutcome::Schedule || e.outcome == StepOutcome::Exit);
  });
  ASSERT_NE(publish, UINT64_MAX);
  EXPECT_TRUE(preempted);
  EXPECT_GT(publish, task0Quiescent);
  EXPECT_GT(publish, task1Quiescent);
  EXPECT_EQ(m.task(0).result, X86Scenario::expectedResult(0));
}

TEST(RcuTasks, ScheduleOnEachCpuWaitsForEveryOtherCpuToSchedule) {
  X86Scenario s(4);
  MachineConfig c;
  c.cpus = 3;
  Machine m(x86(), c);
  s.install(m, {1, 2});
  m.startPatcher([](arch::MachinePort &port) {
    port.scheduleOnEachCpu();
    port.publish("work done", [] {});
  });
  RoundRobinScheduler rr;
  m.run(rr);
  const std::uint64_t publish =
      firstEvent(m, [](const EventRecord &e) { return e.kind == EventKind::Publish; });
  for (unsigned cpu : {1u, 2u})
    EXPECT_GT(publish, firstEvent(m, [cpu](const EventRecord &e) {
                return e.cpu == cpu && e.outcome == StepOutcome::Schedule;
              }));
}

TEST(TrampolineLifetime, FetchingFreedTrampolineIsAFinding) {
  X86Scenario s(4);
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  s.install(m, {1});
  const std::uint64_t tramp = m.allocText(64, s.site);
  ASSERT_NE(tramp, 0u);
  m.pokeText(tramp, std::vector<std::uint8_t>{0xc3}); // ret
  auto call = x86().call(s.site, tramp);
  ASSERT_TRUE(call.ok);
  m.pokeText(s.site, call.bytes);
  // Freed with no grace period at all: CPU 1 still calls it.
  m.startPatcher([&](arch::MachinePort &port) { port.freeText(tramp, 64); });
  RoundRobinScheduler rr;
  m.run(rr);
  auto findings = m.findings();
  auto it = std::find_if(findings.begin(), findings.end(), [](const Finding &f) {
    return f.kind == FindingKind::TrampolineLifetime;
  });
  ASSERT_NE(it, findings.end()) << m.logText();
  EXPECT_EQ(it->pc, tramp);
  EXPECT_EQ(it->cpu, 1u);
  EXPECT_EQ(it->decoded, "ud2"); // the poison
}

// Host memory is recycled between machines: a machine built after one whose trampoline was freed
// (poisoned and flagged) starts with clean text and flags. (The call to the trampoline is none of
// the site's allowed states: torn-fetch findings are expected and not looked at.)
TEST(TrampolineLifetime, AMachineBuiltAfterOneThatFreedATrampolineStartsClean) {
  for (bool freeIt : {true, false, false}) {
    X86Scenario s(4);
    MachineConfig c;
    c.cpus = 2;
    Machine m(x86(), c);
    s.install(m, {1});
    const std::uint64_t tramp = m.allocText(64, s.site);
    EXPECT_EQ(m.viewBytes(1, tramp, 2), (arch::Bytes{0x0f, 0x0b})); // poison: ud2
    m.pokeText(tramp, std::vector<std::uint8_t>{0xc3});             // ret
    m.pokeText(s.site, x86().call(s.site, tramp).bytes);
    if (freeIt)
      m.startPatcher([&](arch::MachinePort &port) { port.freeText(tramp, 64); });
    RoundRobinScheduler rr;
    EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
    auto findings = m.findings();
    const bool fetchedFreed = std::any_of(findings.begin(), findings.end(), [](const Finding &f) {
      return f.kind == FindingKind::TrampolineLifetime;
    });
    EXPECT_EQ(fetchedFreed, freeIt) << m.logText();
    if (!freeIt) {
      EXPECT_EQ(m.task(0).result, X86Scenario::expectedResult(0));
    }
  }
}

TEST(FastMode, SameResultsAndSiteFetchesStillObserved) {
  X86Scenario s(4);
  MachineConfig c;
  c.cpus = 3;
  c.quantum = 1000;
  c.storeModel = StoreModel::Line;
  Machine m(x86(), c);
  s.install(m, {0, 1, 2});
  m.startPatcher([&](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    port.syncCores();
  });
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  for (int t = 0; t < 3; ++t)
    EXPECT_EQ(m.task(t).result, X86Scenario::expectedResult(t));
  auto events = m.events();
  auto count = [&](auto pred) { return std::count_if(events.begin(), events.end(), pred); };
  EXPECT_GT(count([](const EventRecord &e) { return e.kind == EventKind::Run; }), 0);
  // Every call of schedule() reaches the site: 8 per task, each one a single-stepped fetch.
  EXPECT_EQ(count([&](const EventRecord &e) { return e.kind == EventKind::Step && e.fetchSize; }),
            3 * static_cast<long>(X86Scenario::kIterations));
}

// Text allocated and freed by a host handler that a guest CPU's event ran (no patcher) is that
// CPU's note, with its task, not the patcher's; the patcher's own notes stay on its CPU.
TEST(TrampolineLifetime, AllocAndFreeNotesNameTheCpuThatMadeThem) {
  X86Scenario s(4);
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  m.mapText(X86Scenario::kText, s.text);
  m.bindHypercall(GuestHypercall::Exit, X86Scenario::kHcExit);
  std::uint64_t mine = 0;
  m.setHypercall(X86Scenario::kHcSchedule, [&](arch::GuestContext &) {
    if (!mine) {
      mine = m.allocText(64, 0);
      m.freeText(mine, 64);
    }
  });
  m.addTask({"worker", 1, X86Scenario::kWorker, 0});
  m.startPatcher([](arch::MachinePort &port) { port.freeText(port.allocText(64, 0), 64); });
  RoundRobinScheduler rr;
  m.run(rr);
  ASSERT_NE(mine, 0u);
  unsigned guest = 0, patcher = 0;
  for (const EventRecord &e : m.events()) {
    if (e.kind != EventKind::Alloc && e.kind != EventKind::Free)
      continue;
    if (e.storeAddr == mine) {
      EXPECT_EQ(e.cpu, 1u);
      EXPECT_EQ(e.task, 0);
      ++guest;
    } else {
      EXPECT_EQ(e.cpu, 0u);
      EXPECT_EQ(e.task, -1);
      ++patcher;
    }
  }
  EXPECT_EQ(guest, 2u) << m.logText();
  EXPECT_EQ(patcher, 2u) << m.logText();
}

} // namespace
} // namespace ftsim::sim
