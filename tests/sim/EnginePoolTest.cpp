// The engine pool (sim/EnginePool.cpp): a machine made on the engines a destroyed machine left
// runs its own code and data, never what the last machine had at the same addresses, and faults
// where the last machine had memory it does not map; its log is a machine's on new engines.

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ftsim::sim {
namespace {

const arch::Arch &x86() { return arch::archByName("x86_64"); }

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr std::uint64_t kJumper = kText + 0x40;
constexpr std::uint64_t kReader = kText + 0x80;
constexpr std::uint64_t kExtra = 0xffffffff81100000ull; // text only the first machine maps
constexpr std::uint64_t kData = 0xffffffff82000000ull;

// jumper(seed): rax = seed; ecx = 7; jmp .+2+rel8; xchg %eax,%ecx; ret. rel8 0: 7, 1: the seed.
// reader(): rax = the quadword at kData. extra(): rax = 42.
struct Program {
  std::uint8_t rel8 = 0;
  bool extra = false;
  std::uint8_t datum = 0;
  std::uint64_t dataSize = 0x1000;
  std::uint64_t textSize = 0x1000;
  unsigned quantum = 100;
  // After mapping: rel8 poked to 1 (text the machine changed), and mov $42,%eax; ret written
  // into trampoline memory, which a fourth task runs (without it, that task runs poison).
  bool poke = false;
};

struct Outcome {
  std::vector<std::uint64_t> results;
  std::size_t findings = 0;
  std::string log;
  bool adopted = false;
};

Outcome runProgram(const Program &p, bool pool) {
  MachineConfig c;
  c.cpus = 2;
  c.quantum = p.quantum;
  c.machinesPerEngine = pool ? 16 : 1;
  Machine m(x86(), c);
  std::vector<std::uint8_t> text(p.textSize, 0xcc);
  text[1] = 0xc3; // the exit stub: int3; ret
  const std::vector<std::uint8_t> jumper = {0x48, 0x89, 0xf8, 0xb9,   0x07, 0x00,
                                            0x00, 0x00, 0xeb, p.rel8, 0x91, 0xc3};
  std::copy(jumper.begin(), jumper.end(), text.begin() + (kJumper - kText));
  const std::vector<std::uint8_t> reader = {0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00, 0x82, 0xc3};
  std::copy(reader.begin(), reader.end(), text.begin() + (kReader - kText));
  m.mapText(kText, text);
  if (p.extra)
    m.mapText(kExtra, std::vector<std::uint8_t>{0xb8, 42, 0, 0, 0, 0xc3}); // mov $42,%eax; ret
  std::vector<std::uint8_t> init;
  if (p.datum)
    init.push_back(p.datum);
  m.mapData(kData, p.dataSize, init);
  m.bindHypercall(GuestHypercall::Exit, kText);
  m.addTask({"jumper", 0, kJumper, 1});
  m.addTask({"reader", 1, kReader, 0});
  m.addTask({"extra", 1, kExtra, 0});
  const std::uint64_t trampoline = m.config().moduleBase;
  if (p.poke) {
    m.pokeText(kJumper + 9, std::vector<std::uint8_t>{1});
    if (m.allocText(6, 0) != trampoline)
      ADD_FAILURE() << "trampoline memory is not allocated from its start";
    m.pokeText(trampoline, std::vector<std::uint8_t>{0xb8, 42, 0, 0, 0, 0xc3});
  }
  m.addTask({"trampoline", 0, trampoline, 0});
  RoundRobinScheduler rr;
  m.run(rr);
  Outcome out;
  for (int t = 0; t < 4; ++t)
    out.results.push_back(m.task(t).result);
  out.findings = m.findings().size();
  out.log = m.logText();
  out.adopted = m.enginesAdopted();
  return out;
}

TEST(EnginePool, AMachineOnAnotherMachinesEnginesRunsItsOwnCodeAndData) {
  // The first machine: rel8 0, a datum of 5, extra text that returns 42 (and runs it).
  const Outcome first = runProgram({0, true, 5}, true);
  EXPECT_EQ((std::vector<std::uint64_t>(first.results.begin(), first.results.begin() + 3)),
            (std::vector<std::uint64_t>{7, 5, 42}));
  EXPECT_EQ(first.findings, 1u) << first.log; // the trampoline task runs poison
  // The next one, on its engines: the jump's byte changed (translations of that page must go),
  // no datum (the buffer it takes over must read 0), no extra text (entering it must fault).
  const Outcome pooled = runProgram({1, false, 0}, true);
  EXPECT_TRUE(pooled.adopted) << "the engines were not taken over: the test proves nothing";
  const Outcome fresh = runProgram({1, false, 0}, false);
  EXPECT_FALSE(fresh.adopted);
  EXPECT_EQ(pooled.results[0], 1u);
  EXPECT_EQ(pooled.results[1], 0u);
  EXPECT_NE(pooled.results[2], 42u);
  EXPECT_EQ(pooled.findings, 2u) << pooled.log; // the fetch fault at kExtra, the poison
  EXPECT_EQ(pooled.log, fresh.log);
  EXPECT_EQ(pooled.results, fresh.results);
}

// A region of another size at the same address is not taken over: the next machine unmaps the old
// one and maps its own buffer there. Its guest must fetch and read its own memory, not the buffers
// the last machine's engines had mapped at those addresses (and that were freed with them).
TEST(EnginePool, MemoryMappedAnewWhereTheLastMachineHadOtherMemoryIsFetchedAndReadAnew) {
  const Outcome first = runProgram({0, false, 5, 0x1000, 0x2000, 1}, true);
  EXPECT_EQ(first.results[0], 7u);
  EXPECT_EQ(first.results[1], 5u);
  const Outcome pooled = runProgram({1, false, 9, 0x2000, 0x1000, 1}, true);
  EXPECT_TRUE(pooled.adopted) << "the engines were not taken over: the test proves nothing";
  const Outcome fresh = runProgram({1, false, 9, 0x2000, 0x1000, 1}, false);
  EXPECT_EQ(pooled.results[0], 1u) << pooled.log;
  EXPECT_EQ(pooled.results[1], 9u) << pooled.log;
  EXPECT_EQ(pooled.log, fresh.log);
  EXPECT_EQ(pooled.results, fresh.results);
}

// A machine mapped with the same bytes as the last one takes its text over and rewrites only the
// lines the last machine changed (EnginePool.cpp): what that machine wrote into its text and into
// trampoline memory is gone, and the guest runs the bytes it was mapped with.
TEST(EnginePool, TextTheLastMachineWroteIsWhatTheNextMachineMappedAgain) {
  const Outcome first = runProgram({0, false, 5, 0x1000, 0x1000, 100, true}, true);
  EXPECT_EQ(first.results[0], 1u) << first.log; // rel8 poked to 1: the seed
  EXPECT_EQ(first.results[3], 42u) << first.log;
  const Outcome pooled = runProgram({0, false, 5}, true);
  EXPECT_TRUE(pooled.adopted) << "the engines were not taken over: the test proves nothing";
  const Outcome fresh = runProgram({0, false, 5}, false);
  EXPECT_EQ(pooled.results[0], 7u) << pooled.log;
  EXPECT_NE(pooled.results[3], 42u) << pooled.log;
  EXPECT_EQ(pooled.log, fresh.log);
  EXPECT_EQ(pooled.results, fresh.results);
  EXPECT_EQ(pooled.findings, fresh.findings);
}

} // namespace
} // namespace ftsim::sim
