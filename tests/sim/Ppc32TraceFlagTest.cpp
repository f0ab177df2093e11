// powerpc fast mode steps by MSR[SE] (GuestAbi::traceFlagReg), as x86 does by EFLAGS.TF
// (TraceFlagTest.cpp): Unicorn translates one instruction per block for steps, raises its trace
// interrupt after it and leaves the pc one instruction further on, which the machine's calibration
// measured and takes back. The bit is the machine's: `mfmsr` never shows it, a step after a
// `mtmsr` that cleared it is still one instruction, branches and calls end where they go, the
// guest's own trap is still a finding and a branch out of text faults at its target. Each case
// runs five ways and compares what a user sees: every instruction a step (Unicorn's count),
// fast mode with the code's line watched (steps by the trace flag, or by the count) and fast mode
// unwatched (runs by a hook before every instruction, or by blocks).

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "StepWays.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace ftsim::sim {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kText = 0xc0000000;
constexpr std::uint64_t kHcExit = kText;
// msr(): mfmsr r4; ori r4,r4,0x8000 (EE on); mtmsr r4; addi r3,r3,1; rlwinm r4,r4,0,17,15 (EE
// off); mtmsr r4; addi r3,r3,1; mfmsr r3; blr — returns the MSR it read last.
constexpr std::uint64_t kMsr = kText + 0x40;
const std::vector<std::uint32_t> kMsrCode = {0x7c8000a6, 0x60848000, 0x7c800124,
                                             0x38630001, 0x5484045e, 0x7c800124,
                                             0x38630001, 0x7c6000a6, 0x4e800020};
// calls(): mflr r0; bl f; addi r3,r3,2; mtlr r0; blr; f: addi r3,r3,1; blr.
constexpr std::uint64_t kCalls = kText + 0x80;
const std::vector<std::uint32_t> kCallsCode = {0x7c0802a6, 0x48000011, 0x38630002, 0x7c0803a6,
                                               0x4e800020, 0x38630001, 0x4e800020};
constexpr std::uint64_t kF = kCalls + 0x14;
// trap(): addi r3,r3,1; tw 31,0,0; blr.
constexpr std::uint64_t kTrap = kText + 0xc0;
// out(): b to kOutside, past the end of the text.
constexpr std::uint64_t kOut = kText + 0x100;
constexpr std::uint64_t kOutside = kText + 0x10000;
// loop(): mflr r0; li r4,50; mtctr r4; 1: addi r3,r3,1; bl g; bdnz 1b; mtlr r0; blr. g(), in a
// line of its own: addi r5,r5,1; blr.
constexpr std::uint64_t kLoop = kText + 0x140;
const std::vector<std::uint32_t> kLoopCode = {0x7c0802a6, 0x38800032, 0x7c8903a6, 0x38630001,
                                              0x48000031, 0x4200fff8, 0x7c0803a6, 0x4e800020};
constexpr std::uint64_t kG = kText + 0x180;
constexpr std::uint64_t kSe = 0x400, kEe = 0x8000;

void putWords(Bytes &text, std::uint64_t at, const std::vector<std::uint32_t> &words) {
  for (std::uint32_t w : words) {
    for (int i = 0; i < 4; ++i)
      text[at - kText + static_cast<std::uint64_t>(i)] =
          static_cast<std::uint8_t>(w >> (24 - 8 * i));
    at += 4;
  }
}

// `watched`: the line whose last word is a site (never fetched) in the watched ways; 0: entry's.
std::unique_ptr<Machine> makeMachine(Way way, std::uint64_t entry, unsigned quantum = 1000,
                                     std::uint64_t watched = 0) {
  auto machine = std::make_unique<Machine>(arch::archByName("ppc32"), configFor(way, quantum));
  Machine &m = *machine;
  Bytes text(0x1000, 0);
  putWords(text, kHcExit, {0x7fe00008, 0x4e800020}); // tw 31,0,0; blr
  putWords(text, kMsr, kMsrCode);
  putWords(text, kCalls, kCallsCode);
  putWords(text, kTrap, {0x38630001, 0x7fe00008, 0x4e800020});
  putWords(text, kOut, {0x48000000u | static_cast<std::uint32_t>(kOutside - kOut)});
  putWords(text, kLoop, kLoopCode);
  putWords(text, kG, {0x38a50001, 0x4e800020});
  loadTwoTasks(m, way, kText, text, kHcExit, entry, 10, (watched ? watched : entry) + 0x3c,
               {0, 0, 0, 0});
  return machine;
}

std::unique_ptr<Machine> runRoundRobin(Way way, std::uint64_t entry) {
  return ranRoundRobin(makeMachine(way, entry));
}

TEST(Ppc32TraceFlag, TheMachineStepsByTheTraceFlagWhereAsked) {
  EXPECT_TRUE(makeMachine(Way::WatchedSteps, kMsr)->stepsByTraceFlag());
  EXPECT_TRUE(makeMachine(Way::RunsByBlocks, kMsr)->stepsByTraceFlag());
  EXPECT_FALSE(makeMachine(Way::WatchedCountedSteps, kMsr)->stepsByTraceFlag());
  EXPECT_FALSE(makeMachine(Way::EveryInstruction, kMsr)->stepsByTraceFlag());
}

// mfmsr reads the same MSR every way, without MSR[SE], and no register the machine reads shows it.
TEST(Ppc32TraceFlag, StepsAndRunsShowTheGuestTheSameMsr) {
  std::vector<std::uint64_t> results;
  for (Way way : kWays) {
    SCOPED_TRACE(static_cast<int>(way));
    auto machine = makeMachine(way, kMsr);
    const std::uint64_t msr =
        runHidingTheTraceFlag(*machine, {UC_PPC_REG_MSR, UC_PPC_REG_3, UC_PPC_REG_4}, kSe);
    EXPECT_EQ(msr & kSe, 0u) << std::hex << msr;
    EXPECT_EQ(msr & kEe, 0u) << std::hex << msr;
    results.push_back(msr);
  }
  for (std::size_t i = 1; i < results.size(); ++i)
    EXPECT_EQ(results[0], results[i]) << i;
}

// Each step is one instruction, at the addresses in order, the mtmsr that cleared MSR[SE]
// included: the pc after each is the next instruction's.
TEST(Ppc32TraceFlag, AStepIsOneInstructionAfterAnMtmsr) {
  auto machine = makeMachine(Way::WatchedSteps, kMsr);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> expected;
  for (std::uint64_t at = 0; at + 4 < 4 * kMsrCode.size(); at += 4)
    expected.emplace_back(at, kMsr + at + 4);
  expected.emplace_back(4 * kMsrCode.size() - 4, kHcExit); // blr
  EXPECT_EQ(stepsIn(*machine, kMsr, kMsr + 4 * kMsrCode.size()), expected);
  EXPECT_EQ(machine->task(0).result & kSe, 0u);
}

// Runs by blocks end where runs by a hook before every instruction end (after their budget,
// before a watched instruction), and steps by the trace flag where steps by the count end: a loop
// calling a function in a watched line, with a quantum of 7, gives the same events both ways.
TEST(Ppc32TraceFlag, RunsAndStepsEndWhereTheCountWouldEndThem) {
  auto events = [](Way way) { // the watched ways watch g's line
    auto machine = makeMachine(way, kLoop, 7, kG);
    Machine &m = *machine;
    RoundRobinScheduler rr;
    EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed) << m.logText();
    EXPECT_EQ(m.task(0).result, 60u);
    std::vector<std::string> out;
    for (const EventRecord &e : m.events())
      out.push_back(formatEvent(e));
    return out;
  };
  const auto runs = events(Way::Runs);
  EXPECT_GT(runs.size(), 40u);
  EXPECT_EQ(events(Way::RunsByBlocks), runs);
  const auto counted = events(Way::WatchedCountedSteps);
  EXPECT_GT(std::count_if(counted.begin(), counted.end(),
                          [](const std::string &e) { return e.find("step") != std::string::npos; }),
            100);
  EXPECT_EQ(events(Way::WatchedSteps), counted);
}

// A call, its return and the function's own return end where they go, and the results agree.
TEST(Ppc32TraceFlag, BranchesEndWhereTheyGo) {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {0x00, kCalls + 0x04}, {0x04, kF},
      {0x14, kF + 4},        {0x18, kCalls + 0x08},
      {0x08, kCalls + 0x0c}, {0x0c, kCalls + 0x10},
      {0x10, kHcExit}};
  for (Way way : kWays) {
    SCOPED_TRACE(static_cast<int>(way));
    auto machine = makeMachine(way, kCalls);
    Machine &m = *machine;
    const auto steps = stepsIn(m, kCalls, kCalls + 0x1c);
    EXPECT_TRUE(m.findings().empty()) << m.logText();
    EXPECT_EQ(m.task(0).result, 13u);
    EXPECT_EQ(m.task(1).result, 13u);
    if (way == Way::WatchedSteps || way == Way::EveryInstruction) {
      EXPECT_EQ(steps, expected) << m.logText();
    }
  }
}

// The guest's own trap is an interrupt of its own every way: unowned, a finding at the trap.
TEST(Ppc32TraceFlag, TheGuestsOwnTrapIsStillAFinding) {
  for (Way way : kWays) {
    auto machine = runRoundRobin(way, kTrap);
    Machine &m = *machine;
    ASSERT_GE(m.findings().size(), 1u) << static_cast<int>(way) << "\n" << m.logText();
    EXPECT_EQ(m.findings()[0].kind, FindingKind::GuestFault);
    EXPECT_EQ(m.findings()[0].pc, kTrap + 4) << static_cast<int>(way);
  }
}

// A branch into text that cannot be fetched completes; the fetch faults at its target, the next
// step's when stepped.
TEST(Ppc32TraceFlag, ABranchOutOfTextCompletesAndTheNextFetchFaults) {
  for (Way way : kWays)
    expectFetchFaultAfter(*runRoundRobin(way, kOut), way, kOut, kOutside);
}

} // namespace
} // namespace ftsim::sim
