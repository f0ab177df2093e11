#pragma once
// The exhaustive explorer's tree split into subtrees, for worker threads (--jobs), other
// processes or machines (--split/--subtree/merge), and checkpoints (--checkpoint/--resume).
//
// How the tree is split, and why the result does not depend on who runs what. Source-DPOR adds
// alternatives to a node while it explores the node's subtrees (a race found deep down puts an
// option into an ancestor's backtrack set), and a sibling's sleep set depends on the siblings
// explored before it: handing out a node's siblings to workers while its backtrack set can still
// grow would make the set of executions depend on timing. So the tree is split only where sibling
// sets are final: above a frontier depth F every awake option within the preemption bound is
// explored (sleep sets still apply there — sleep sets alone are a sound reduction), and below it
// source-DPOR runs as usual. A race found below the frontier that points above it adds nothing
// (every option there is explored anyway), so each subtree below the frontier is self-contained:
// its root stack (the decisions above it, and what the earlier siblings did, which its sleep set
// needs) is computed once, sequentially, in depth-first order, and searching it never looks at
// another subtree. Subtrees are numbered in depth-first order; each is searched deterministically;
// results are merged in that order: executions, states and statistics are sums (distinct final
// states a union), and the counterexample is the first one of the first violating subtree — the
// one a sequential depth-first search of the same split tree stops at. Subtrees after it are
// dropped from the totals, whether or not a worker had started them.
//
// Subtree sizes are heavy-tailed (one subtree of the 3-CPU int3 tree holds 74% of it), so a subtree
// is itself searched as pieces: a piece runs at most pieceExecutions executions (doubled with each
// split that led to it), then what is left of it becomes two pieces (detail::searchItem: the nodes
// above what is left are made full, so that the pieces are independent of each other, like
// subtrees). Where a piece splits depends
// only on the tree, so the pieces, their executions and the subtree's result are the same whether
// one thread searches them in depth-first order (a `--subtree` file) or several workers or MPI
// ranks share them out (PieceQueue.h); the full nodes cost a few more executions than an unsplit
// subtree.
//
// F is the smallest depth with at least `subtrees` roots (a property of the scenario and the
// bounds, never of the number of workers), so `--jobs 1`, `--jobs 8`, split files and resumed
// checkpoints all search the same tree. The price: above F the search is sleep-set only, so a
// split tree has a few more executions than the unsplit one (`subtrees` = 0), which stays the
// default of the library.
//
// The execution budget (max_executions) is checked between pieces and between subtrees in
// depth-first order: the pieces and subtrees after the one where the running total reaches it are
// dropped (INCOMPLETE).

#include "ftsim/verify/explore/Explore.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

namespace detail {
struct SearchItem;
}

// The split of a scenario's tree.
struct SubtreePlan {
  std::size_t depth = 0;       // the frontier depth F (decisions)
  std::uint32_t count = 0;     // subtrees
  std::uint64_t boundCuts = 0; // options removed by the preemption bound above the frontier
  std::uint64_t digest = 0;    // FNV-1a of every root's decisions: the same tree, the same digest
};

// One searched subtree.
struct SubtreeResult {
  std::uint32_t index = 0;
  ExploreStats stats;                // complete: the subtree was searched to the end
  std::vector<std::uint64_t> states; // distinct final state hashes, sorted
  std::uint64_t violatingExecutions = 0;
  std::optional<Counterexample>
      counterexample; // its first violation (choices, preemptions, events)
  bool operator==(const SubtreeResult &) const = default;
};

// A piece's place in its subtree's depth-first order: {} is the subtree's root; each split appends
// 0 for the branch it stood on, with what is below it, and 1 for the later branches.
using PiecePath = std::vector<std::uint32_t>;

// A piece of subtree `index`: its place (`path`) and where its search resumes (null: the subtree's
// root).
struct SubtreePiece {
  std::uint32_t index = 0;
  PiecePath path;
  std::shared_ptr<const detail::SearchItem> item;
  double share = 1; // its estimated share of the subtree's executions
};
// A searched piece: its own executions, and the pieces what is left of it was split into.
struct PieceOutcome {
  SubtreeResult result;
  std::vector<SubtreePiece> rest;
};
// A subtree's result from its pieces' results (any order): summed in depth-first order (the
// paths' order), up to the first counterexample (options.stopAtFirst) or the piece at which the
// running total reaches options.maxExecutions, as one search of the pieces in that order.
// `everyPiece`: no piece of the subtree was left unsearched (else it is not complete).
SubtreeResult assembleSubtree(std::uint32_t index,
                              std::vector<std::pair<PiecePath, SubtreeResult>> pieces,
                              bool everyPiece, const ExploreOptions &options);
// Whether pieces after `path` are needed, given the results of some of the pieces before it: not
// after a counterexample (options.stopAtFirst) or once those alone reach the budget.
bool pieceNeeded(const PiecePath &path,
                 const std::vector<std::pair<PiecePath, SubtreeResult>> &finished,
                 const ExploreOptions &options);

// What a split search does besides searching, all optional.
struct SubtreeHooks {
  // Before any subtree runs: the plan; fills `done` with subtrees already searched (a resumed
  // checkpoint). FatalError when what it holds was made for another tree.
  std::function<void(const SubtreePlan &, std::map<std::uint32_t, SubtreeResult> &done)> begin;
  // Each subtree searched in this run, as it finishes (on the calling thread, in any order).
  std::function<void(const SubtreeResult &)> finished;
  // After the last subtree (not when a worker failed).
  std::function<void()> end;
  // The subtrees to search ({} = all). With a subset, the explore result only covers those.
  std::vector<std::uint32_t> only;
};

// The frontier of `harness`'s tree for `options` (subtrees > 0): roots computed as documented
// above.
SubtreePlan planSubtrees(Harness &harness, const ExploreOptions &options);

// One process's share of a split tree, searched a subtree at a time on one harness (an MPI rank).
class SubtreeRunner {
public:
  SubtreeRunner(Harness &harness, const ExploreOptions &options);
  // The same plan (computed once) on another harness of the same scenario.
  SubtreeRunner(Harness &harness, const SubtreeRunner &same);
  ~SubtreeRunner();
  const SubtreePlan &plan() const { return plan_; }
  // Searches subtree `index` (< plan().count): its pieces one after another in depth-first order;
  // `abandon` as in detail::searchTree.
  SubtreeResult run(std::uint32_t index,
                    const std::function<bool(double searched)> &abandon = {}) const;
  // The executions after which `piece` splits: options.pieceExecutions, doubled with each split
  // that led to it.
  std::uint64_t pieceBudget(const SubtreePiece &piece) const;
  // Searches one piece (at most pieceBudget(piece) executions).
  PieceOutcome runPiece(const SubtreePiece &piece,
                        const std::function<bool(double searched)> &abandon = {}) const;

private:
  struct Roots;
  Harness &harness_;
  ExploreOptions options_;
  SubtreePlan plan_;
  std::shared_ptr<const Roots> roots_;
};

// A subtree being searched: its executions so far and the share of it its depth-first search has
// finished, estimated from the path it stands on (detail::searchedFraction, the weighted
// backtrack estimate).
struct RunningSubtree {
  std::uint64_t executions = 0;
  double searched = 0;
};
// The estimate of a split tree's executions while it is searched. Workers take the subtrees in a
// fixed pseudo-random order (seeded by the plan's digest; the merge still goes in depth-first
// order, so results do not change), so the finished ones are a uniform sample of the roots, and
// count x the mean finished size is Knuth's estimator with the probe stopped at the frontier and
// the subtree below counted exactly. But subtree sizes are heavy-tailed and the large ones finish
// last: that mean alone says "almost done" while the largest subtrees still run. So each running
// subtree counts with executions / searched fraction, and every subtree not started with the mean
// of the finished and running ones. 0 before any subtree started.
std::uint64_t estimateExecutions(std::uint32_t count, const std::vector<std::uint64_t> &finished,
                                 const std::vector<RunningSubtree> &running = {});
// The order in which workers take the subtrees of `plan` (a permutation of 0..count-1).
std::vector<std::uint32_t> searchOrder(const SubtreePlan &plan);

// The depth-first index after which a merge of `results` stops (a counterexample, or the budget
// reached), once every subtree before it has a result; nothing otherwise.
std::optional<std::uint32_t> mergeStop(const std::map<std::uint32_t, SubtreeResult> &results,
                                       const ExploreOptions &options);
// The same over the subtrees `order` (depth-first) only.
std::optional<std::uint32_t> mergeStop(const std::vector<std::uint32_t> &order,
                                       const std::map<std::uint32_t, SubtreeResult> &results,
                                       const ExploreOptions &options);

// Whether the exhaustive explorer searches a split tree with these options (searchSplit).
bool searchesSplitTree(const ExploreOptions &options);

// The search of a split tree: options.jobs threads (each with its own harness from
// options.newHarness; the first uses `harness`), merged into `x` in depth-first order.
void searchSplit(Exploration &x, const SubtreeHooks &hooks = {});

// Starts the worker threads a split search with `o` will use (none when it will not split the
// tree or has one job): each builds its harness with `o.newHarness` at once. Called before the
// caller builds its own harness, it builds theirs at the same time as that one; put the result in
// `o.crew`. Otherwise the search starts them after its first harness is built, while it plans.
std::shared_ptr<Crew> startWorkers(const ExploreOptions &o);

// Merges finished subtrees (all of `plan`'s) into `x` as searchSplit does.
void mergeSubtrees(Exploration &x, const SubtreePlan &plan,
                   const std::map<std::uint32_t, SubtreeResult> &results, std::uint64_t resumed);

} // namespace ftsim::verify
