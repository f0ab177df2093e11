#pragma once
// The exhaustive explorer's tree (private to verify/src): its nodes, the depth-first scheduler
// that replays a stack of nodes and extends it, source-DPOR's race analysis, and the search of
// one subtree. ExhaustiveExplorer.cpp runs the whole tree with it; Subtrees.cpp splits the tree
// at a frontier and runs the subtrees one by one, on threads or in other processes.

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace ftsim::verify::detail {

struct SleepEntry {
  int process;
  EventRecord event; // what the process does next (recorded when its branch was explored)
};

struct Node {
  DecisionKind kind = DecisionKind::Event;
  std::uint32_t options = 0;
  std::uint32_t chosen = 0;
  std::vector<int> processes; // Event: process of each option
  std::vector<bool> backtrack, done;
  std::vector<std::optional<EventRecord>> branchEvent;
  std::vector<SleepEntry> sleep;
  std::size_t logSize = 0; // log size when the decision was asked
  unsigned preemptionsBefore = 0;
  int lastProcess = -1;

  bool asleep(int process) const {
    return std::any_of(sleep.begin(), sleep.end(),
                       [&](const SleepEntry &s) { return s.process == process; });
  }
  unsigned cost(std::uint32_t o) const {
    if (lastProcess < 0 || processes[o] == lastProcess)
      return 0;
    return std::find(processes.begin(), processes.end(), lastProcess) != processes.end() ? 1 : 0;
  }
};

// How the tree is searched: with reduction (source-DPOR + sleep sets) or naive, the preemption
// bound (-1: none), and the depth above which every awake option is explored (the frontier of a
// split tree, 0 for none): above it a node's alternatives never depend on what its subtrees find,
// so the subtrees below it are independent of each other.
struct TreeShape {
  bool reduction = true;
  int bound = -1;
  std::size_t fullDepth = 0;
};

// Searches depth-first below `stack` (the decisions of a subtree's root, replayed by every
// execution; empty for the whole tree), never backtracking into those `frozen` = stack.size()
// nodes. Accounts every execution through `x`; returns when the subtree is done (stats.complete),
// the budget ran out, `x` said stop, or `abandon` (when given) returns true. `abandon` is asked
// before every execution, with searchedFraction() of the stack it is about to run.
void searchTree(Exploration &x, const TreeShape &shape, std::vector<Node> stack,
                const std::function<bool(double searched)> &abandon = {});

// A piece of a subtree's search: the stack it resumes from, how many of its nodes it never pops
// (nodes above `frozen` are fixed; their branches belong to other items), and whether the branch
// the stack stands on is explored already (then the search first moves to the next one).
struct SearchItem {
  std::vector<Node> stack;
  std::size_t frozen = 0;
  bool advanceFirst = false;
  double share = 1; // its estimated share of the subtree's executions (for progress estimates)
};

// searchTree on an item. After `splitAfter` executions (0: never) with work left, stops and returns
// what is left as independent items in depth-first order (their searches never look at each
// other: the nodes whose branches they share are made full first); {} when the item is done, the
// budget ran out, `x` said stop or `abandon` returned true. Where an item splits depends only on
// the tree and `splitAfter`, never on who searches the pieces, so a tree searched as items has the
// same executions however the items are shared out; the full nodes cost a few more executions than
// one search of the whole.
std::vector<SearchItem> searchItem(Exploration &x, const TreeShape &shape, SearchItem item,
                                   std::uint64_t splitAfter,
                                   const std::function<bool(double searched)> &abandon = {});

// The share of the tree below the `frozen` nodes of `stack` that a depth-first search standing at
// `stack` has finished, estimated from the path alone (Kilby et al.'s weighted backtrack estimate,
// AAAI 2006): at every level, the finished siblings' share of that level's options (those known so
// far: source-DPOR may add more), each level weighing 1/options of the one above. Subtrees of one
// node are taken to be the same size; executions so far / fraction estimates the whole.
double searchedFraction(const std::vector<Node> &stack, std::size_t frozen);

// The subtrees' roots at decision depth `depth`, in the tree's depth-first order: each is the stack
// of nodes above it (all awake options explored at every one of them) as a sequential search would
// hold it when it enters that subtree. Executions that end or block before the depth are roots
// too. Runs one partial execution per root on `harness`; `boundCuts` gets the options the
// preemption bound removed above the frontier.
std::vector<std::vector<Node>> frontierAt(Harness &harness, const TreeShape &shape,
                                          std::size_t depth, std::uint64_t &boundCuts);

} // namespace ftsim::verify::detail
