// Interrupt-off and non-preemptible regions: a task with preemption disabled (its preempt count,
// `incl %gs:0` / powerpc `lwz/addi/stw 0(r2)`) is never a preemption point, a task with interrupts
// off (cli / mtmsr without MSR[EE]) takes a pending IPI only once it turns them back on, idle tasks
// are not waited for by RCU-tasks but hold up schedule_on_each_cpu() until they schedule, and
// schedule() inside a region is a finding.

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace ftsim::sim {
namespace {

using Bytes = std::vector<std::uint8_t>;

// x86-64 text: hypercall stubs, then `region`: incl %gs:0; 4 nops; decl %gs:0; cli; 4 nops; sti;
// ret. `spin`: nop; jmp spin. `idleLoop`: nop; nop; call hc_idle; jmp idleLoop. `atomicSchedule`:
// incl %gs:0; call hc_schedule; decl %gs:0; ret.
struct X86Regions {
  static constexpr std::uint64_t kText = 0xffffffff81000000ull;
  static constexpr std::uint64_t kHcSchedule = kText + 0x00;
  static constexpr std::uint64_t kHcIdle = kText + 0x04;
  static constexpr std::uint64_t kHcExit = kText + 0x0c;
  static constexpr std::uint64_t kRegion = kText + 0x40;
  static constexpr std::uint64_t kIncEnd = kRegion + 8; // first instruction with count 1
  static constexpr std::uint64_t kDec = kIncEnd + 4;    // decl %gs:0
  static constexpr std::uint64_t kCli = kDec + 8;       // count 0 again
  static constexpr std::uint64_t kSti = kCli + 1 + 4;   // interrupts off from kCli+1 to here
  static constexpr std::uint64_t kStiEnd = kSti + 1;    // interrupts on again
  static constexpr std::uint64_t kSpin = kText + 0x80;  // jmp kSpin
  static constexpr std::uint64_t kIdleLoop = kText + 0xc0;
  static constexpr std::uint64_t kIdleCall = kIdleLoop + 2;
  static constexpr std::uint64_t kAtomicSchedule = kText + 0x100;

  Bytes text = Bytes(0x1000, 0xcc);

  X86Regions() {
    auto put = [&](std::uint64_t at, Bytes bytes) {
      std::copy(bytes.begin(), bytes.end(), text.begin() + (at - kText));
    };
    auto call = [&](std::uint64_t at, std::uint64_t to) {
      const auto r = static_cast<std::uint32_t>(to - (at + 5));
      put(at, {0xe8, static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(r >> 8),
               static_cast<std::uint8_t>(r >> 16), static_cast<std::uint8_t>(r >> 24)});
    };
    const Bytes incl = {0x65, 0xff, 0x04, 0x25, 0, 0, 0, 0};
    const Bytes decl = {0x65, 0xff, 0x0c, 0x25, 0, 0, 0, 0};
    for (std::uint64_t stub : {kHcSchedule, kHcIdle, kHcExit})
      put(stub, {0xcc, 0xc3});
    put(kRegion, incl);
    put(kIncEnd, {0x90, 0x90, 0x90, 0x90});
    put(kDec, decl);
    put(kCli, {0xfa, 0x90, 0x90, 0x90, 0x90, 0xfb, 0xc3});
    put(kSpin, {0x90, 0xeb, 0xfd}); // nop; jmp kSpin (a jump to itself makes no progress)
    put(kIdleLoop, {0x90, 0x90});
    call(kIdleCall, kHcIdle);
    put(kIdleCall + 5, {0xeb, static_cast<std::uint8_t>(kIdleLoop - (kIdleCall + 7))});
    put(kAtomicSchedule, incl);
    call(kAtomicSchedule + 8, kHcSchedule);
    put(kAtomicSchedule + 13, decl);
    put(kAtomicSchedule + 21, {0xc3});
  }

  void install(Machine &m) const {
    m.mapText(kText, text);
    m.bindHypercall(GuestHypercall::Schedule, kHcSchedule);
    m.bindHypercall(GuestHypercall::Idle, kHcIdle);
    m.bindHypercall(GuestHypercall::Exit, kHcExit);
  }
};

const arch::Arch &x86() { return arch::archByName("x86_64"); }

bool offers(const DecisionPoint &p, EventKind kind, unsigned cpu) {
  return std::any_of(p.events.begin(), p.events.end(),
                     [&](const EventChoice &e) { return e.kind == kind && e.cpu == cpu; });
}

std::uint32_t indexOf(const DecisionPoint &p, EventKind kind, unsigned cpu) {
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (p.events[i].kind == kind && p.events[i].cpu == cpu)
      return i;
  return p.options;
}

TEST(Regions, NoTimerPreemptionWhilePreemptionOrInterruptsAreDisabled) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"a", 1, X86Regions::kRegion, 0});
  m.addTask({"b", 1, X86Regions::kRegion, 0});
  // Preempt whenever a preemption is offered (at most 40 times), else round robin: both tasks go
  // through both regions many times interleaved, each with its own preempt count.
  std::set<std::uint64_t> offeredAt, refusedAt, takenAt;
  unsigned preemptions = 0;
  RoundRobinScheduler rr;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    EXPECT_LE(mm.preemptCount(1), 1u);
    if (mm.patcherState() == PatcherState::None && p.kind == DecisionKind::Event) {
      (offers(p, EventKind::Preempt, 1) ? offeredAt : refusedAt).insert(mm.pc(1));
      // Once per pc, so both tasks move on.
      if (offers(p, EventKind::Preempt, 1) && takenAt.insert(mm.pc(1)).second && ++preemptions)
        return indexOf(p, EventKind::Preempt, 1);
    }
    return rr.decide(mm, p);
  });
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed) << m.logText();
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(m.task(0).state, TaskState::Exited);
  EXPECT_EQ(m.task(1).state, TaskState::Exited);
  // Inside [kCli+1, kSti] interrupts are off: no timer interrupt at all. Inside [kIncEnd, kDec]
  // the count is 1: the timer interrupt is taken but returns to the same task.
  for (std::uint64_t pc = X86Regions::kCli + 1; pc <= X86Regions::kSti; ++pc)
    EXPECT_FALSE(offeredAt.count(pc)) << std::hex << pc;
  EXPECT_TRUE(offeredAt.count(X86Regions::kIncEnd));
  const auto events = m.events();
  unsigned regionSteps = 0, inRegion = 0, switches = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const EventRecord &e = events[i];
    regionSteps +=
        e.kind == EventKind::Step && (e.pc == X86Regions::kIncEnd || e.pc == X86Regions::kSti);
    if (e.kind != EventKind::Preempt)
      continue;
    const bool region = e.pc >= X86Regions::kIncEnd && e.pc <= X86Regions::kDec;
    EXPECT_EQ(e.detail, region ? 1u : 0u) << formatEvent(e);
    ASSERT_LT(i + 1, events.size());
    if (region) {
      ++inRegion;
      EXPECT_EQ(events[i + 1].task, e.task) << formatEvent(events[i + 1]); // same task resumes
    } else {
      ++switches;
      EXPECT_NE(events[i + 1].task, e.task) << formatEvent(events[i + 1]);
    }
  }
  EXPECT_EQ(regionSteps, 4u); // both tasks ran through both regions
  EXPECT_GT(inRegion, 0u);
  EXPECT_GT(switches, 0u);
  // Before the region, between the two and after them the task is preemptible.
  EXPECT_TRUE(offeredAt.count(X86Regions::kRegion));
  EXPECT_TRUE(offeredAt.count(X86Regions::kCli));
  EXPECT_TRUE(offeredAt.count(X86Regions::kStiEnd));
  // The log shows where the state changed.
  EXPECT_NE(m.logText().find("preempt_count=1 irqs=on"), std::string::npos);
  EXPECT_NE(m.logText().find("preempt_count=0 irqs=off"), std::string::npos);
}

// After a plain step (one instruction that did not trap, fault or serialise and changed no region
// state) the run loop offers the events it offered before; every decision must offer exactly the
// events computed afresh. A lone task per CPU (a timer interrupt is offered only inside its
// non-preemptible region), IPIs from a patcher that syncs twice, random choices.
TEST(Regions, EveryDecisionOffersTheEventsComputedAfresh) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 3;
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    Machine m(x86(), c);
    code.install(m);
    m.addTask({"a", 0, X86Regions::kRegion, 0});
    m.addTask({"b", 1, X86Regions::kRegion, 0});
    m.addTask({"c", 2, X86Regions::kAtomicSchedule, 0});
    m.startPatcher([](arch::MachinePort &port) {
      port.syncCores();
      port.syncCores();
    });
    std::uint32_t rng = seed;
    unsigned decisions = 0, preemptOffers = 0;
    FunctionScheduler sched([&](const Machine &, const DecisionPoint &p) -> std::uint32_t {
      if (p.kind == DecisionKind::Event) {
        ++decisions;
        const std::vector<EventChoice> fresh = m.enabledEvents();
        EXPECT_TRUE(std::equal(p.events.begin(), p.events.end(), fresh.begin(), fresh.end()))
            << "seed " << seed << ", decision " << decisions;
        preemptOffers += offers(p, EventKind::Preempt, 0) || offers(p, EventKind::Preempt, 1);
      }
      rng = rng * 1103515245u + 12345u;
      return (rng >> 16) % p.options;
    });
    m.run(sched, 400);
    EXPECT_GT(decisions, 20u) << m.logText();
    EXPECT_GT(preemptOffers, 0u) << m.logText(); // inside a region: count 1
  }
}

TEST(Regions, AnIpiWaitsUntilTheCpuTurnsInterruptsBackOn) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"a", 1, X86Regions::kRegion, 0});
  bool synced = false;
  m.startPatcher([&](arch::MachinePort &port) {
    port.syncCores();
    synced = true;
  });
  // Run cpu1 up to its sti; the IPI pending since the start is offered only outside cli..sti.
  std::set<std::uint64_t> ipiOfferedAt;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    if (offers(p, EventKind::Ipi, 1))
      ipiOfferedAt.insert(mm.pc(1));
    const std::uint64_t pc = mm.pc(1);
    if (pc <= X86Regions::kSti && offers(p, EventKind::Step, 1))
      return indexOf(p, EventKind::Step, 1);
    return offers(p, EventKind::Ipi, 1) ? indexOf(p, EventKind::Ipi, 1) : 0;
  });
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed) << m.logText();
  EXPECT_TRUE(synced);
  for (std::uint64_t pc = X86Regions::kCli + 1; pc <= X86Regions::kSti; ++pc)
    EXPECT_FALSE(ipiOfferedAt.count(pc)) << std::hex << pc;
  EXPECT_TRUE(ipiOfferedAt.count(X86Regions::kCli));
  std::uint64_t ipiPc = 0;
  for (const EventRecord &e : m.events())
    if (e.kind == EventKind::Ipi)
      ipiPc = e.pc;
  EXPECT_EQ(ipiPc, X86Regions::kStiEnd); // taken at the first boundary with interrupts on
}

TEST(Regions, APendingIpiIsNotOfferedWhileInterruptsAreOff) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"a", 1, X86Regions::kRegion, 0});
  m.startPatcher([](arch::MachinePort &port) { port.syncCores(); });
  // Up to its cli, cpu1 steps; after it, the IPI is not offered, so there is no decision at all.
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    if (mm.pc(1) <= X86Regions::kCli)
      return indexOf(p, EventKind::Step, 1);
    ADD_FAILURE() << "a decision with cpu1's interrupts off";
    return 0;
  });
  // Stop after cli: with interrupts off the only enabled event is cpu1's next step.
  m.run(sched, 7);
  EXPECT_FALSE(m.interruptsEnabled(1));
  EXPECT_EQ(m.patcherState(), PatcherState::WaitIpis);
}

TEST(Regions, RcuTasksDoesNotWaitForAnIdleTaskButScheduleOnEachCpuDoes) {
  for (bool rude : {false, true}) {
    X86Regions code;
    MachineConfig c;
    c.cpus = 2;
    Machine m(x86(), c);
    code.install(m);
    m.addTask({"swapper/1", 1, X86Regions::kIdleLoop, 0, true});
    EXPECT_TRUE(m.task(0).idle);
    EXPECT_EQ(m.preemptCount(1), 1u); // the idle loop runs with preemption disabled
    m.startPatcher([rude](arch::MachinePort &port) {
      if (rude)
        port.scheduleOnEachCpu();
      else
        port.synchronizeRcuTasks();
      port.publish("done", [] {});
    });
    RoundRobinScheduler rr;
    m.run(rr, 200);
    std::uint64_t publish = UINT64_MAX, idle = UINT64_MAX;
    for (const EventRecord &e : m.events()) {
      if (e.kind == EventKind::Publish && publish == UINT64_MAX)
        publish = e.index;
      if (e.outcome == StepOutcome::Idle && idle == UINT64_MAX)
        idle = e.index;
    }
    ASSERT_NE(publish, UINT64_MAX) << m.logText();
    ASSERT_NE(idle, UINT64_MAX);
    if (rude)
      EXPECT_GT(publish, idle); // the work item runs once the idle loop schedules
    else
      EXPECT_LT(publish, idle); // classic RCU-tasks ignores the idle task
  }
}

TEST(Regions, ANonIdleTaskHoldsRcuTasksAndAnIdleTaskIsNeverPreempted) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"spinner", 1, X86Regions::kSpin, 0});
  m.addTask({"swapper/1", 1, X86Regions::kIdleLoop, 0, true});
  m.startPatcher([](arch::MachinePort &port) {
    port.synchronizeRcuTasks();
    port.publish("done", [] {});
  });
  // Take every timer interrupt (at most 100): the spinner is preempted, the idle task is only
  // interrupted (it has preemption disabled), so it never loses its CPU that way.
  unsigned interrupts = 0;
  FunctionScheduler sched([&](const Machine &, const DecisionPoint &p) -> std::uint32_t {
    const std::uint32_t i = indexOf(p, EventKind::Preempt, 1);
    return i < p.options && interrupts++ < 100 ? i : 0;
  });
  m.run(sched, 300);
  unsigned preemptedSpinner = 0, interruptedIdle = 0, preemptedIdle = 0;
  for (const EventRecord &e : m.events())
    if (e.kind == EventKind::Preempt) {
      if (e.task == 0)
        ++preemptedSpinner;
      else
        ++(e.detail ? interruptedIdle : preemptedIdle);
    }
  EXPECT_GT(preemptedSpinner, 0u);
  EXPECT_GT(interruptedIdle, 0u);
  EXPECT_EQ(preemptedIdle, 0u);
  // The spinner never schedules voluntarily: the grace period never ends.
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(m.patcherState(), PatcherState::WaitRcuTasks);
}

TEST(Regions, ScheduleInsideANonPreemptibleRegionIsAFinding) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"a", 1, X86Regions::kAtomicSchedule, 0});
  RoundRobinScheduler rr;
  m.run(rr);
  ASSERT_EQ(m.findings().size(), 1u) << m.logText();
  EXPECT_EQ(m.findings()[0].kind, FindingKind::GuestFault);
  EXPECT_NE(m.findings()[0].message.find("scheduling while atomic: preempt_count 1"),
            std::string::npos);
  EXPECT_EQ(m.task(0).state, TaskState::Faulted);
}

TEST(Regions, SnapshotsRestoreTheRegionState) {
  X86Regions code;
  MachineConfig c;
  c.cpus = 2;
  Machine m(x86(), c);
  code.install(m);
  m.addTask({"a", 1, X86Regions::kRegion, 0});
  const Snapshot start = m.snapshot();
  RoundRobinScheduler rr;
  m.run(rr, 2); // incl, then one nop: inside the region
  EXPECT_EQ(m.preemptCount(1), 1u);
  const std::string first = m.logText();
  m.restore(start);
  EXPECT_EQ(m.preemptCount(1), 0u);
  m.run(rr, 2);
  EXPECT_EQ(m.preemptCount(1), 1u);
  EXPECT_EQ(m.logText(), first);
}

// powerpc: MSR[EE] cleared with mfmsr/rlwinm/mtmsr, the preempt count in the word r2 points at.
TEST(Regions, Ppc32InterruptEnableAndPreemptCountAreGuestVisible) {
  constexpr std::uint64_t kText = 0xc0000000;
  constexpr std::uint64_t kHcExit = kText;
  constexpr std::uint64_t kEntry = kText + 0x40;
  Bytes text(0x100, 0);
  auto put = [&](std::uint64_t at, std::vector<std::uint32_t> words) {
    for (std::uint32_t w : words) {
      for (unsigned i = 0; i < 4; ++i)
        text[at - kText + i] = static_cast<std::uint8_t>(w >> (24 - 8 * i));
      at += 4;
    }
  };
  put(kHcExit, {0x7fe00008, 0x4e800020}); // tw 31,0,0; blr
  put(kEntry, {
                  0x81220000, // lwz r9,0(r2)      preempt_disable()
                  0x39290001, // addi r9,r9,1
                  0x91220000, // stw r9,0(r2)
                  0x7d4000a6, // mfmsr r10         local_irq_disable()
                  0x554a045e, // rlwinm r10,r10,0,17,15 (clear MSR[EE])
                  0x7d400124, // mtmsr r10
                  0x614a8000, // ori r10,r10,0x8000 local_irq_enable()
                  0x7d400124, // mtmsr r10
                  0x3929ffff, // addi r9,r9,-1     preempt_enable()
                  0x91220000, // stw r9,0(r2)
                  0x4e800020, // blr
              });
  Machine m(arch::archByName("ppc32"), {});
  m.mapText(kText, text);
  m.bindHypercall(GuestHypercall::Exit, kHcExit);
  m.addTask({"t", 1, kEntry, 0});
  EXPECT_TRUE(m.interruptsEnabled(1));
  std::vector<std::pair<std::uint32_t, bool>> seen;
  RoundRobinScheduler rr;
  FunctionScheduler sched(
      [&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t { return rr.decide(mm, p); });
  for (int i = 0; i < 10; ++i) {
    m.run(sched, 1);
    seen.push_back({m.preemptCount(1), m.interruptsEnabled(1)});
  }
  const std::vector<std::pair<std::uint32_t, bool>> expected = {
      {0, true},  {0, true},  {1, true}, {1, true}, {1, true},
      {1, false}, {1, false}, {1, true}, {1, true}, {0, true}};
  EXPECT_EQ(seen, expected);
  m.run(sched);
  EXPECT_EQ(m.task(0).state, TaskState::Exited) << m.logText();
}

} // namespace
} // namespace ftsim::sim
