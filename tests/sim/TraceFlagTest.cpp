// x86 fast mode steps by the trace flag (GuestAbi::traceFlagReg): the machine sets EFLAGS.TF for a
// step and clears it for a run, so Unicorn translates one instruction per block for steps. The
// flag is the machine's: the guest never sees it (pushf, the registers a harness reads), a step is
// still one instruction when the guest rewrites the flags (popf), and a guest's own debug trap
// (int $1) is still a finding. Each case runs five ways: every instruction a step (Unicorn's
// count, no trace flag), fast mode with the code's line watched (steps by the trace flag, or by
// the count) and fast mode unwatched (runs by a hook before every instruction, or by blocks:
// BlockRunsTest.cpp).

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace ftsim::sim {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr std::uint64_t kHcExit = kText + 0x0c;
// flags(): pushfq; popfq; nop; nop; pushfq; pop %rax; ret — returns the flags it pushed.
constexpr std::uint64_t kFlags = kText + 0x40;
const Bytes kFlagsCode = {0x9c, 0x9d, 0x90, 0x90, 0x9c, 0x58, 0xc3};
// debugTrap(): int $1; ret (Unicorn 2.0.1 does not decode icebp).
constexpr std::uint64_t kDebugTrap = kText + 0x80;
// callOut(): call kOutside, past the end of the text.
constexpr std::uint64_t kCallOut = kText + 0xc0;
constexpr std::uint64_t kOutside = kText + 0x10000;
constexpr std::uint64_t kTf = 0x100, kIf = 0x200;

enum class Way { EveryInstruction, WatchedSteps, WatchedCountedSteps, Runs, RunsByBlocks };
constexpr Way kWays[] = {Way::EveryInstruction, Way::WatchedSteps, Way::WatchedCountedSteps,
                         Way::Runs, Way::RunsByBlocks};

std::unique_ptr<Machine> makeMachine(Way way, std::uint64_t entry) {
  MachineConfig c;
  c.cpus = 2; // two CPUs, so that the scheduler is asked
  c.quantum = way == Way::EveryInstruction ? 1 : 1000;
  c.traceFlagSteps = way == Way::WatchedSteps || way == Way::RunsByBlocks;
  auto machine = std::make_unique<Machine>(arch::archByName("x86_64"), c);
  Machine &m = *machine;
  Bytes text(0x1000, 0xcc);
  std::copy(kFlagsCode.begin(), kFlagsCode.end(), text.begin() + (kFlags - kText));
  text[kDebugTrap - kText] = 0xcd;
  text[kDebugTrap - kText + 1] = 0x01;
  text[kDebugTrap - kText + 2] = 0xc3;
  const auto rel = static_cast<std::uint32_t>(kOutside - (kCallOut + 5));
  const Bytes call = {0xe8, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
                      static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)};
  std::copy(call.begin(), call.end(), text.begin() + (kCallOut - kText));
  text[kHcExit - kText] = 0xcc;
  text[kHcExit - kText + 1] = 0xc3;
  m.mapText(kText, text);
  m.bindHypercall(GuestHypercall::Exit, kHcExit);
  if (way == Way::WatchedSteps || way == Way::WatchedCountedSteps) // a one-byte site in the
                                                                   // code's line (never fetched)
    m.watchSite(entry + 0x20, 1, {{0xcc}});
  m.addTask({"task0", 0, entry, 0});
  m.addTask({"task1", 1, entry, 0});
  return machine;
}

// The machine, run round robin to its end.
std::unique_ptr<Machine> runRoundRobin(Way way, std::uint64_t entry) {
  auto machine = makeMachine(way, entry);
  RoundRobinScheduler rr;
  machine->run(rr);
  return machine;
}

// The guest pushes the same flags every way, without the trace flag, and the machine's reads
// never show it.
TEST(TraceFlag, StepsAndRunsShowTheGuestTheSameFlags) {
  std::vector<std::uint64_t> results;
  for (Way way : kWays) {
    SCOPED_TRACE(static_cast<int>(way));
    auto machine = makeMachine(way, kFlags);
    Machine &m = *machine;
    RoundRobinScheduler rr;
    unsigned decisions = 0;
    FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
      for (unsigned cpu : {0u, 1u})
        EXPECT_EQ(mm.reg(cpu, UC_X86_REG_EFLAGS) & kTf, 0u) << "at " << std::hex << mm.pc(cpu);
      ++decisions;
      return rr.decide(mm, p);
    });
    ASSERT_EQ(m.run(sched).status, RunResult::Status::Completed) << m.logText();
    EXPECT_GT(decisions, 0u);
    EXPECT_TRUE(m.findings().empty()) << m.logText();
    EXPECT_EQ(m.reg(0, UC_X86_REG_EFLAGS) & kTf, 0u);
    EXPECT_EQ(m.task(1).result, m.task(0).result);
    const std::uint64_t flags = m.task(0).result;
    EXPECT_EQ(flags & kTf, 0u) << std::hex << flags;
    EXPECT_EQ(flags & kIf, kIf) << std::hex << flags;
    results.push_back(flags);
  }
  for (std::size_t i = 1; i < results.size(); ++i)
    EXPECT_EQ(results[0], results[i]) << i;
}

// popfq restores flags pushed during a step (the trace flag cleared in the word): the next steps
// are still one instruction each, at the addresses in order.
TEST(TraceFlag, AStepIsOneInstructionAfterThePopOfTheFlags) {
  auto machine = makeMachine(Way::WatchedSteps, kFlags);
  Machine &m = *machine;
  RoundRobinScheduler rr;
  ASSERT_EQ(m.run(rr).status, RunResult::Status::Completed) << m.logText();
  std::vector<std::uint64_t> pcs;
  for (const EventRecord &e : m.events())
    if (e.cpu == 0 && e.kind == EventKind::Step && e.pc >= kFlags &&
        e.pc < kFlags + kFlagsCode.size())
      pcs.push_back(e.pc - kFlags);
  EXPECT_EQ(pcs, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6}));
  for (const EventRecord &e : m.events()) {
    if (e.kind == EventKind::Step && e.pc >= kFlags && e.pc < kFlags + kFlagsCode.size() - 1) {
      EXPECT_EQ(e.pcAfter, e.pc + 1) << formatEvent(e);
    }
  }
}

// The guest's own debug trap is reported every way.
TEST(TraceFlag, TheGuestsOwnDebugTrapIsStillAFinding) {
  for (Way way : kWays) {
    auto machine = runRoundRobin(way, kDebugTrap);
    Machine &m = *machine;
    ASSERT_GE(m.findings().size(), 1u) << static_cast<int>(way) << "\n" << m.logText();
    EXPECT_EQ(m.findings()[0].kind, FindingKind::GuestFault);
    EXPECT_NE(m.findings()[0].message.find("unexpected interrupt 1"), std::string::npos)
        << m.findings()[0].message;
  }
}

// A call into text that cannot be fetched completes; the fetch fault is at its target, and when
// stepped it is the next step's, whether the step ends by the trace flag or by the count.
TEST(TraceFlag, ACallOutOfTextCompletesAndTheNextFetchFaults) {
  for (Way way : kWays) {
    auto machine = runRoundRobin(way, kCallOut);
    Machine &m = *machine;
    ASSERT_FALSE(m.findings().empty()) << static_cast<int>(way) << "\n" << m.logText();
    const Finding &f = m.findings()[0];
    EXPECT_EQ(f.kind, FindingKind::GuestFault);
    EXPECT_EQ(f.cpu, 0u);
    EXPECT_EQ(f.pc, kOutside) << std::hex << f.pc << "\n" << m.logText();
    if (way == Way::Runs || way == Way::RunsByBlocks)
      continue;
    const auto events = m.events();
    const auto call = std::find_if(events.begin(), events.end(), [](const EventRecord &e) {
      return e.cpu == 0 && e.kind == EventKind::Step && e.pc == kCallOut;
    });
    ASSERT_NE(call, events.end()) << m.logText();
    EXPECT_EQ(call->pcAfter, kOutside) << formatEvent(*call);
    EXPECT_GT(f.event, call->index) << m.logText();
  }
}

} // namespace
} // namespace ftsim::sim
