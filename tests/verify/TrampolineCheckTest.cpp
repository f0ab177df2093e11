// The trampoline-lifetime scenarios (code kind "trampoline", TrampolineHarness.h) as files, for
// every ISA with a file in corpora/scenarios/: each reaches the verdict its file expects through
// the library call `ftsim check` makes, with the engine-level exhaustive search's stated bounds
// (verify/src/explore/VisibleSearch.h); each
// violation is written as a replay file and reproduces byte for byte on a harness built from the
// file alone, and its trail shows the free and the task on the freed code.

#include "Corpus.h"
#include "FatalMessage.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/TrampolineHarness.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/replay/Timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace ftsim::verify {
namespace {

std::vector<std::string> trampolineFiles() {
  std::vector<std::string> out;
  for (const auto &entry : std::filesystem::directory_iterator(test::corpusDir("scenarios")))
    if (entry.path().extension() == ".toml" &&
        loadScenarioFile(entry.path().string()).code == CodeKind::Trampoline)
      out.push_back(entry.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

class TrampolineFile : public ::testing::TestWithParam<std::string> {
protected:
  Scenario load() const { return test::corpusScenario(GetParam()); }
};

TEST_P(TrampolineFile, ReachesItsExpectedVerdictAndItsViolationReplays) {
  const Scenario s = load();
  ASSERT_FALSE(s.expectVerdict.empty());
  auto harness = makeHarness(s, test::builtImages());
  const ExploreOptions options = exploreOptionsFor(s);
  // Complete within the file's bounds, by the engine-level search (from round robin for
  // irq-tramp-free and ppc32-tramp-free-sched-sync).
  EXPECT_EQ(options.explorer, "exhaustive");
  const CheckReport r = check(*harness, options);
  std::cout << formatCheck(*harness, r, "");
  ::testing::Test::RecordProperty("executions", static_cast<int>(r.result.stats.executions));
  if (s.expectVerdict == "verified") {
    EXPECT_EQ(r.verdict, Verdict::Verified) << formatCheck(*harness, r, "");
    EXPECT_TRUE(r.result.stats.complete);
    // Every deviation within the bound at a visible event of the base schedule was tried.
    EXPECT_GT(r.result.stats.executions, 20u);
    EXPECT_NE(r.coverage.find("visible events"), std::string::npos) << r.coverage;
    return;
  }
  ASSERT_EQ(r.verdict, Verdict::Violation);
  const Counterexample &cex = *r.minimised;
  EXPECT_EQ(cex.violation.oracle, s.expectOracle);
  EXPECT_LE(cex.preemptions, r.found->preemptions);
  if (cex.preemptions == r.found->preemptions) {
    EXPECT_LE(cex.events, r.found->events);
  }
  // Delta debugging: a handful of decisions deviate from the continuation; the schedule's
  // decisions end at the last of them.
  EXPECT_TRUE(cex.continues);
  EXPECT_GE(cex.deviations, 1u);
  EXPECT_LE(cex.deviations, 60u);
  // Fewest preemptions, then fewest events, then fewest decisions (Minimise.cpp): a schedule with
  // fewer preemptions may need more decisions (irq-tramp-free-classic: 11 preemptions in 124
  // decisions against 46 in 86).
  if (cex.preemptions == r.found->preemptions && cex.events == r.found->events) {
    EXPECT_LE(cex.choices.size(), r.found->choices.size());
  }
  EXPECT_LE(storedDecisions(cex), 60u);
  std::string trail;
  for (const std::string &line : cex.violation.trail)
    trail += line + "\n";
  if (s.trampoline.variant == TrampolineVariant::OpsUafNoSync) {
    EXPECT_NE(cex.violation.message.find("ops-use-after-free"), std::string::npos);
    EXPECT_NE(cex.violation.message.find("dynamic_ops1"), std::string::npos);
    // The list was read before the ops was freed and walked after: "freed at event F
    // (ftrace_ops_list read at event R)" with R < F. The walk is non-preemptible, so what lies
    // between is the other CPU's shutdown (or a timer interrupt on top of the reader).
    const std::string &m = cex.violation.message;
    const std::size_t freed = m.find("freed at event "), read = m.find("read at event ");
    ASSERT_NE(freed, std::string::npos) << m;
    ASSERT_NE(read, std::string::npos) << m;
    EXPECT_LT(std::stoull(m.substr(read + 14)), std::stoull(m.substr(freed + 15))) << m;
  } else {
    EXPECT_NE(cex.violation.message.find("ftrace_trampoline"), std::string::npos)
        << cex.violation.message;
    EXPECT_NE(trail.find("free 0x"), std::string::npos) << trail;
    EXPECT_NE(trail.find("enters the ops trampoline"), std::string::npos) << trail;
    if (s.trampoline.free == "sched-sync") { // the task was preempted on the trampoline
      EXPECT_NE(trail.find("preempt at ftrace_trampoline"), std::string::npos) << trail;
    }
  }
  // The replay file stands alone: a harness built from it reproduces the execution.
  const ReplayFile file = parseReplay(replayToJson(s, cex), "cex.json");
  EXPECT_EQ(file.scenario, s);
  auto again = makeHarness(file.scenario, test::builtImages());
  const Reproduction rep = reproduce(*again, file, "cex.json");
  EXPECT_EQ(rep.execution.logHash, cex.logHash);
  EXPECT_EQ(summarizeViolation(rep.violation), summarizeViolation(cex.violation));
}

INSTANTIATE_TEST_SUITE_P(Corpus, TrampolineFile, ::testing::ValuesIn(trampolineFiles()),
                         [](const auto &param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The patcher's sleep waits for a task's event (a call, a read of ftrace_ops_list). When the tasks
// have all exited before it sleeps, none can come: the sleep ends at once instead of publishing
// alone until its bound of 100,000 publications, which made up most of the events of
// ops-uaf-no-sync's executions.
TEST(TrampolineFiles, TheSleepEndsWhenNoTaskIsLeftToWakeIt) {
  for (const char *name : {"ops-uaf-no-sync-fixed", "ppc32-tramp-free-rcu-tasks"}) {
    const Scenario s = test::corpusScenario(name);
    auto harness = makeHarness(s, test::builtImages());
    // The tasks first: any CPU's event before the patcher's.
    sim::FunctionScheduler tasksFirst([](const sim::Machine &, const sim::DecisionPoint &p) {
      for (std::uint32_t i = 0; i < p.options; ++i)
        if (p.events[i].kind != sim::EventKind::Store &&
            p.events[i].kind != sim::EventKind::Publish)
          return i;
      return std::uint32_t{0};
    });
    const sim::RunResult run = harness->runExecution(tasksFirst);
    EXPECT_EQ(run.status, sim::RunResult::Status::Completed) << name;
    const sim::Machine &m = harness->machine();
    std::uint64_t lastExit = 0, sleeps = 0;
    for (const sim::EventRecord &e : m.events()) {
      if (e.outcome == sim::StepOutcome::Exit)
        lastExit = e.index;
      if (e.kind == sim::EventKind::Publish && m.publishName(e.detail) == "sleep" &&
          e.index > lastExit)
        ++sleeps;
    }
    EXPECT_GT(lastExit, 0u) << name;
    EXPECT_EQ(sleeps, 0u) << name;
    EXPECT_LT(m.eventCount(), 20000u) << name;
    for (std::size_t t = 0; t < m.taskCount(); ++t)
      EXPECT_EQ(m.task(static_cast<int>(t)).state, sim::TaskState::Exited) << name;
  }
}

// Both ISAs and both variants have files, each with its fixed counterpart.
TEST(TrampolineFiles, EveryIsaHasEveryVariantBuggyAndFixed) {
  const auto files = trampolineFiles();
  for (const char *prefix : {"", "ppc32-"})
    for (const char *name :
         {"tramp-free-immediate", "tramp-free-sched-sync", "tramp-free-rcu-tasks",
          "tramp-free-sched-sync-nopreempt", "ops-uaf-no-sync", "ops-uaf-no-sync-fixed"})
      EXPECT_NE(std::find(files.begin(), files.end(), std::string(prefix) + name), files.end())
          << prefix << name;
}

// `[explore] continuation` names the engine-level search's base schedule: kept through a replay
// file's scenario text, refused with one line naming the file when unknown or on a site scenario.
TEST(TrampolineFiles, TheContinuationKeyRoundTripsAndIsRefusedWhereItMeansNothing) {
  const Scenario s = test::corpusScenario("irq-tramp-free-classic");
  EXPECT_EQ(s.explore.continuation, "round-robin");
  EXPECT_EQ(exploreOptionsFor(s).continuation, Continuation::RoundRobin);
  EXPECT_EQ(parseScenario(s.toToml(), "round-trip"), s);
  const std::pair<const char *, const char *> cases[] = {
      {"arch = \"x86_64\"\nprotocol = \"int3\"\nstore = \"word\"\nfetch = \"atomic\"\n"
       "preemption = true\n[code]\nkind = \"trampoline\"\nimage = \"x86_64-fentry\"\n"
       "[explore]\ncontinuation = \"sideways\"\n",
       "explore.continuation = 'sideways' (known: run-on, round-robin)"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[explore]\ncontinuation = \"round-robin\"\n",
       "explore.continuation belongs to kernel and trampoline scenarios"},
  };
  for (const auto &[text, expected] : cases) {
    const std::string source = text; // clang 14 lambdas cannot capture structured bindings
    test::expectOneLineRefusal(
        "bad.toml", [&] { parseScenario(source, "bad.toml").validate("bad.toml"); }, expected);
  }
}

} // namespace
} // namespace ftsim::verify
