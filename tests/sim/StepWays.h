#pragma once
// The five ways the trace-flag tests run the same guest code (TraceFlagTest.cpp for x86,
// Ppc32TraceFlagTest.cpp for powerpc): every instruction a step (Unicorn's count), fast mode with
// the code's line watched (steps by the trace flag, or by the count) and fast mode unwatched (runs
// by a hook before every instruction, or by blocks).

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace ftsim::sim {

enum class Way { EveryInstruction, WatchedSteps, WatchedCountedSteps, Runs, RunsByBlocks };
inline constexpr Way kWays[] = {Way::EveryInstruction, Way::WatchedSteps, Way::WatchedCountedSteps,
                                Way::Runs, Way::RunsByBlocks};

// Two CPUs, so that the scheduler is asked; the quantum and trace-flag steps of `way`.
inline MachineConfig configFor(Way way, unsigned quantum = 1000) {
  MachineConfig c;
  c.cpus = 2;
  c.quantum = way == Way::EveryInstruction ? 1 : quantum;
  c.traceFlagSteps = way == Way::WatchedSteps || way == Way::RunsByBlocks;
  return c;
}

// Whether `way` watches the code's line (a site the code never fetches).
inline bool watches(Way way) { return way == Way::WatchedSteps || way == Way::WatchedCountedSteps; }

// Maps `text` at `base`, its exit stub at `exit`, and adds two tasks from `entry` with argument
// `arg`; in the watched ways a site at `siteAt` holding `site` (bytes the code never fetches).
inline void loadTwoTasks(Machine &m, Way way, std::uint64_t base,
                         const std::vector<std::uint8_t> &text, std::uint64_t exit,
                         std::uint64_t entry, std::uint64_t arg, std::uint64_t siteAt,
                         const std::vector<std::uint8_t> &site) {
  m.mapText(base, text);
  m.bindHypercall(GuestHypercall::Exit, exit);
  if (watches(way))
    m.watchSite(siteAt, site.size(), {site});
  m.addTask({"task0", 0, entry, arg});
  m.addTask({"task1", 1, entry, arg});
}

// `m`, run round robin to its end.
inline std::unique_ptr<Machine> ranRoundRobin(std::unique_ptr<Machine> m) {
  RoundRobinScheduler rr;
  m->run(rr);
  return m;
}

// Runs `m` round robin to its end, checking at every decision that none of `regs` shows the trace
// flag's `bit` on either CPU; both tasks run the same code, without a finding. Task 0's result.
inline std::uint64_t runHidingTheTraceFlag(Machine &m, std::initializer_list<int> regs,
                                           std::uint64_t bit) {
  RoundRobinScheduler rr;
  unsigned decisions = 0;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    for (unsigned cpu : {0u, 1u})
      for (int reg : regs)
        EXPECT_EQ(mm.reg(cpu, reg) & bit, 0u) << "at " << std::hex << mm.pc(cpu);
    ++decisions;
    return rr.decide(mm, p);
  });
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed) << m.logText();
  EXPECT_GT(decisions, 0u);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(m.task(1).result, m.task(0).result);
  return m.task(0).result;
}

// Runs `m` round robin to its end; CPU 0's steps at pcs in [lo, hi), each as its pc's offset from
// `lo` and the pc after it.
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> stepsIn(Machine &m, std::uint64_t lo,
                                                                    std::uint64_t hi) {
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed) << m.logText();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> steps;
  for (const EventRecord &e : m.events())
    if (e.cpu == 0 && e.kind == EventKind::Step && e.pc >= lo && e.pc < hi)
      steps.emplace_back(e.pc - lo, e.pcAfter);
  return steps;
}

// A jump, call or branch at `from` on CPU 0 into text that cannot be fetched completed: the first
// finding is the fetch fault at `target`, and where the machine stepped it, the step ended at
// `target` and the fault is a later event's.
inline void expectFetchFaultAfter(const Machine &m, Way way, std::uint64_t from,
                                  std::uint64_t target) {
  ASSERT_FALSE(m.findings().empty()) << static_cast<int>(way) << "\n" << m.logText();
  const Finding &f = m.findings()[0];
  EXPECT_EQ(f.kind, FindingKind::GuestFault);
  EXPECT_EQ(f.cpu, 0u);
  EXPECT_EQ(f.pc, target) << std::hex << f.pc << "\n" << m.logText();
  if (way == Way::Runs || way == Way::RunsByBlocks)
    return;
  const auto events = m.events();
  const auto step = std::find_if(events.begin(), events.end(), [&](const EventRecord &e) {
    return e.cpu == 0 && e.kind == EventKind::Step && e.pc == from;
  });
  ASSERT_NE(step, events.end()) << m.logText();
  EXPECT_EQ(step->pcAfter, target) << formatEvent(*step);
  EXPECT_GT(f.event, step->index) << m.logText();
}

} // namespace ftsim::sim
