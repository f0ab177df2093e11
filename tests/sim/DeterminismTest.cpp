// Same scenario + same schedule => same event log, byte for byte; a recorded schedule replays.

#include "X86Scenario.h"

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/ReplayScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "ftsim/arch/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ftsim::sim {
namespace {

using test::X86Scenario;

MachineConfig busyConfig(const FetchModel *fetch) {
  MachineConfig c;
  c.cpus = 3;
  c.storeModel = StoreModel::Byte;
  c.fetchModel = fetch;
  return c;
}

// Workers on every CPU (two on CPU 1, so preemption is offered) while the patcher turns the site
// into the call and back, with syncs and a publication in between.
void buildBusy(Machine &m, const X86Scenario &s) {
  s.install(m, {0, 1, 1, 2});
  m.startPatcher([&s](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    port.syncCores();
    port.publish("ops", [] {});
    port.writeText(s.site, X86Scenario::nop());
    port.syncCores();
  });
}

std::string runWith(Scheduler &sched, const FetchModel *fetch,
                    std::vector<Decision> *schedule = nullptr) {
  X86Scenario s(60);
  Machine m(arch::archByName("x86_64"), busyConfig(fetch));
  buildBusy(m, s);
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed);
  if (schedule)
    schedule->assign(m.schedule().begin(), m.schedule().end());
  return m.logText();
}

class Determinism : public ::testing::TestWithParam<const FetchModel *> {};

TEST_P(Determinism, SameSeedSameLog) {
  RandomScheduler a(42), b(42), c(43);
  std::string first = runWith(a, GetParam());
  EXPECT_EQ(first, runWith(b, GetParam()));
  EXPECT_NE(first, runWith(c, GetParam())); // the log does depend on the schedule
  EXPECT_GT(std::count(first.begin(), first.end(), '\n'), 200);
}

TEST_P(Determinism, RecordedScheduleReplays) {
  RandomScheduler random(7);
  std::vector<Decision> recorded;
  std::string original = runWith(random, GetParam(), &recorded);
  ASSERT_FALSE(recorded.empty());
  ReplayScheduler replay(choicesOf(recorded));
  std::vector<Decision> replayed;
  EXPECT_EQ(original, runWith(replay, GetParam(), &replayed));
  EXPECT_EQ(replay.consumed(), recorded.size());
  EXPECT_EQ(recorded, replayed);
}

TEST_P(Determinism, SnapshotRestoreRerunsIdentically) {
  X86Scenario s(60);
  Machine m(arch::archByName("x86_64"), busyConfig(GetParam()));
  s.install(m, {0, 1, 1, 2});
  Snapshot start = m.snapshot();
  std::vector<std::string> logs;
  for (std::uint64_t seed : {5, 6, 5}) {
    m.restore(start);
    m.startPatcher([&s](arch::MachinePort &port) {
      port.writeText(s.site, X86Scenario::call());
      port.syncCores();
    });
    RandomScheduler sched(seed);
    m.run(sched);
    logs.push_back(m.logText());
  }
  EXPECT_EQ(logs[0], logs[2]);
  EXPECT_NE(logs[0], logs[1]);
  // And a fresh machine agrees with the restored one.
  Machine fresh(arch::archByName("x86_64"), busyConfig(GetParam()));
  s.install(fresh, {0, 1, 1, 2});
  fresh.startPatcher([&s](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    port.syncCores();
  });
  RandomScheduler sched(5);
  fresh.run(sched);
  EXPECT_EQ(fresh.logText(), logs[0]);
}

INSTANTIATE_TEST_SUITE_P(FetchModels, Determinism, ::testing::ValuesIn(allFetchModels()),
                         [](const auto &p) { return std::string(p.param->name()); });

TEST(Replay, AScheduleForAnotherScenarioIsAUserError) {
  ReplayScheduler replay({99});
  EXPECT_THROW(runWith(replay, &fetchModelByName("atomic")), FatalError);
}

TEST(RoundRobin, EveryWorkerFinishesWithItsChecksum) {
  // Line stores and atomic fetches, the site inside one line: each write is one atomic store, so
  // the busy scenario (which patches a live site without any protocol) cannot tear here.
  X86Scenario s(4);
  MachineConfig c = busyConfig(&fetchModelByName("atomic"));
  c.storeModel = StoreModel::Line;
  Machine m(arch::archByName("x86_64"), c);
  buildBusy(m, s);
  RoundRobinScheduler rr(/*preemptEvery=*/7);
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(m.task(t).state, TaskState::Exited);
    EXPECT_EQ(m.task(t).result, X86Scenario::expectedResult(t));
  }
  auto events = m.events();
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const EventRecord &e) { return e.kind == EventKind::Ipi; }),
            4); // two syncs, two other CPUs each
  EXPECT_TRUE(std::any_of(events.begin(), events.end(),
                          [](const EventRecord &e) { return e.kind == EventKind::Preempt; }));
}

// Without a log the same run happens (same results, same number of events) and nothing per event
// is kept: a run of any length stays bounded in memory.
TEST(RoundRobin, WithoutALogTheRunIsTheSameAndOnlyCounted) {
  auto runOnce = [](bool keepLog, std::uint64_t &count) {
    X86Scenario s(4);
    MachineConfig c = busyConfig(&fetchModelByName("atomic"));
    c.keepLog = keepLog;
    Machine m(arch::archByName("x86_64"), c);
    buildBusy(m, s);
    RoundRobinScheduler rr(/*preemptEvery=*/7);
    EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
    count = m.eventCount();
    std::vector<std::uint64_t> results;
    for (int t = 0; t < 4; ++t)
      results.push_back(m.task(t).result);
    EXPECT_EQ(m.events().size(), keepLog ? count : 0u);
    EXPECT_EQ(m.schedule().empty(), !keepLog);
    return results;
  };
  std::uint64_t logged = 0, counted = 0;
  EXPECT_EQ(runOnce(true, logged), runOnce(false, counted));
  EXPECT_GT(logged, 100u);
  EXPECT_EQ(logged, counted);
}

} // namespace
} // namespace ftsim::sim
