// The exhaustive tree split into subtrees (Subtrees.h): the same executions, states, verdict and
// counterexample whatever the number of worker threads, and the same final states as one tree.

#include "ftsim/verify/explore/Subtrees.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/explore/PieceQueue.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/replay/Replay.h"

#include <gtest/gtest.h>

#include <mutex>
#include <numeric>

namespace ftsim::verify {
namespace {

Scenario site(const std::string &protocol, unsigned cpus, unsigned sites, int bound = -1) {
  Scenario s;
  s.name = "split";
  s.protocol = protocol;
  s.cpus = cpus;
  s.sites.assign(sites, Transition::NopToCall);
  s.bounds.preemptions = bound;
  return s;
}

ExploreOptions splitOptions(const Scenario &s, unsigned subtrees, unsigned jobs) {
  ExploreOptions o = exploreOptionsFor(s);
  o.subtrees = subtrees;
  o.jobs = jobs;
  o.newHarness = [s] { return std::make_unique<SiteHarness>(s); };
  return o;
}

struct Case {
  const char *protocol;
  unsigned cpus, sites;
  int bound;
  bool violation;
};

// Verified and violating scenarios, with and without a preemption bound.
const Case kCases[] = {
    {"int3", 2, 1, -1, false},  {"int3", 2, 2, -1, false},  {"int3", 3, 1, 1, false},
    {"direct", 2, 1, -1, true}, {"direct", 3, 2, -1, true}, {"int3-nosync2", 2, 1, -1, true},
};

TEST(Subtrees, SameExecutionsStatesAndCounterexampleForEveryNumberOfWorkers) {
  for (const Case &c : kCases) {
    const Scenario s = site(c.protocol, c.cpus, c.sites, c.bound);
    SCOPED_TRACE(s.describe() + " bound " + std::to_string(c.bound));
    std::optional<CheckReport> first;
    std::string firstReplay;
    for (unsigned jobs : {1u, 2u, 3u}) {
      SiteHarness h(s);
      const ExploreOptions o = splitOptions(s, 16, jobs);
      const CheckReport r = check(h, o);
      std::string replay = r.minimised ? replayToJson(s, *r.minimised) : "";
      EXPECT_EQ(r.verdict, c.violation ? Verdict::Violation : Verdict::Verified);
      EXPECT_GE(r.result.stats.subtrees, c.violation ? 1u : 2u);
      if (!first) {
        first = r;
        firstReplay = replay;
        continue;
      }
      ExploreStats a = first->result.stats, b = r.result.stats;
      a.seconds = b.seconds = 0;
      EXPECT_EQ(a, b) << "jobs " << jobs;
      EXPECT_EQ(first->result.violatingExecutions, r.result.violatingExecutions);
      EXPECT_EQ(first->found, r.found) << "jobs " << jobs;
      EXPECT_EQ(firstReplay, replay) << "jobs " << jobs; // the replay file, byte for byte
    }
  }
}

// Subtrees searched as pieces of 4 executions (so that every subtree of these small trees splits):
// worker threads sharing the pieces out, and one runner searching each subtree's pieces in
// depth-first order (what a --subtree file and an MPI rank do), give the same result.
TEST(Subtrees, PiecesGiveTheSameResultWhoeverSearchesThem) {
  for (const Case &c : kCases) {
    const Scenario s = site(c.protocol, c.cpus, c.sites, c.bound);
    SCOPED_TRACE(s.describe() + " bound " + std::to_string(c.bound));
    SiteHarness sequential(s);
    ExploreOptions o = splitOptions(s, 4, 1);
    o.pieceExecutions = 4;
    const SubtreeRunner runner(sequential, o);
    std::map<std::uint32_t, SubtreeResult> results;
    std::size_t splits = 0;
    for (std::uint32_t i = 0; i < runner.plan().count; ++i) {
      results[i] = runner.run(i);
      splits += !runner.runPiece(SubtreePiece{i, {}, nullptr}).rest.empty();
      if (mergeStop(results, o))
        break;
    }
    if (!c.violation) {
      EXPECT_GT(splits, 0u) << "no subtree split into pieces: the test proves nothing";
    }
    Exploration x(sequential, o);
    mergeSubtrees(x, runner.plan(), results, 0);
    ExploreStats want = x.result(true).stats;
    want.seconds = 0;
    for (unsigned jobs : {1u, 2u, 3u}) {
      SiteHarness h(s);
      ExploreOptions oj = splitOptions(s, 4, jobs);
      oj.pieceExecutions = 4;
      ExploreResult r = explore(h, oj);
      r.stats.seconds = 0;
      EXPECT_EQ(want, r.stats) << "jobs " << jobs;
      EXPECT_EQ(x.counterexample().has_value(), r.counterexample.has_value());
      if (r.counterexample && x.counterexample()) {
        EXPECT_EQ(x.counterexample()->choices, r.counterexample->choices) << "jobs " << jobs;
      }
      EXPECT_EQ(r.stats.complete, !c.violation);
    }
  }
}

// What MPI ranks send each other: a piece searched on the far side of a message gives what it
// gives here; a damaged message is an error, never a piece.
TEST(Subtrees, APieceSentAsBytesSearchesAsTheOriginal) {
  const Scenario s = site("int3", 2, 2);
  SiteHarness h(s);
  ExploreOptions o = splitOptions(s, 4, 1);
  o.pieceExecutions = 4;
  const SubtreeRunner runner(h, o);
  std::optional<PieceOutcome> split;
  for (std::uint32_t i = 0; i < runner.plan().count && !split; ++i)
    if (PieceOutcome out = runner.runPiece(SubtreePiece{i, {}, nullptr}); !out.rest.empty())
      split = std::move(out);
  ASSERT_TRUE(split) << "no subtree split: the test proves nothing";
  const PieceOutcome back = decodeOutcome(encodeOutcome(*split));
  EXPECT_EQ(back.result, split->result);
  ASSERT_EQ(back.rest.size(), split->rest.size());
  for (std::size_t k = 0; k < back.rest.size(); ++k) {
    const SubtreePiece sent = decodePiece(encodePiece(split->rest[k]));
    EXPECT_EQ(sent.path, split->rest[k].path);
    PieceOutcome here = runner.runPiece(split->rest[k]), there = runner.runPiece(sent);
    EXPECT_EQ(here.result, there.result) << "piece " << k;
    EXPECT_EQ(here.rest.size(), there.rest.size()) << "piece " << k;
  }
  const std::string bytes = encodePiece(split->rest[0]);
  EXPECT_THROW(decodePiece(bytes.substr(0, bytes.size() / 2)), FatalError);
  EXPECT_THROW(decodePiece(bytes + "x"), FatalError);
  EXPECT_THROW(decodeOutcome("nonsense"), FatalError);
}

// What MPI ranks do before MPI is up: the odd subtrees searched whole without being taken
// (claimed afterwards, as rank 1's opening share), the rest taken from the queue but never one of
// that share until it came in. The merge is the one of a single worker.
TEST(Subtrees, AShareSearchedBeforeItIsClaimedMergesLikeTheRest) {
  for (const Case &c : kCases) {
    const Scenario s = site(c.protocol, c.cpus, c.sites, c.bound);
    SCOPED_TRACE(s.describe() + " bound " + std::to_string(c.bound));
    SiteHarness h(s);
    ExploreOptions o = splitOptions(s, 16, 1);
    o.pieceExecutions = 4;
    const SubtreeRunner runner(h, o);
    ExploreResult want = explore(h, o);
    want.stats.seconds = 0;

    std::vector<std::uint32_t> all(runner.plan().count);
    std::iota(all.begin(), all.end(), 0u);
    PieceQueue queue(o, all);
    std::map<std::uint32_t, SubtreeResult> results;
    std::vector<std::pair<std::uint32_t, PieceOutcome>> share; // searched before it is claimed
    for (std::uint32_t i = 1; i < runner.plan().count; i += 2)
      share.emplace_back(i, runner.runPiece(SubtreePiece{i, {}, nullptr, 1}));
    bool shareIn = false;
    const auto may = [&](const SubtreePiece &p) {
      return shareIn || !p.path.empty() || p.index % 2 == 0;
    };
    while (true) {
      std::optional<SubtreePiece> piece = queue.take(may);
      if (!piece && !shareIn) {
        // Still to come, unless a counterexample before them had them dropped.
        EXPECT_EQ(queue.drained(), share.empty() || share[0].first > queue.stopsAfter());
        for (auto &[i, out] : share) {
          std::optional<SubtreePiece> claimed = queue.claim(i);
          ASSERT_TRUE(claimed || i > queue.stopsAfter()) << "subtree " << i;
          if (claimed)
            queue.finished(*claimed, std::move(out));
        }
        EXPECT_FALSE(queue.claim(1)) << "claimed twice";
        shareIn = true;
        continue;
      }
      for (SubtreeResult &r : queue.results())
        results[r.index] = std::move(r);
      if (auto stop = mergeStop(results, o))
        queue.stopAfter(*stop);
      if (!piece)
        break;
      EXPECT_TRUE(shareIn || piece->index % 2 == 0 || !piece->path.empty());
      queue.finished(*piece, runner.runPiece(*piece));
    }
    EXPECT_TRUE(queue.drained());
    Exploration x(h, o);
    mergeSubtrees(x, runner.plan(), results, 0);
    ExploreResult got = x.result(true);
    got.stats.seconds = 0;
    EXPECT_EQ(want.stats, got.stats);
    EXPECT_EQ(want.counterexample.has_value(), got.counterexample.has_value());
    if (want.counterexample && got.counterexample) {
      EXPECT_EQ(want.counterexample->choices, got.counterexample->choices);
    }
  }
}

TEST(Subtrees, ASplitTreeReachesTheFinalStatesOfTheWholeTree) {
  for (const Case &c : kCases) {
    if (c.violation)
      continue;
    const Scenario s = site(c.protocol, c.cpus, c.sites, c.bound);
    SCOPED_TRACE(s.describe());
    SiteHarness whole(s), split(s);
    ExploreOptions one = exploreOptionsFor(s);
    const ExploreResult w = explore(whole, one);
    ASSERT_TRUE(w.stats.complete);
    for (std::uint64_t piece : {std::uint64_t{1024}, std::uint64_t{2}}) {
      SCOPED_TRACE("pieces of " + std::to_string(piece) + " executions");
      ExploreOptions o = splitOptions(s, 16, 2);
      o.pieceExecutions = piece;
      const ExploreResult p = explore(split, o);
      ASSERT_TRUE(p.stats.complete);
      // Without a bound both are complete reductions: the same final states. With one, DPOR is
      // not complete for every bounded schedule (Explore.h), and the split tree, which explores
      // more above its frontier, may reach more.
      if (c.bound < 0)
        EXPECT_EQ(w.stats.distinctStates, p.stats.distinctStates);
      else
        EXPECT_GE(p.stats.distinctStates, w.stats.distinctStates);
      // Sleep sets alone above the frontier: never fewer executions than source-DPOR there.
      EXPECT_GE(p.stats.executions, w.stats.executions);
    }
  }
}

TEST(Subtrees, TheBudgetIsCountedInTreeOrderWhateverTheWorkers) {
  const Scenario s = site("int3", 2, 2);
  std::optional<ExploreStats> first;
  for (unsigned jobs : {1u, 2u, 3u}) {
    SiteHarness h(s);
    ExploreOptions o = splitOptions(s, 16, jobs);
    o.maxExecutions = 300;
    ExploreStats st = explore(h, o).stats;
    st.seconds = 0;
    EXPECT_FALSE(st.complete);
    EXPECT_GE(st.executions, 300u);
    if (!first)
      first = st;
    else
      EXPECT_EQ(*first, st) << "jobs " << jobs;
  }
}

// The workers build their harnesses while the tree is planned, as many as the subtrees asked for;
// a plan with more subtrees starts the other workers after it, and a harness that cannot be built
// stops the search with its own error.
TEST(Subtrees, WorkersBuiltBeforeThePlanEndWithItsResultOrTheirError) {
  const Scenario s = site("int3", 2, 1);
  SiteHarness one(s);
  ExploreStats a = explore(one, splitOptions(s, 7, 1)).stats;
  ASSERT_TRUE(a.complete);
  ASSERT_GT(a.subtrees, 7u); // 8: one worker more than those built early
  SiteHarness many(s);
  ExploreStats b = explore(many, splitOptions(s, 7, 12)).stats;
  a.seconds = b.seconds = 0;
  EXPECT_EQ(a, b);

  SiteHarness h(s);
  ExploreOptions o = splitOptions(s, 16, 3);
  int built = 0;
  std::mutex mutex;
  o.newHarness = [&]() -> std::unique_ptr<Harness> {
    std::lock_guard lock(mutex);
    if (++built == 2)
      throw FatalError("the second worker's harness");
    return std::make_unique<SiteHarness>(s);
  };
  try {
    explore(h, o);
    ADD_FAILURE() << "the search went on without a worker";
  } catch (const FatalError &e) {
    EXPECT_STREQ(e.what(), "the second worker's harness");
  }
  EXPECT_EQ(built, 2);
}

// Workers started before the first harness is built (startWorkers, as `ftsim check` does) serve
// the first split search only, with its result; a second search with the same options starts its
// own workers rather than wait for spent ones.
TEST(Subtrees, WorkersStartedBeforeTheFirstHarnessServeOneSearch) {
  const Scenario s = site("int3", 2, 1);
  SiteHarness one(s);
  ExploreStats a = explore(one, splitOptions(s, 7, 1)).stats;
  ExploreOptions o = splitOptions(s, 7, 3);
  int built = 0;
  std::mutex mutex;
  o.newHarness = [&]() -> std::unique_ptr<Harness> {
    std::lock_guard lock(mutex);
    ++built;
    return std::make_unique<SiteHarness>(s);
  };
  EXPECT_EQ(startWorkers(splitOptions(s, 0, 3)), nullptr); // one tree: no workers
  EXPECT_EQ(startWorkers(splitOptions(s, 7, 1)), nullptr); // one job: none
  Scenario onLinux = s; // its first harness may build a kernel tree's objects first
  onLinux.kernel = "6.12";
  EXPECT_EQ(startWorkers(onLinux, splitOptions(s, 7, 3)), nullptr);
  o.crew = startWorkers(s, o);
  ASSERT_NE(o.crew, nullptr);
  SiteHarness first(s);
  for (int search = 0; search < 2; ++search) {
    ExploreStats b = explore(first, o).stats;
    a.seconds = b.seconds = 0;
    EXPECT_EQ(a, b) << "search " << search;
  }
  EXPECT_EQ(built, 4); // two workers each time
}

// The progress line's estimate: finished subtrees count as themselves, a running one as its
// executions over the share of it searched, every subtree not started as the mean of those.
TEST(SubtreeEstimate, RunningSubtreesCountByTheShareOfThemSearched) {
  EXPECT_EQ(estimateExecutions(10, {}), 0u);
  EXPECT_EQ(estimateExecutions(10, {3, 5}), 40u); // count x mean: Knuth's estimator
  // 100 executions a quarter of the way through: 400; the mean of {3, 5, 400} for 7 others.
  EXPECT_EQ(estimateExecutions(10, {3, 5}, {{100, 0.25}}), 408u + 7u * 136u);
  // A path that says less than the executions (no share yet) counts the executions only.
  EXPECT_EQ(estimateExecutions(2, {}, {{50, 0.0}, {50, 0.001}}), 100u);
}

// The estimate a split search reports converges on the executions it makes: its last report is
// exact, and no report is below the executions already made.
TEST(SubtreeEstimate, TheLastReportIsTheTreesSizeAndNoReportIsBelowTheExecutionsMade) {
  const Scenario s = site("int3", 2, 2);
  for (unsigned jobs : {1u, 2u}) {
    SiteHarness h(s);
    ExploreOptions o = splitOptions(s, 16, jobs);
    std::vector<ExploreStats> reports;
    o.progressEvery = std::chrono::milliseconds(1);
    o.progress = [&](const ExploreStats &p) { reports.push_back(p); };
    const ExploreResult r = explore(h, o);
    ASSERT_TRUE(r.stats.complete);
    ASSERT_FALSE(reports.empty());
    for (const ExploreStats &p : reports) {
      if (p.estimatedExecutions) {
        EXPECT_GE(p.estimatedExecutions, p.executions);
      }
    }
    EXPECT_EQ(reports.back().executions, r.stats.executions) << "jobs " << jobs;
    EXPECT_EQ(reports.back().estimatedExecutions, r.stats.executions) << "jobs " << jobs;
  }
}

} // namespace
} // namespace ftsim::verify
