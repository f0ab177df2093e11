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

#include "StepWays.h"

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

std::unique_ptr<Machine> makeMachine(Way way, std::uint64_t entry) {
  auto machine = std::make_unique<Machine>(arch::archByName("x86_64"), configFor(way));
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
  loadTwoTasks(m, way, kText, text, kHcExit, entry, 0, entry + 0x20, {0xcc});
  return machine;
}

// The machine, run round robin to its end.
std::unique_ptr<Machine> runRoundRobin(Way way, std::uint64_t entry) {
  return ranRoundRobin(makeMachine(way, entry));
}

// The guest pushes the same flags every way, without the trace flag, and the machine's reads
// never show it.
TEST(TraceFlag, StepsAndRunsShowTheGuestTheSameFlags) {
  std::vector<std::uint64_t> results;
  for (Way way : kWays) {
    SCOPED_TRACE(static_cast<int>(way));
    auto machine = makeMachine(way, kFlags);
    Machine &m = *machine;
    const std::uint64_t flags = runHidingTheTraceFlag(m, {UC_X86_REG_EFLAGS}, kTf);
    EXPECT_EQ(m.reg(0, UC_X86_REG_EFLAGS) & kTf, 0u);
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
  std::vector<std::pair<std::uint64_t, std::uint64_t>> expected;
  for (std::uint64_t at = 0; at + 1 < kFlagsCode.size(); ++at)
    expected.emplace_back(at, kFlags + at + 1);
  expected.emplace_back(kFlagsCode.size() - 1, kHcExit); // ret
  EXPECT_EQ(stepsIn(*machine, kFlags, kFlags + kFlagsCode.size()), expected);
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
  for (Way way : kWays)
    expectFetchFaultAfter(*runRoundRobin(way, kCallOut), way, kCallOut, kOutside);
}

} // namespace
} // namespace ftsim::sim
