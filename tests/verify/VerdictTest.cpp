// Verdicts that never overclaim (Verdict.h), and the one spine every kind of scenario shares: a
// toy oracle registered here is applied to executions of every kind.

#include "Corpus.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/prove/Prove.h"

#include <gtest/gtest.h>

namespace ftsim::verify {
namespace {

Scenario site(const std::string &protocol) {
  Scenario s;
  s.name = "verdict";
  s.protocol = protocol;
  return s;
}

CheckReport checkSite(const Scenario &s) {
  SiteHarness harness(s);
  return check(harness, exploreOptionsFor(s));
}

TEST(Verdict, WordsAndExitStatusesAreTheReadmesTable) {
  EXPECT_EQ(exitStatus(Verdict::Verified), 0);
  EXPECT_EQ(exitStatus(Verdict::NoViolation), 0);
  EXPECT_EQ(exitStatus(Verdict::Violation), 1);
  EXPECT_EQ(exitStatus(Verdict::BadInput), 2);
  EXPECT_EQ(exitStatus(Verdict::Incomplete), 3);
  EXPECT_EQ(verdictWord(Verdict::Incomplete), "INCOMPLETE");
}

// Every execution cut at max_events: nothing was shown, whatever the protocol.
TEST(Verdict, ExecutionsCutAtMaxEventsAreIncompleteNeverVerified) {
  for (std::uint64_t maxEvents = 1; maxEvents <= 8; ++maxEvents)
    for (const char *protocol : {"int3", "direct"}) {
      SCOPED_TRACE(std::string(protocol) + " max_events " + std::to_string(maxEvents));
      Scenario s = site(protocol);
      s.bounds.maxEvents = maxEvents;
      const CheckReport r = checkSite(s);
      EXPECT_EQ(r.verdict, Verdict::Incomplete);
      EXPECT_GT(r.result.stats.eventLimitHits, 0u);
      EXPECT_NE(r.incomplete.find("cut at max_events = " + std::to_string(maxEvents)),
                std::string::npos)
          << r.incomplete;
    }
}

TEST(Verdict, ABudgetThatRunsOutIsIncomplete) {
  Scenario s = site("int3");
  s.cpus = 3;
  s.bounds.maxExecutions = 20;
  const CheckReport r = checkSite(s);
  EXPECT_EQ(r.verdict, Verdict::Incomplete);
  EXPECT_FALSE(r.result.stats.complete);
  EXPECT_NE(r.incomplete.find("execution budget (20) ran out"), std::string::npos) << r.incomplete;
  // The same scenario with room to finish is verified.
  s.cpus = 2;
  s.bounds.maxExecutions = 200000;
  EXPECT_EQ(checkSite(s).verdict, Verdict::Verified);
}

TEST(Verdict, RandomisedSearchSaysNoViolationNotVerified) {
  Scenario s = site("int3");
  s.explore.explorer = "random";
  s.explore.runs = 20;
  const CheckReport r = checkSite(s);
  EXPECT_EQ(r.verdict, Verdict::NoViolation);
  EXPECT_EQ(exitStatus(r.verdict), 0);
  EXPECT_NE(r.coverage.find("20 random runs"), std::string::npos);
}

TEST(Verdict, MinimisedIsNeverLongerThanFound) {
  for (const char *protocol : {"direct", "int3-nosync1", "int3-late-vector"}) {
    SCOPED_TRACE(protocol);
    const CheckReport r = checkSite(site(protocol));
    ASSERT_EQ(r.verdict, Verdict::Violation);
    // Fewest preemptions, then fewest events: never more preemptions, and no more events when
    // as many.
    EXPECT_LE(r.minimised->preemptions, r.found->preemptions);
    if (r.minimised->preemptions == r.found->preemptions) {
      EXPECT_LE(r.minimised->events, r.found->events);
    }
  }
}

TEST(Verdict, ProveSaysShownUnsafeForStrategiesMeantToFailAndExitsZero) {
  ProveRequest q;
  q.quiescenceOnly = true;
  const ProveReport all = prove(q);
  EXPECT_EQ(all.verdict, Verdict::Verified) << all.text;
  EXPECT_NE(all.text.find("shown unsafe (as expected)"), std::string::npos) << all.text;
  EXPECT_EQ(all.text.find("FAILED"), std::string::npos) << all.text;
  q.trampFree = "immediate"; // meant to fail: shown unsafe, no failure
  EXPECT_EQ(prove(q).verdict, Verdict::Verified);
  // A proof that should hold and fails is the violation: plain word stores over an x86 site.
  ProveRequest b;
  b.arch = "x86_64";
  b.protocol = "direct";
  b.store = "word";
  b.fetch = "stale";
  b.siteOffset = 6;
  const ProveReport direct = prove(b);
  EXPECT_EQ(direct.verdict, Verdict::Violation) << direct.text;
  EXPECT_NE(direct.text.find("FAILED"), std::string::npos);
}

TEST(Verdict, ASiteOffsetTheIsaCannotHaveIsBadInputNotAProof) {
  ProveRequest q;
  q.arch = "ppc32";
  q.siteOffset = 3;
  EXPECT_THROW(prove(q), FatalError);
}

// check runs every oracle that applies: on powerpc the ISA's live-patching rule (CMODX) too.
TEST(Verdict, CheckAppliesTheIsasLivePatchingRule) {
  auto listed = [](const Harness &h) {
    for (const auto &o : oraclesFor(h))
      if (o->name() == "live-patching")
        return true;
    return false;
  };
  Scenario ppc = site("word-trap-first"); // a trap written over live text: not patch-class
  ppc.arch = "ppc32";
  ppc.store = sim::StoreModel::Word;
  SiteHarness trapFirst(ppc);
  EXPECT_TRUE(listed(trapFirst));
  const CheckReport r = check(trapFirst, exploreOptionsFor(ppc));
  ASSERT_EQ(r.verdict, Verdict::Violation);
  EXPECT_EQ(r.minimised->violation.oracle, "live-patching");
  EXPECT_NE(r.minimised->violation.message.find("not a patch-class"), std::string::npos);
  ppc.protocol = "patch-instruction"; // Linux's patch_instruction(): one patch-class word
  SiteHarness word(ppc);
  EXPECT_EQ(check(word, exploreOptionsFor(ppc)).verdict, Verdict::Verified);
  SiteHarness x86(site("int3")); // x86 has no such rule
  EXPECT_FALSE(listed(x86));
}

// --- One spine: a toy oracle registered from here applies to every kind -------------------------

class ToyOracle final : public Oracle {
public:
  std::string_view name() const override { return "toy"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    ++checked;
    if (!x.machine.events().empty())
      out.push_back(violationAt("toy", 0, "the toy oracle saw an execution"));
  }
  mutable unsigned checked = 0;
};

TEST(Spine, ARegisteredOracleIsAppliedToEveryKindOfScenario) {
  auto toy = std::make_shared<ToyOracle>();
  OracleRegistration registration(toy);
  const HarnessEnv env = test::builtImages();
  for (const char *file :
       {"torn-nop-to-call-fixed", "list-to-single-race-fixed", "tramp-free-rcu-tasks"}) {
    SCOPED_TRACE(file);
    Scenario s = test::corpusScenario(file);
    s.explore.runs = 1;
    s.bounds.maxExecutions = 1;
    auto harness = makeHarness(s, env);
    bool listed = false;
    for (const auto &o : oraclesFor(*harness))
      listed |= o.get() == toy.get();
    EXPECT_TRUE(listed);
    const unsigned before = toy->checked;
    const CheckReport r = check(*harness, exploreOptionsFor(s));
    EXPECT_GT(toy->checked, before);
    ASSERT_EQ(r.verdict, Verdict::Violation);
    EXPECT_EQ(r.minimised->violation.oracle, "toy");
  }
}

TEST(Spine, AnOracleIsGoneWhenItsRegistrationEnds) {
  std::size_t before = registeredOracles().size();
  {
    OracleRegistration registration(std::make_shared<ToyOracle>());
    EXPECT_EQ(registeredOracles().size(), before + 1);
  }
  EXPECT_EQ(registeredOracles().size(), before);
}

} // namespace
} // namespace ftsim::verify
