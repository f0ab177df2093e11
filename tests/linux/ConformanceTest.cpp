// ftsim's C++ int3 protocol against the tree's own text_poke_queue()/text_poke_finish() and
// poke_int3_handler() (verify/prove/Conformance.h, papers/conformance.md).

#include "LinuxTestSupport.h"

#include "ftsim/verify/prove/Conformance.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <numeric>

namespace ftsim::verify {
namespace {

using linuxk::test::guest612;

std::string explain(const ConformanceBatch &b) {
  if (!b.difference)
    return "same";
  return fmt::format("{}: step {} {}: model '{}', tree '{}'", describeSites(b.sites),
                     b.difference->step, differenceKindName(b.difference->kind),
                     b.difference->model, b.difference->tree);
}

// Random batches of 1..8 distinct traced sites, each with a random transition, store model byte:
// the model and the tree make the same stores and syncs in the same order, and the tree's handler
// and the model's agree on every site after every step — or the difference is a documented one.
RC_GTEST_PROP(Conformance, RandomBatchesMatchTheTreeStoreBySyncByHandlerState, ()) {
  const linuxk::LinuxGuest &g = guest612();
  const std::size_t traced = g.image.mcountLocs.size();
  RC_ASSERT(traced >= 8u); // batches of up to 8 distinct sites
  std::vector<std::size_t> order(traced);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // gen::inRange scales with the size (small sizes give the low end only): pick uniformly.
  const auto n = *rc::gen::elementOf(std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8});
  const auto shuffled = *rc::gen::unique<std::vector<std::size_t>>(n, rc::gen::elementOf(order));
  std::vector<std::pair<std::size_t, ConformanceChange>> picks;
  for (std::size_t i = 0; i < n; ++i)
    picks.emplace_back(
        shuffled[i], *rc::gen::element(ConformanceChange::NopToCall, ConformanceChange::CallToNop,
                                       ConformanceChange::CallToCall, ConformanceChange::NopToInt3,
                                       ConformanceChange::NopToRet));
  const ConformanceBatch b = compareBatch(g, sim::StoreModel::Byte, conformanceSites(g, picks));
  RC_ASSERT(b.modelSteps > 0u);
  if (b.difference)
    RC_FAIL(explain(b));
}

TEST(Conformance, TheTreesHandlerIsArmedFromTheStartUntilTheVectorIsWithdrawn) {
  const linuxk::LinuxGuest &g = guest612();
  const auto sites =
      conformanceSites(g, {{0, ConformanceChange::NopToCall}, {2, ConformanceChange::CallToNop}});
  const ConformanceTrace tree = treeConformanceTrace(g, sim::StoreModel::Byte, sites);
  ASSERT_EQ(tree.failure, "");
  // 2 int3s, sync, 2 x 4 tail bytes, sync, 2 first bytes, sync.
  ASSERT_EQ(tree.steps.size(), 15u);
  EXPECT_EQ(tree.armedBefore, (std::vector<bool>{true, true}));
  for (std::size_t i = 0; i + 1 < tree.steps.size(); ++i)
    EXPECT_EQ(tree.steps[i].armed, (std::vector<bool>{true, true})) << i;
  EXPECT_EQ(tree.steps.back().kind, TraceStep::Kind::Sync);
  EXPECT_EQ(tree.steps.back().armed, (std::vector<bool>{false, false}));
  EXPECT_EQ(tree.steps[0].bytes, arch::Bytes{0xcc});
  EXPECT_EQ(tree.steps[0].addr, sites[0].addr);
  // Where the tree's handler sends a trapped CPU: the new call's target, its return address
  // pushed; the new nop jumped over.
  const TrapResume call{g.symbol("ftsim_tracer"), sites[0].addr + 5};
  const TrapResume nop{sites[1].addr + 5, 0};
  EXPECT_EQ(tree.resumeBefore, (std::vector<TrapResume>{call, nop}));
  EXPECT_EQ(tree.steps.back().resume, (std::vector<TrapResume>{{}, {}}));
}

// The check can fail: each mutant of the C++ protocol differs from the tree, and the first
// difference names what the mutant changed.
TEST(Conformance, MutantsOfTheModelAreCaughtAtTheirFirstDifference) {
  const linuxk::LinuxGuest &g = guest612();
  const auto sites =
      conformanceSites(g, {{0, ConformanceChange::NopToCall}, {3, ConformanceChange::CallToCall}});
  const ConformanceTrace tree = treeConformanceTrace(g, sim::StoreModel::Byte, sites);
  struct Case {
    const char *protocol;
    DifferenceKind kind;
    std::size_t step;
  };
  // Steps: 0,1 int3s; 2 sync; 3..10 tails; 11 sync; 12,13 first bytes; 14 sync.
  for (const Case &c : {Case{"int3-nosync1", DifferenceKind::SyncOnlyInTree, 2},
                        Case{"int3-nosync2", DifferenceKind::SyncOnlyInTree, 11},
                        Case{"int3-swapped", DifferenceKind::StoreTarget, 3},
                        Case{"int3-late-vector", DifferenceKind::ArmedBefore, 0},
                        Case{"int3-nobsearch", DifferenceKind::ArmedBefore, 0},
                        Case{"int3-skip", DifferenceKind::Emulation, 0},
                        Case{"int3-nosync3", DifferenceKind::Armed, 13}}) {
    const auto d =
        firstDifference(modelConformanceTrace(sim::StoreModel::Byte, sites, c.protocol), tree);
    ASSERT_TRUE(d.has_value()) << c.protocol;
    EXPECT_EQ(differenceKindName(d->kind), differenceKindName(c.kind)) << c.protocol;
    EXPECT_EQ(d->step, c.step) << c.protocol << ": model '" << d->model << "', tree '" << d->tree
                               << "'";
  }
  EXPECT_FALSE(firstDifference(modelConformanceTrace(sim::StoreModel::Byte, sites), tree));
}

// text_poke_bp_batch()'s do_sync: with no entry longer than one byte there is no tail, so no sync
// after the tails; an entry whose new byte is an int3 keeps it, so no first byte and no final sync.
TEST(Conformance, OneByteInt3RequestsSkipTheLaterPhasesSyncsInTheTreeAndTheModel) {
  const linuxk::LinuxGuest &g = guest612();
  const auto sites =
      conformanceSites(g, {{1, ConformanceChange::NopToInt3}, {6, ConformanceChange::NopToInt3}});
  const ConformanceTrace tree = treeConformanceTrace(g, sim::StoreModel::Byte, sites);
  ASSERT_EQ(tree.failure, "");
  ASSERT_EQ(tree.steps.size(), 3u);
  EXPECT_EQ(tree.steps[0].bytes, arch::Bytes{0xcc});
  EXPECT_EQ(tree.steps[1].bytes, arch::Bytes{0xcc});
  EXPECT_EQ(tree.steps[2].kind, TraceStep::Kind::Sync);
  // The tree's handler declines an int3 the batch itself asked for ("do not consume").
  EXPECT_EQ(tree.armedBefore, (std::vector<bool>{false, false}));
  EXPECT_FALSE(firstDifference(modelConformanceTrace(sim::StoreModel::Byte, sites), tree));
  // Mixed with a call: the tails' and the first bytes' syncs come back, for the call's sake.
  const auto mixed =
      conformanceSites(g, {{1, ConformanceChange::NopToInt3}, {6, ConformanceChange::NopToRet}});
  const ConformanceBatch b = compareBatch(g, sim::StoreModel::Byte, mixed);
  EXPECT_FALSE(b.difference) << explain(b);
  EXPECT_EQ(b.treeSteps, 2u + 1 + 4 + 1 + 1 + 1);
}

TEST(Conformance, TheWordStoreModelSplitsBothSidesAlike) {
  const linuxk::LinuxGuest &g = guest612();
  const auto sites =
      conformanceSites(g, {{5, ConformanceChange::CallToNop}, {7, ConformanceChange::NopToCall}});
  const ConformanceBatch b = compareBatch(g, sim::StoreModel::Word, sites);
  EXPECT_FALSE(b.difference) << explain(b);
  EXPECT_LT(b.treeSteps, 15u); // a 4-byte tail is fewer than 4 stores unless it straddles
}

TEST(Conformance, SeededRunsAreDeterministic) {
  const linuxk::LinuxGuest &g = guest612();
  ConformanceOptions o;
  o.batches = 5;
  o.seed = 7;
  const auto a = randomConformanceBatches(g.image.mcountLocs.size(), o);
  const auto b = randomConformanceBatches(g.image.mcountLocs.size(), o);
  EXPECT_EQ(a, b);
  o.seed = 8;
  EXPECT_NE(a, randomConformanceBatches(g.image.mcountLocs.size(), o));
}

} // namespace
} // namespace ftsim::verify
