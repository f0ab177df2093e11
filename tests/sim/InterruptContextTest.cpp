// Interrupt context: with a timer handler set, a timer interrupt (`Irq`) runs guest code on top of
// the task — the handler's call to a traced function fetches its patch site like any call — with
// interrupts off, so nothing preempts or interrupts it; the task then resumes where it was with
// every register as it left it, also when it was interrupted inside a non-preemptible region.

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ftsim::sim {
namespace {

using Bytes = std::vector<std::uint8_t>;

// x86-64 text: hypercall stubs; `task`: mov $0x1111,%rbx; mov $0x2222,%r12; incl %gs:0; 4 nops;
// decl %gs:0; 4 nops; mov %rbx,%rax; add %r12,%rax; ret (result 0x3333). `handler`: mov
// $0xdead,%rbx; mov $0xbeef,%r12; call traced; ret. `traced`: a 5-byte nop (the watched site);
// ret.
struct X86Irq {
  static constexpr std::uint64_t kText = 0xffffffff81000000ull;
  static constexpr std::uint64_t kHcSchedule = kText + 0x00;
  static constexpr std::uint64_t kHcExit = kText + 0x04;
  static constexpr std::uint64_t kHcIrqReturn = kText + 0x08;
  static constexpr std::uint64_t kTask = kText + 0x40;
  static constexpr std::uint64_t kIncl = kTask + 14;
  static constexpr std::uint64_t kInRegion = kIncl + 8; // count 1 from here to kDecl
  static constexpr std::uint64_t kDecl = kInRegion + 4;
  static constexpr std::uint64_t kAfter = kDecl + 8; // count 0 again
  static constexpr std::uint64_t kHandler = kText + 0x80;
  static constexpr std::uint64_t kTraced = kText + 0xc0;

  Bytes text = Bytes(0x1000, 0xcc);

  X86Irq() {
    auto put = [&](std::uint64_t at, Bytes bytes) {
      std::copy(bytes.begin(), bytes.end(), text.begin() + (at - kText));
    };
    for (std::uint64_t stub : {kHcSchedule, kHcExit, kHcIrqReturn})
      put(stub, {0xcc, 0xc3});
    put(kTask, {0x48, 0xc7, 0xc3, 0x11, 0x11, 0, 0, 0x49, 0xc7, 0xc4, 0x22, 0x22, 0, 0});
    put(kIncl, {0x65, 0xff, 0x04, 0x25, 0, 0, 0, 0});
    put(kInRegion, {0x90, 0x90, 0x90, 0x90});
    put(kDecl, {0x65, 0xff, 0x0c, 0x25, 0, 0, 0, 0});
    put(kAfter, {0x90, 0x90, 0x90, 0x90, 0x48, 0x89, 0xd8, 0x4c, 0x01, 0xe0, 0xc3});
    put(kHandler, {0x48, 0xc7, 0xc3, 0xad, 0xde, 0, 0, 0x49, 0xc7, 0xc4, 0xef, 0xbe, 0, 0});
    const auto rel = static_cast<std::uint32_t>(kTraced - (kHandler + 14 + 5));
    put(kHandler + 14,
        {0xe8, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
         static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24), 0xc3});
    put(kTraced, {0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3});
  }

  void install(Machine &m, bool handler = true) const {
    m.mapText(kText, text);
    m.bindHypercall(GuestHypercall::Schedule, kHcSchedule);
    m.bindHypercall(GuestHypercall::Exit, kHcExit);
    m.bindHypercall(GuestHypercall::IrqReturn, kHcIrqReturn);
    m.watchSite(kTraced, 5);
    if (handler)
      m.setTimerHandler(kHandler);
  }
};

const arch::Arch &x86() { return arch::archByName("x86_64"); }

std::uint32_t indexOf(const DecisionPoint &p, EventKind kind, unsigned cpu) {
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (p.events[i].kind == kind && p.events[i].cpu == cpu)
      return i;
  return p.options;
}

bool offers(const DecisionPoint &p, EventKind kind, unsigned cpu) {
  return indexOf(p, kind, cpu) < p.options;
}

MachineConfig preemptive() {
  MachineConfig c;
  c.cpus = 2;
  c.preemption = true;
  return c;
}

// Takes cpu1's timer interrupt once, when cpu1 is at `at`; otherwise round robin without any
// timer interrupt. Checks at every decision that a CPU in its handler is offered no interrupt.
struct InterruptOnce {
  explicit InterruptOnce(std::uint64_t pc) : at(pc) {}
  std::uint64_t at;
  bool taken = false;
  unsigned decisionsInHandler = 0;
  RoundRobinScheduler rr;

  std::uint32_t decide(const Machine &m, const DecisionPoint &p) {
    if (p.kind != DecisionKind::Event)
      return rr.decide(m, p);
    if (m.inInterrupt(1)) {
      ++decisionsInHandler;
      EXPECT_FALSE(m.interruptsEnabled(1));
      EXPECT_FALSE(offers(p, EventKind::Preempt, 1) || offers(p, EventKind::Irq, 1) ||
                   offers(p, EventKind::Ipi, 1))
          << "an interrupt offered inside the handler at " << std::hex << m.pc(1);
    }
    if (!taken && m.pc(1) == at && offers(p, EventKind::Irq, 1)) {
      taken = true;
      return indexOf(p, EventKind::Irq, 1);
    }
    std::uint32_t pick = rr.decide(m, p);
    while (p.events[pick].kind == EventKind::Preempt || p.events[pick].kind == EventKind::Irq)
      pick = (pick + 1) % p.options;
    return pick;
  }
};

TEST(InterruptContext, TheHandlerRunsOnTopOfTheTaskAndItsTracedCallFetchesTheSite) {
  for (std::uint64_t at : {X86Irq::kTask, X86Irq::kInRegion, X86Irq::kAfter}) {
    X86Irq code;
    Machine m(x86(), preemptive());
    code.install(m);
    m.addTask({"a", 1, X86Irq::kTask, 0});
    m.addTask({"b", 1, X86Irq::kTask, 0});
    // A patcher that keeps its CPU busy, so that cpu1's events interleave with another actor's.
    m.startPatcher([](arch::MachinePort &port) {
      for (int i = 0; i < 40; ++i)
        port.publish("tick", [] {});
    });
    InterruptOnce once(at);
    FunctionScheduler sched(
        [&](const Machine &mm, const DecisionPoint &p) { return once.decide(mm, p); });
    EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed) << m.logText();
    ASSERT_TRUE(once.taken) << std::hex << at;
    EXPECT_GT(once.decisionsInHandler, 0u); // the patcher ran while cpu1 was in the handler
    EXPECT_TRUE(m.findings().empty()) << m.logText();
    const auto events = m.events();
    const auto irq = std::find_if(events.begin(), events.end(),
                                  [](const EventRecord &e) { return e.kind == EventKind::Irq; });
    ASSERT_NE(irq, events.end());
    EXPECT_EQ(irq->pc, at);
    EXPECT_EQ(irq->detail, X86Irq::kHandler);
    EXPECT_TRUE(irq->regionChange && irq->irqsOff) << formatEvent(*irq);
    // The handler's call fetched the traced function's site, on the interrupted task, and the
    // interrupt returned to where the task was.
    const auto site = std::find_if(irq, events.end(), [](const EventRecord &e) {
      return e.fetchAddr == X86Irq::kTraced && e.fetchSize == 5;
    });
    ASSERT_NE(site, events.end()) << m.logText();
    EXPECT_EQ(site->task, irq->task);
    const auto ret = std::find_if(site, events.end(), [](const EventRecord &e) {
      return e.outcome == StepOutcome::IrqReturn;
    });
    ASSERT_NE(ret, events.end()) << m.logText();
    EXPECT_EQ(ret->task, irq->task);
    EXPECT_EQ(ret->detail, at);
    EXPECT_FALSE(ret->irqsOff);
    EXPECT_NE(m.logText().find("irq-return(0x"), std::string::npos);
    // Both tasks' registers survived: the handler's 0xdead and 0xbeef did not leak.
    EXPECT_EQ(m.task(0).state, TaskState::Exited);
    EXPECT_EQ(m.task(0).result, 0x3333u);
    EXPECT_EQ(m.task(1).result, 0x3333u);
  }
}

TEST(InterruptContext, InsideANonPreemptibleRegionTheInterruptReturnsToTheSameTask) {
  X86Irq code;
  Machine m(x86(), preemptive());
  code.install(m);
  m.addTask({"a", 1, X86Irq::kTask, 0});
  m.addTask({"b", 1, X86Irq::kTask, 0});
  InterruptOnce once(X86Irq::kInRegion);
  FunctionScheduler sched(
      [&](const Machine &mm, const DecisionPoint &p) { return once.decide(mm, p); });
  m.run(sched);
  ASSERT_TRUE(once.taken);
  // From the interrupt to the task's decl, every cpu1 event is the interrupted task's.
  const auto events = m.events();
  const auto irq = std::find_if(events.begin(), events.end(),
                                [](const EventRecord &e) { return e.kind == EventKind::Irq; });
  ASSERT_NE(irq, events.end());
  bool decl = false;
  for (auto e = irq; e != events.end() && !decl; ++e) {
    if (e->cpu != 1)
      continue;
    EXPECT_EQ(e->task, irq->task) << formatEvent(*e);
    EXPECT_NE(e->kind, EventKind::Preempt);
    decl = e->pc == X86Irq::kDecl;
  }
  EXPECT_TRUE(decl);
  EXPECT_EQ(m.task(0).result, 0x3333u);
}

TEST(InterruptContext, WithoutAHandlerNoTimerInterruptRunsGuestCode) {
  X86Irq code;
  Machine m(x86(), preemptive());
  code.install(m, false);
  m.addTask({"a", 1, X86Irq::kTask, 0});
  m.addTask({"b", 1, X86Irq::kTask, 0});
  bool preemptOffered = false;
  RoundRobinScheduler rr;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) {
    EXPECT_FALSE(offers(p, EventKind::Irq, 1));
    preemptOffered = preemptOffered || offers(p, EventKind::Preempt, 1);
    return rr.decide(mm, p);
  });
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed);
  EXPECT_TRUE(preemptOffered);
  EXPECT_FALSE(m.inInterrupt(1));
}

TEST(InterruptContext, ScheduleInsideTheHandlerIsSchedulingWhileAtomic) {
  X86Irq code;
  // The handler calls schedule() instead of the traced function.
  const auto rel = static_cast<std::uint32_t>(X86Irq::kHcSchedule - (X86Irq::kHandler + 14 + 5));
  std::copy_n(Bytes{0xe8, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
                    static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)}
                  .begin(),
              5, code.text.begin() + (X86Irq::kHandler + 14 - X86Irq::kText));
  Machine m(x86(), preemptive());
  code.install(m);
  m.addTask({"a", 1, X86Irq::kTask, 0});
  m.addTask({"b", 1, X86Irq::kTask, 0});
  InterruptOnce once(X86Irq::kAfter);
  FunctionScheduler sched(
      [&](const Machine &mm, const DecisionPoint &p) { return once.decide(mm, p); });
  m.run(sched);
  ASSERT_TRUE(once.taken);
  ASSERT_EQ(m.findings().size(), 1u) << m.logText();
  EXPECT_NE(m.findings()[0].message.find("scheduling while atomic"), std::string::npos)
      << m.findings()[0].message;
  EXPECT_NE(m.findings()[0].message.find("interrupts off"), std::string::npos);
}

} // namespace
} // namespace ftsim::sim
