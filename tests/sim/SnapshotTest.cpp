// Snapshots: a restore gives back exactly the snapshot's text (canonical bytes and every CPU's
// instruction view, stale ones included), whichever snapshot is restored and in whatever order,
// and a run after it is the run from a fresh machine.

#include "X86Scenario.h"

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ftsim::sim {
namespace {

using test::X86Scenario;

const arch::Arch &x86() { return arch::archByName("x86_64"); }

MachineConfig config(const char *fetch) {
  MachineConfig c;
  c.cpus = 3;
  c.storeModel = StoreModel::Byte;
  c.fetchModel = &fetchModelByName(fetch);
  return c;
}

arch::Bytes canonical(Machine &m, std::uint64_t addr) {
  arch::Bytes out(5);
  m.readText(addr, out);
  return out;
}

// The patcher writes `bytes` at the site and ends without a sync (the machine has no task).
void writeWithoutSync(Machine &m, const X86Scenario &s, const arch::Bytes &bytes) {
  m.startPatcher([&s, bytes](arch::MachinePort &port) { port.writeText(s.site, bytes); });
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed); // no task: only the stores run
}

// The patcher writes a call at the site, syncs, and writes the nop back.
void callSyncNop(Machine &m, const X86Scenario &s) {
  m.startPatcher([&s](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    port.syncCores();
    port.writeText(s.site, X86Scenario::nop());
  });
}

class SnapshotModels : public ::testing::TestWithParam<const char *> {};

// CPUs 1 and 2 still see the old bytes after the patcher's stores (stale and line fetch): the
// snapshot holds those views, and a serialisation after it does not survive a restore.
TEST_P(SnapshotModels, RestoreGivesBackEveryViewIncludingStaleOnes) {
  X86Scenario s(4);
  Machine m(x86(), config(GetParam()));
  s.install(m, {}); // no task: nothing fetches
  writeWithoutSync(m, s, X86Scenario::call());
  ASSERT_EQ(canonical(m, s.site), X86Scenario::call());
  const arch::Bytes before = m.viewBytes(1, s.site, 5);
  const Snapshot stale = m.snapshot();
  m.syncCores(); // outside a patcher: every CPU serialises now
  EXPECT_EQ(m.viewBytes(1, s.site, 5), X86Scenario::call());
  m.restore(stale);
  EXPECT_EQ(m.viewBytes(1, s.site, 5), before);
  EXPECT_EQ(m.viewBytes(2, s.site, 5), before);
  EXPECT_EQ(m.viewBytes(0, s.site, 5), X86Scenario::call()); // the patcher's CPU saw its stores
  EXPECT_EQ(canonical(m, s.site), X86Scenario::call());
}

// Two snapshots restored in turn, each after the other one: every restore gives its own text.
TEST_P(SnapshotModels, EitherOfTwoSnapshotsRestoresInAnyOrder) {
  X86Scenario s(4);
  Machine m(x86(), config(GetParam()));
  s.install(m, {});
  const Snapshot nop = m.snapshot();
  writeWithoutSync(m, s, X86Scenario::call());
  m.syncCores();
  const Snapshot call = m.snapshot();
  const std::uint64_t tramp = m.allocText(64, 0);
  m.pokeText(tramp, std::vector<std::uint8_t>(64, 0xc3));
  writeWithoutSync(m, s, X86Scenario::nop());
  for (const Snapshot *which : {&nop, &call, &nop, &nop, &call, &call}) {
    m.restore(*which);
    const arch::Bytes want = which == &nop ? X86Scenario::nop() : X86Scenario::call();
    EXPECT_EQ(canonical(m, s.site), want);
    for (unsigned cpu = 0; cpu < 3; ++cpu)
      EXPECT_EQ(m.viewBytes(cpu, s.site, 5), want) << "cpu" << cpu;
    // The trampoline written after both snapshots is poison again (x86: ud2).
    EXPECT_EQ(m.viewBytes(1, tramp, 2), (arch::Bytes{0x0f, 0x0b}));
    m.pokeText(tramp, std::vector<std::uint8_t>(64, 0xc3));
  }
}

// After restores from two snapshots, a run is the same run as on a fresh machine.
TEST_P(SnapshotModels, ARunAfterRestoresIsAFreshMachinesRun) {
  X86Scenario s(60);
  auto patch = [&s](Machine &m) { callSyncNop(m, s); };
  Machine m(x86(), config(GetParam()));
  s.install(m, {0, 1, 1, 2});
  const Snapshot start = m.snapshot();
  patch(m);
  RandomScheduler first(3);
  ASSERT_EQ(m.run(first).status, RunResult::Status::Completed);
  const Snapshot end = m.snapshot();
  patch(m);
  RandomScheduler rest(4);
  m.run(rest, 300); // a restore aborts this patcher midway
  m.restore(start);
  m.restore(end);
  m.restore(start);
  patch(m);
  RandomScheduler again(9);
  m.run(again);
  Machine fresh(x86(), config(GetParam()));
  s.install(fresh, {0, 1, 1, 2});
  patch(fresh);
  RandomScheduler same(9);
  fresh.run(same);
  EXPECT_EQ(m.logText(), fresh.logText());
}

// Engines renewed at every restore (sim/Engines.cpp): memory, views, registers, the code hook
// that stops fast-mode runs before watched text all move to the new engines, so every run is still
// a fresh machine's run, in instruction-granular and in fast mode.
TEST_P(SnapshotModels, RenewedEnginesRunAsAFreshMachine) {
  X86Scenario s(60);
  auto patch = [&s](Machine &m) { callSyncNop(m, s); };
  for (unsigned quantum : {1u, 1000u}) {
    MachineConfig renewing = config(GetParam());
    renewing.quantum = quantum;
    renewing.restoresPerEngine = 1;
    Machine m(x86(), renewing);
    s.install(m, {0, 1, 1, 2});
    const Snapshot start = m.snapshot();
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      m.restore(start);
      patch(m);
      RandomScheduler random(seed);
      ASSERT_EQ(m.run(random).status, RunResult::Status::Completed);
      MachineConfig keeping = renewing;
      keeping.restoresPerEngine = 0;
      Machine fresh(x86(), keeping);
      s.install(fresh, {0, 1, 1, 2});
      patch(fresh);
      RandomScheduler same(seed);
      ASSERT_EQ(fresh.run(same).status, RunResult::Status::Completed);
      EXPECT_EQ(m.logText(), fresh.logText()) << "quantum " << quantum << ", seed " << seed;
      EXPECT_EQ(fresh.engineRenewals(), 0u);
    }
    EXPECT_EQ(m.engineRenewals(), 4u);
  }
}

// A restore or a poke removes Unicorn's translations only over the bytes it changes. The byte
// here is the last of its block (a jmp's rel8: 0 runs `xchg %eax,%ecx`, 1 skips it), so a removal
// short of it, or past it, leaves the block that ends with it as it was translated before: every
// run must still take the jump the text holds now, stepping (quantum 1) or in one run.
TEST(SnapshotTranslations, TheLastByteOfABlockIsFetchedAgainAfterPokeAndRestore) {
  constexpr std::uint64_t kText = X86Scenario::kText, kCode = kText + 0x40;
  // mov %rdi,%rax; mov $7,%ecx; jmp .+2+rel8; xchg %eax,%ecx; ret
  const std::vector<std::uint8_t> code = {0x48, 0x89, 0xf8, 0xb9, 0x07, 0x00,
                                          0x00, 0x00, 0xeb, 0x00, 0x91, 0xc3};
  const std::uint64_t rel8 = kCode + 9;
  for (unsigned quantum : {1u, 1000u}) {
    MachineConfig c;
    c.cpus = 1;
    c.quantum = quantum;
    Machine m(x86(), c);
    std::vector<std::uint8_t> text(0x1000, 0xcc);
    text[1] = 0xc3; // the exit stub: int3; ret
    std::copy(code.begin(), code.end(), text.begin() + (kCode - kText));
    m.mapText(kText, text);
    m.bindHypercall(GuestHypercall::Exit, kText);
    m.addTask({"jumper", 0, kCode, 1});
    const Snapshot through = m.snapshot(); // rel8 0: the xchg runs, rax = 7
    auto result = [&m] {
      RoundRobinScheduler rr;
      EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
      return m.task(0).result;
    };
    EXPECT_EQ(result(), 7u) << "quantum " << quantum;
    m.restore(through);
    m.pokeText(rel8, std::vector<std::uint8_t>{0x01});
    const Snapshot skipping = m.snapshot(); // rel8 1: the jump skips the xchg, rax = 1
    EXPECT_EQ(result(), 1u) << "quantum " << quantum;
    m.restore(through);
    EXPECT_EQ(result(), 7u) << "quantum " << quantum;
    m.restore(skipping);
    EXPECT_EQ(result(), 1u) << "quantum " << quantum;
  }
}

INSTANTIATE_TEST_SUITE_P(FetchModels, SnapshotModels, ::testing::Values("stale", "line", "atomic"));

} // namespace
} // namespace ftsim::sim
