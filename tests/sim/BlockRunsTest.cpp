// Runs by blocks (sim/BlockRuns.cpp): x86 fast mode stepping by the trace flag runs unwatched code
// with a hook before each translated block instead of one before each instruction. A run must end
// where the hook before every instruction ends it: after exactly its budget of instructions,
// before the first instruction that needs a step, right after a watched data access. Each case
// runs the same machine both ways (MachineConfig::traceFlagSteps) and compares what a user sees:
// the events, and the registers at every scheduling decision.

#include "ftsim/arch/Error.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace ftsim::sim {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr std::uint64_t kHcExit = kText;
// loop(): mov $1001,%ecx; xor %eax,%eax; 1: add %rcx,%rax; dec %ecx; jne 1b; ret (3,006 instr).
constexpr std::uint64_t kLoop = kText + 0x40;
const Bytes kLoopCode = {0xb9, 0xe9, 0x03, 0,    0,    0x31, 0xc0, 0x48,
                         0x01, 0xc8, 0xff, 0xc9, 0x75, 0xf9, 0xc3};
// straight(): mov $1,%eax; 60 x inc %eax; ret — one block from 0x100 to 0x17e.
constexpr std::uint64_t kStraight = kText + 0x100;
constexpr unsigned kIncs = 60;
// store(): mov $kData,%rdx; mov $7,%eax; inc %eax; mov %rax,(%rdx); inc %eax; inc %eax; ret.
constexpr std::uint64_t kStore = kText + 0x200;
constexpr std::uint64_t kData = 0xffffffff82000000ull;
// calls(): mov $5,%ecx; 1: call f; dec %ecx; jne 1b; ret. f(): inc %eax; a site's 5-byte nop; ret,
// alone in its line (watched through its last byte, which nothing fetches).
constexpr std::uint64_t kCalls = kText + 0x300;
constexpr std::uint64_t kF = kText + 0x380;
constexpr std::uint64_t kFLineEnd = kF + 0x3f;
constexpr unsigned kCallsMade = 5;

Bytes guestText() {
  Bytes text(0x1000, 0xcc);
  text[1] = 0xc3; // the exit stub: int3; ret
  std::copy(kLoopCode.begin(), kLoopCode.end(), text.begin() + (kLoop - kText));
  Bytes straight = {0xb8, 1, 0, 0, 0};
  for (unsigned i = 0; i < kIncs; ++i)
    straight.insert(straight.end(), {0xff, 0xc0});
  straight.push_back(0xc3);
  std::copy(straight.begin(), straight.end(), text.begin() + (kStraight - kText));
  Bytes store = {0x48, 0xc7, 0xc2};
  for (unsigned i = 0; i < 4; ++i)
    store.push_back(static_cast<std::uint8_t>(kData >> (8 * i)));
  store.insert(store.end(),
               {0xb8, 7, 0, 0, 0, 0xff, 0xc0, 0x48, 0x89, 0x02, 0xff, 0xc0, 0xff, 0xc0, 0xc3});
  std::copy(store.begin(), store.end(), text.begin() + (kStore - kText));
  const std::uint32_t rel = static_cast<std::uint32_t>(kF - (kCalls + 10));
  Bytes calls = {0xb9, kCallsMade, 0, 0, 0, 0xe8};
  for (unsigned i = 0; i < 4; ++i)
    calls.push_back(static_cast<std::uint8_t>(rel >> (8 * i)));
  calls.insert(calls.end(), {0xff, 0xc9, 0x75, 0xf7, 0xc3});
  std::copy(calls.begin(), calls.end(), text.begin() + (kCalls - kText));
  const Bytes f = {0xff, 0xc0, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3};
  std::copy(f.begin(), f.end(), text.begin() + (kF - kText));
  return text;
}

struct RunSetup {
  std::uint64_t entry = kLoop;
  unsigned quantum = 1000;
  std::uint64_t watchedByte = 0; // a site's byte, never fetched; 0: none
  bool watchData = false;
  std::uint64_t sharedRead = 0; // an instruction marked by watchSharedRead; 0: none
};

std::unique_ptr<Machine> makeMachine(const RunSetup &s, bool byBlocks) {
  MachineConfig c;
  c.cpus = 2;
  c.quantum = s.quantum;
  c.traceFlagSteps = byBlocks;
  auto machine = std::make_unique<Machine>(arch::archByName("x86_64"), c);
  Machine &m = *machine;
  m.mapText(kText, guestText());
  m.mapData(kData, 0x1000);
  m.bindHypercall(GuestHypercall::Exit, kHcExit);
  if (s.watchedByte)
    m.watchSite(s.watchedByte, 1, {{0xcc}});
  if (s.watchData)
    m.watchData(kData, 8);
  if (s.sharedRead)
    m.watchSharedRead(s.sharedRead);
  m.addTask({"task0", 0, s.entry, 0});
  m.addTask({"task1", 1, s.entry, 0});
  return machine;
}

// What a user sees of a run: every event, and both CPUs' pc, rax and rcx at every decision.
struct Seen {
  std::vector<std::string> events;
  std::vector<std::uint64_t> atDecisions;
  std::vector<std::uint64_t> results;
};

// Runs `m` for up to `maxEvents` events; its events are all of them so far.
Seen run(Machine &m, std::uint64_t maxEvents = UINT64_MAX) {
  Seen seen;
  RoundRobinScheduler rr;
  FunctionScheduler sched([&](const Machine &mm, const DecisionPoint &p) -> std::uint32_t {
    for (unsigned cpu : {0u, 1u})
      for (int reg : {UC_X86_REG_RIP, UC_X86_REG_RAX, UC_X86_REG_RCX})
        seen.atDecisions.push_back(mm.reg(cpu, reg));
    return rr.decide(mm, p);
  });
  const RunResult result = m.run(sched, maxEvents);
  if (maxEvents == UINT64_MAX) {
    EXPECT_EQ(result.status, RunResult::Status::Completed) << m.logText();
  }
  for (const EventRecord &e : m.events())
    seen.events.push_back(formatEvent(e));
  for (int t : {0, 1})
    seen.results.push_back(m.task(t).result);
  return seen;
}

// Both ways give the same events and registers; returns the blocks machine's events.
std::vector<EventRecord> expectSameBothWays(const RunSetup &s) {
  auto hooked = makeMachine(s, false);
  auto blocks = makeMachine(s, true);
  const Seen a = run(*hooked), b = run(*blocks);
  EXPECT_FALSE(a.atDecisions.empty());
  EXPECT_EQ(a.events, b.events) << "by instruction hooks:\n"
                                << hooked->logText() << "by blocks:\n"
                                << blocks->logText();
  EXPECT_EQ(a.atDecisions, b.atDecisions);
  EXPECT_EQ(a.results, b.results);
  EXPECT_TRUE(blocks->findings().empty()) << blocks->logText();
  const auto events = blocks->events();
  return {events.begin(), events.end()};
}

std::uint64_t runEvents(const std::vector<EventRecord> &events) {
  return static_cast<std::uint64_t>(std::count_if(
      events.begin(), events.end(), [](const EventRecord &e) { return e.kind == EventKind::Run; }));
}

// A budget that ends inside the loop's 3-instruction block, at a different place each run: each
// run still ends after exactly its budget (the registers at each decision say so).
TEST(BlockRuns, ARunEndsAfterExactlyItsBudget) {
  for (unsigned quantum : {1000u, 777u, 2u}) {
    SCOPED_TRACE(quantum);
    const auto events = expectSameBothWays({kLoop, quantum});
    EXPECT_GE(runEvents(events), 2u * (3006 / quantum)) << quantum;
  }
}

// A watched line in the middle of one long block: the run stops before the first instruction
// whose line, or whose last possible byte's line, is watched (0x133: 0x133 + 14 is in the watched
// line at 0x140), and the rest is stepped.
TEST(BlockRuns, ARunStopsBeforeWatchedTextInsideABlock) {
  const auto events = expectSameBothWays({kStraight, 1000, kStraight + 0x50});
  const auto first = std::find_if(events.begin(), events.end(), [](const EventRecord &e) {
    return e.cpu == 0 && e.kind == EventKind::Run;
  });
  ASSERT_NE(first, events.end());
  EXPECT_EQ(first->pc, kStraight);
  EXPECT_EQ(first->pcAfter, kStraight + 0x33) << formatEvent(*first);
  EXPECT_EQ(first->outcome, StepOutcome::WatchedStop);
}

// An instruction marked as a read of published data (Machine::watchSharedRead), the 41st inc of a
// long block, at 0x155: both ways, its line is stepped as a site's is (the run stops at 0x133,
// whose last possible byte is in that line), and its step, and no other event, says it is a shared
// read (a visible event the engine-level search orders against publications).
TEST(BlockRuns, ASharedReadIsAStepOfItsOwn) {
  const std::uint64_t marked = kStraight + 5 + 2 * 40;
  const auto events = expectSameBothWays({kStraight, 1000, 0, false, marked});
  const auto first = std::find_if(events.begin(), events.end(), [](const EventRecord &e) {
    return e.cpu == 0 && e.kind == EventKind::Run;
  });
  ASSERT_NE(first, events.end());
  EXPECT_EQ(first->pcAfter, kStraight + 0x33) << formatEvent(*first);
  unsigned shared = 0;
  for (const EventRecord &e : events) {
    if (!e.sharedRead)
      continue;
    ++shared;
    EXPECT_EQ(e.kind, EventKind::Step) << formatEvent(e);
    EXPECT_EQ(e.pc, marked) << formatEvent(e);
  }
  EXPECT_EQ(shared, 2u);                                                            // once per task
  EXPECT_THROW(makeMachine({kStraight}, true)->watchSharedRead(kData), FatalError); // data
  const auto unmarked = expectSameBothWays({kStraight, 1000});
  EXPECT_TRUE(std::none_of(unmarked.begin(), unmarked.end(),
                           [](const EventRecord &e) { return e.sharedRead; }));
}

// Text the patcher stores into outside a watched site (a trampoline's body, ftrace_caller's
// ftrace_call when no site is watched there) is read by every later step over it: such a step is
// a shared read, as the store and the fetch do not commute. A step over a watched site's bytes
// records the fetch instead, and a step elsewhere neither.
TEST(BlockRuns, AStepOverTextThePatcherWroteIsASharedRead) {
  const std::uint64_t written = kStraight + 5 + 2 * 40;
  for (bool site : {false, true}) {
    SCOPED_TRACE(site);
    auto machine = makeMachine({kStraight, 1000}, true);
    Machine &m = *machine;
    if (site)
      m.watchSite(written, 1);
    const Bytes inc = {0xff}; // the byte it holds: the instruction stays `inc %eax`
    m.startPatcher([&](arch::MachinePort &port) { port.writeText(written, inc); });
    run(m);
    unsigned atWritten = 0;
    for (const EventRecord &e : m.events()) {
      if (e.kind != EventKind::Step)
        continue;
      if (e.pc == written)
        ++atWritten;
      if (e.sharedRead) {
        EXPECT_FALSE(site) << formatEvent(e);
        // Any instruction whose longest form would reach the written bytes.
        EXPECT_GE(e.pc + 15, written) << formatEvent(e);
        EXPECT_LT(e.pc, written + inc.size()) << formatEvent(e);
      }
      if (e.pc == written && !site) {
        EXPECT_TRUE(e.sharedRead) << formatEvent(e);
      }
      if (e.pc == written && site) {
        EXPECT_NE(e.fetchSize, 0u) << formatEvent(e);
      }
    }
    // cpu0's task, after the store (cpu1's may have run past before it, in one run).
    EXPECT_GE(atWritten, 1u) << m.logText();
  }
}

// A machine asked to run by blocks that watches data runs by instruction hooks instead: the run
// ends right after the watched store, with the registers the guest had there.
TEST(BlockRuns, AWatchedAccessEndsTheRunRightAfterIt) {
  const auto events = expectSameBothWays({kStore, 1000, 0, true});
  const auto access = std::find_if(events.begin(), events.end(), [](const EventRecord &e) {
    return e.cpu == 0 && e.dataSize != 0;
  });
  ASSERT_NE(access, events.end());
  EXPECT_EQ(access->dataAddr, kData);
  EXPECT_TRUE(access->dataWrite);
  EXPECT_EQ(access->pcAfter, kStore + 0x11) << formatEvent(*access); // after mov %rax,(%rdx)
}

// A block rewritten under a running task (pokeText) with the same start and size but another
// instruction count: `add %rcx,%rax` (one instruction) becomes `inc %eax; nop` (two), so the
// loop's block is four instructions. Its count must be decoded again, or a budget ending inside
// it ends elsewhere.
TEST(BlockRuns, ARewrittenBlockIsCountedAgain) {
  std::vector<Seen> seen;
  for (bool byBlocks : {false, true}) {
    auto machine = makeMachine({kLoop, 777}, byBlocks);
    Machine &m = *machine;
    Seen first = run(m, 6);
    const Bytes incNop = {0xff, 0xc0, 0x90};
    m.pokeText(kLoop + 7, incNop);
    Seen rest = run(m);
    first.events = rest.events; // every event so far
    first.atDecisions.insert(first.atDecisions.end(), rest.atDecisions.begin(),
                             rest.atDecisions.end());
    first.results = rest.results;
    seen.push_back(first);
  }
  EXPECT_EQ(seen[0].events, seen[1].events);
  EXPECT_EQ(seen[0].atDecisions, seen[1].atDecisions);
  EXPECT_EQ(seen[0].results, seen[1].results);
}

// A rewrite removes the translations that hold its bytes and keeps the others (removeTranslations
// skips Unicorn where no block seen holds a rewritten byte). The first block, mov; xor; add; dec;
// jne, and the loop's block, add; dec; jne, share their last 7 bytes. Rewriting the mov's
// immediate (run already) removes the first block only; the loop's block, still marked, must go
// when its add becomes `inc %eax; nop` right after, or the rest of the loop runs the old add.
TEST(BlockRuns, ARewriteRemovesEveryBlockHoldingItsBytes) {
  std::vector<Seen> seen;
  for (bool byBlocks : {false, true}) {
    auto machine = makeMachine({kLoop, 777}, byBlocks);
    Machine &m = *machine;
    run(m, 2); // a run on each CPU
    m.pokeText(kLoop + 1, Bytes{0xea});
    m.pokeText(kLoop + 7, Bytes{0xff, 0xc0, 0x90});
    seen.push_back(run(m));
  }
  EXPECT_EQ(seen[0].events, seen[1].events);
  EXPECT_EQ(seen[0].atDecisions, seen[1].atDecisions);
  EXPECT_EQ(seen[0].results, seen[1].results);
  EXPECT_NE(seen[1].results[0], 1001u * 1002u / 2); // the add did not run to the end
}

// The next machine of a thread adopts the engines and their translations, block hook included
// (EnginePool.cpp): it must report to the new machine's CPUs and run the same way.
TEST(BlockRuns, AdoptedEnginesRunTheSameWay) {
  const RunSetup s{kLoop, 777};
  Seen first;
  {
    auto m = makeMachine(s, true);
    first = run(*m);
  }
  // Take the memory the first machine freed, so that the second one's CPUs are elsewhere: a hook
  // still reporting to the first machine's CPUs would then be seen.
  std::vector<std::vector<char>> taken;
  for (std::size_t size = 16; size <= 64 * 1024; size += 16)
    taken.emplace_back(size);
  auto again = makeMachine(s, true);
  ASSERT_TRUE(again->enginesAdopted());
  const Seen second = run(*again);
  EXPECT_EQ(first.events, second.events);
  EXPECT_EQ(first.atDecisions, second.atDecisions);
  EXPECT_EQ(first.results, second.results);
}

// A run that reaches watched text stops before it each time it gets there: the block calling f is
// stepped, not run (its call goes into watched text), and the site's nop in f is applied by the
// machine itself (GuestAbi::plainStep). The same events and registers as the hook before every
// instruction and Unicorn's own steps.
TEST(BlockRuns, ARunStopsAtWatchedTextEveryTimeItGetsThere) {
  const auto events = expectSameBothWays({kCalls, 1000, kFLineEnd});
  const auto stops = std::count_if(events.begin(), events.end(), [](const EventRecord &e) {
    return e.kind == EventKind::Run && e.pcAfter == kF && e.outcome == StepOutcome::WatchedStop;
  });
  EXPECT_EQ(stops, 2 * kCallsMade); // both tasks, each call
}

} // namespace
} // namespace ftsim::sim
