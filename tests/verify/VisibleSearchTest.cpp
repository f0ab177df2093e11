// The engine-level exhaustive search (verify/src/explore/VisibleSearch.h) on the published kernel
// and trampoline scenarios: it finds the buggy variants with short counterexamples that replay byte
// for byte, verifies the fixed ones within its stated bounds, gives the same result every run, and
// its state hashing prunes without changing what is found.

#include "Corpus.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <gtest/gtest.h>

#include <string>

namespace ftsim::verify {
namespace {

using test::corpusScenario;

// What `ftsim check --scenario NAME` explores, at `bound` deviations when given.
ExploreOptions optionsFor(const Scenario &s, int bound = -2) {
  ExploreOptions o = exploreOptionsFor(s);
  if (bound != -2)
    o.preemptionBound = bound;
  return o;
}

TEST(VisibleSearch, PublishedEngineScenariosDefaultToIt) {
  for (const char *name : {"list-to-single-race", "int3-skips-call-fixed", "ops-uaf-no-sync",
                           "tramp-free-sched-sync", "idle-tramp-free"}) {
    const Scenario s = corpusScenario(name);
    const ExploreOptions o = optionsFor(s);
    EXPECT_EQ(o.explorer, "exhaustive") << name;
    EXPECT_GE(o.preemptionBound, 1) << name;
    auto h = makeHarness(s, test::builtImages());
    EXPECT_FALSE(h->reductionSound()) << name;
    const std::string bounds = explorerByName("exhaustive").bounds(*h, o);
    EXPECT_NE(bounds.find("switches only at visible events"), std::string::npos) << bounds;
    EXPECT_NE(bounds.find("deviations <= "), std::string::npos) << bounds;
  }
}

// Each buggy variant: the oracle its papers page names, a counterexample whose replay file stores
// at most 60 decisions, reproduced byte for byte from the file's text.
TEST(VisibleSearch, FindsTheBuggyVariantsWithShortReplayableCounterexamples) {
  for (const char *name :
       {"list-to-single-race", "int3-skips-call", "ops-uaf-no-sync", "tramp-free-immediate"}) {
    const Scenario s = corpusScenario(name);
    auto h = makeHarness(s, test::builtImages());
    const CheckReport r = check(*h, optionsFor(s));
    ASSERT_EQ(r.verdict, Verdict::Violation) << name << ": " << r.coverage;
    ASSERT_TRUE(r.minimised) << name;
    EXPECT_EQ(r.minimised->violation.oracle, s.expectOracle) << name;
    EXPECT_LE(storedDecisions(*r.minimised), 60u) << name;
    EXPECT_LE(r.result.stats.executions, 200u) << name; // found early: well under a second
    const std::string file = name + std::string(".json");
    const ReplayFile parsed = parseReplay(replayToJson(s, *r.minimised), file);
    EXPECT_EQ(parsed.counterexample.choices, r.minimised->choices) << name;
    const Reproduction again = reproduce(*h, parsed, file);
    EXPECT_EQ(again.execution.logHash, r.minimised->logHash) << name;
    EXPECT_EQ(again.violation.oracle, s.expectOracle) << name;
  }
}

// The fixed variants: VERIFIED, the search complete within its bound (one deviation here, to keep
// the suite quick; the files state their own).
TEST(VisibleSearch, VerifiesTheFixedVariantsWithinTheBound) {
  for (const char *name :
       {"int3-skips-call-fixed", "tramp-free-sched-sync-nopreempt", "idle-tramp-free"}) {
    const Scenario s = corpusScenario(name);
    auto h = makeHarness(s, test::builtImages());
    const CheckReport r = check(*h, optionsFor(s, 1));
    EXPECT_EQ(r.verdict, Verdict::Verified) << name << ": " << r.coverage;
    EXPECT_TRUE(r.result.stats.complete) << name;
    EXPECT_GT(r.result.stats.executions, 1u) << name;
    EXPECT_EQ(r.result.stats.eventLimitHits, 0u) << name;
  }
}

// A snippet scenario seen as the engine-level search sees a kernel: no DPOR, and a state hash of
// the machine and the patcher's progress (its host code is the protocol, which reads only the
// machine). Its executions cost microseconds and many schedules meet in the same state, which makes
// it the small case where hashing with and without can both be searched to the end.
class HashedSnippet final : public Harness {
public:
  explicit HashedSnippet(Scenario s) : site_(std::move(s)) {}
  const Scenario &scenario() const override { return site_.scenario(); }
  const arch::Arch &arch() const override { return site_.arch(); }
  sim::RunResult runExecution(sim::Scheduler &scheduler,
                              const std::function<bool()> &stop) override {
    return site_.runExecution(scheduler, stop);
  }
  sim::Machine &machine() override { return site_.machine(); }
  const sim::Machine &machine() const override { return site_.machine(); }
  const std::vector<std::uint64_t> &referenceResults() const override {
    return site_.referenceResults();
  }
  std::string symbol(std::uint64_t addr) const override { return site_.symbol(addr); }
  std::string siteOf(std::uint64_t addr) const override { return site_.siteOf(addr); }
  std::string annotate(const sim::EventRecord &e) const override { return site_.annotate(e); }
  std::uint64_t finalStateHash() const override { return site_.finalStateHash(); }
  std::optional<std::uint64_t> midStateHash() const override {
    std::uint64_t patcher = 0;
    for (const sim::EventRecord &e : machine().events())
      patcher += e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish;
    return machine().stateHash() ^ (patcher * 0x9e3779b97f4a7c15ull) ^
           (machine().eventCount() << 32);
  }
  OracleList kindOracles() const override { return site_.kindOracles(); }
  bool reductionSound() const override { return false; }
  bool cheapExecutions() const override { return true; }
  std::vector<std::string> livePatchingFindings() const override {
    return site_.livePatchingFindings();
  }
  std::string describeSetup() const override { return site_.describeSetup(); }

private:
  SiteHarness site_;
};

Scenario snippet(const std::string &protocol) {
  Scenario s;
  s.name = "hashed-snippet";
  s.protocol = protocol;
  s.cpus = 2;
  s.sites.assign(1, Transition::NopToCall);
  s.fetch = &sim::fetchModelByName("atomic");
  return s;
}

// Every schedule within three deviations, with and without hashing: hashing stops executions at
// states expanded before, yet reaches the same verdict and the same final states; twice, the same
// counts.
TEST(VisibleSearch, StateHashingPrunesWithoutChangingTheResultAndIsDeterministic) {
  for (const char *protocol : {"int3", "direct"}) {
    SCOPED_TRACE(protocol);
    HashedSnippet h(snippet(protocol));
    ExploreOptions o;
    o.preemptionBound = 3;
    o.stopAtFirst = false;
    const ExploreResult hashed = explore(h, o);
    o.stateHashing = false;
    const ExploreResult plain = explore(h, o);
    ASSERT_TRUE(hashed.stats.complete);
    ASSERT_TRUE(plain.stats.complete);
    EXPECT_EQ(hashed.counterexample.has_value(), plain.counterexample.has_value());
    if (hashed.counterexample) {
      EXPECT_EQ(hashed.counterexample->violation.oracle, plain.counterexample->violation.oracle);
    }
    EXPECT_GT(hashed.stats.revisits, 0u);
    EXPECT_EQ(plain.stats.revisits, 0u);
    EXPECT_EQ(plain.stats.hashedStates, 0u);
    EXPECT_LT(hashed.stats.executions + hashed.stats.events,
              plain.stats.executions + plain.stats.events);
    EXPECT_EQ(hashed.stats.distinctStates, plain.stats.distinctStates);

    o.stateHashing = true;
    ExploreStats again = explore(h, o).stats;
    ExploreStats first = hashed.stats;
    again.seconds = first.seconds = 0;
    EXPECT_EQ(again, first);
  }
}

// A buggy variant twice: the same executions and the same counterexample.
TEST(VisibleSearch, TheSameScenarioGivesTheSameCounterexample) {
  const Scenario s = corpusScenario("ops-uaf-no-sync");
  auto h = makeHarness(s, test::builtImages());
  ExploreOptions o = optionsFor(s);
  const ExploreResult a = explore(*h, o);
  const ExploreResult b = explore(*h, o);
  ASSERT_TRUE(a.counterexample);
  ASSERT_TRUE(b.counterexample);
  EXPECT_EQ(a.stats.executions, b.stats.executions);
  EXPECT_EQ(a.counterexample->choices, b.counterexample->choices);
  EXPECT_EQ(a.counterexample->logHash, b.counterexample->logHash);
}

} // namespace
} // namespace ftsim::verify
