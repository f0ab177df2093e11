// The exhaustive explorer's tree: the depth-first scheduler, source-DPOR's race analysis (on the
// happens-before relation of HappensBefore.h), the search of a subtree and the frontier of a split
// tree (DporTree.h).

#include "DporTree.h"
#include "HappensBefore.h"

#include "ftsim/arch/Error.h"

namespace ftsim::verify::detail {
namespace {

// --- Depth-first exploration ---------------------------------------------------------------------

class DfsScheduler final : public sim::Scheduler {
public:
  DfsScheduler(std::vector<Node> &stack, const TreeShape &shape, std::size_t stopAt = SIZE_MAX)
      : stack_(stack), reduction_(shape.reduction), bound_(shape.bound),
        fullDepth_(shape.fullDepth), stopAt_(stopAt) {}

  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    const auto log = machine.events();
    if (stopped_)
      return fallback(point, lastProcess(log));
    if (depth_ < stack_.size()) {
      Node &node = stack_[depth_++];
      if (node.kind != point.kind || node.options != point.options)
        FTSIM_PANIC("exploration replay diverged at decision {}: the machine is not deterministic",
                    depth_ - 1);
      if (point.kind == DecisionKind::Event)
        preemptions_ = node.preemptionsBefore + node.cost(node.chosen);
      return node.chosen;
    }
    if (depth_ >= stopAt_) {
      atFrontier_ = true; // the frontier: the rest of this execution belongs to the subtree
      return fallback(point, lastProcess(log));
    }
    Node node;
    node.kind = point.kind;
    node.options = point.options;
    node.logSize = log.size();
    node.backtrack.assign(point.options, false);
    node.done.assign(point.options, false);
    if (point.kind == DecisionKind::StaleByte) {
      node.backtrack.assign(point.options, true);
      node.done[0] = true;
      stack_.push_back(std::move(node));
      ++depth_;
      return 0;
    }
    node.branchEvent.assign(point.options, std::nullopt);
    for (std::uint32_t i = 0; i < point.options; ++i)
      node.processes.push_back(processOf(point.events[i]));
    node.lastProcess = lastProcess(log);
    node.preemptionsBefore = preemptions_;
    if (reduction_)
      node.sleep = inheritedSleep(log);
    // Non-preemptive default: the process that ran last, else the first awake one.
    std::optional<std::uint32_t> pick;
    for (std::uint32_t i = 0; i < point.options && !pick; ++i)
      if (node.processes[i] == node.lastProcess && !node.asleep(node.processes[i]))
        pick = i;
    for (std::uint32_t i = 0; i < point.options && !pick; ++i)
      if (!node.asleep(node.processes[i]) &&
          (bound_ < 0 || node.preemptionsBefore + node.cost(i) <= static_cast<unsigned>(bound_)))
        pick = i;
    if (!pick) {
      // Every process that may run is asleep: this execution only repeats explored ones.
      stopped_ = true;
      return fallback(point, node.lastProcess);
    }
    node.chosen = *pick;
    node.done[*pick] = true;
    node.backtrack[*pick] = true;
    if (!reduction_ || depth_ < fullDepth_)
      node.backtrack.assign(point.options, true);
    preemptions_ = node.preemptionsBefore + node.cost(*pick);
    stack_.push_back(std::move(node));
    ++depth_;
    return *pick;
  }

  bool stopped() const { return stopped_; }
  bool atFrontier() const { return atFrontier_; }
  unsigned preemptions() const { return preemptions_; }
  void allowFinish() { stopped_ = true; }

private:
  static std::uint32_t fallback(const sim::DecisionPoint &point, int last) {
    if (point.kind == DecisionKind::Event)
      for (std::uint32_t i = 0; i < point.options; ++i)
        if (processOf(point.events[i]) == last)
          return i;
    return 0;
  }

  // The sleep set after the previous event decision's event and every event since: its sleep
  // set plus its explored alternatives, minus whatever is dependent with what ran.
  std::vector<SleepEntry> inheritedSleep(std::span<const EventRecord> log) const {
    const Node *prev = nullptr;
    for (std::size_t i = depth_; i-- > 0;)
      if (stack_[i].kind == DecisionKind::Event) {
        prev = &stack_[i];
        break;
      }
    if (!prev)
      return {};
    std::vector<SleepEntry> candidates = prev->sleep;
    for (std::uint32_t o = 0; o < prev->options; ++o)
      if (prev->done[o] && o != prev->chosen && prev->branchEvent[o])
        candidates.push_back({prev->processes[o], *prev->branchEvent[o]});
    std::vector<SleepEntry> out;
    const std::size_t from = eventAtOrAfter(log, prev->logSize);
    for (const SleepEntry &s : candidates) {
      bool keep = true;
      for (std::size_t i = from; i < log.size() && keep; ++i)
        keep = !dependent(s.event, log[i]);
      if (keep)
        out.push_back(s);
    }
    return out;
  }

  std::vector<Node> &stack_;
  bool reduction_;
  int bound_;
  std::size_t fullDepth_, stopAt_;
  bool atFrontier_ = false;
  std::size_t depth_ = 0;
  unsigned preemptions_ = 0;
  bool stopped_ = false;
};

// What the race analysis keeps between the executions of one search (addBacktrackPoints): the log
// it analysed, the happens-before relation of its events, and how many of those events the next
// execution repeats for certain (the log size of the node the search branched at).
struct RaceCache {
  std::vector<EventRecord> log;
  HappensBefore hb;
  std::size_t stableBelow = 0;
  // Scratch, kept for its capacity.
  std::vector<std::size_t> nodeOfEvent, v;
  std::vector<int> initials;
};

// Source-DPOR race analysis of one execution (Abdulla et al. 2014, Algorithm 1, lines 5-8): for
// every reversible race e < e', if no initial of v = notdep(e, E).e' is in backtrack(pre(E, e)),
// add one.
//
// The relation is kept between the executions of one search (RaceCache): an execution repeats the
// one before it up to the node the search branched at, so the rows of the events before that
// node's log size, and those events' races, are the same as before. Their races were analysed
// then, on the same nodes: each added an initial to its node's backtrack set (which only grows) or
// found none it could add, and would do the same again. Only the events from there on are
// analysed; a log that differs earlier (it never should) is analysed from where it differs.
void addBacktrackPoints(std::vector<Node> &stack, std::span<const EventRecord> log,
                        RaceCache &cache) {
  const std::size_t n = log.size();
  std::size_t kept = std::min({cache.stableBelow, cache.log.size(), n});
  for (std::size_t i = 0; i < kept; ++i)
    if (!(cache.log[i] == log[i])) {
      kept = i;
      break;
    }
  std::vector<std::size_t> &nodeOfEvent = cache.nodeOfEvent;
  nodeOfEvent.assign(n, SIZE_MAX);
  for (std::size_t d = 0; d < stack.size(); ++d)
    if (stack[d].kind == DecisionKind::Event) {
      const std::size_t e = eventAtOrAfter(log, stack[d].logSize);
      if (e < n)
        nodeOfEvent[e] = d;
    }
  const HappensBefore &hb = cache.hb;
  cache.hb.extend(log, kept, [&](std::size_t i, std::size_t j) {
    if (processOf(log[i]) == processOf(log[j]) || nodeOfEvent[i] == SIZE_MAX)
      return;
    Node &node = stack[nodeOfEvent[i]];
    // Initials of v = the events after i that do not happen after i, then j.
    std::vector<int> &initials = cache.initials;
    std::vector<std::size_t> &v = cache.v;
    initials.clear();
    v.clear();
    for (std::size_t k = i + 1; k < j; ++k)
      if (!hb.has(k, i))
        v.push_back(k);
    v.push_back(j);
    for (std::size_t a = 0; a < v.size(); ++a) {
      bool first = true;
      for (std::size_t b = 0; b < a && first; ++b)
        first = !hb.has(v[a], v[b]);
      const int p = processOf(log[v[a]]);
      if (first && std::find(initials.begin(), initials.end(), p) == initials.end())
        initials.push_back(p);
    }
    bool covered = false;
    std::optional<std::uint32_t> candidate;
    for (std::uint32_t o = 0; o < node.options; ++o) {
      if (std::find(initials.begin(), initials.end(), node.processes[o]) == initials.end())
        continue;
      if (node.backtrack[o])
        covered = true;
      if (!candidate ||
          (node.asleep(node.processes[*candidate]) && !node.asleep(node.processes[o])))
        candidate = o;
    }
    if (!covered && candidate)
      node.backtrack[*candidate] = true;
  });
  cache.log.assign(log.begin(), log.end());
  cache.stableBelow = 0; // until the search says where it branches next
}

// Records what each node's chosen option did in the execution the machine holds.
void recordBranchEvents(std::vector<Node> &stack, std::span<const EventRecord> log) {
  for (Node &node : stack)
    if (node.kind == DecisionKind::Event) {
      const std::size_t e = eventAtOrAfter(log, node.logSize);
      if (e < log.size())
        node.branchEvent[node.chosen] = log[e];
    }
}

// Moves `stack` to the next branch in depth-first order without popping its first `frozen` nodes:
// the deepest node with an awake, unexplored option in its backtrack set (within the bound).
// Returns false when nothing is left below the frozen nodes.
bool advance(std::vector<Node> &stack, std::size_t frozen, int bound, ExploreStats &stats) {
  while (stack.size() > frozen) {
    Node &node = stack.back();
    std::optional<std::uint32_t> next;
    if (node.kind == DecisionKind::StaleByte) {
      if (node.chosen + 1 < node.options)
        next = node.chosen + 1;
    } else {
      for (std::uint32_t o = 0; o < node.options && !next; ++o) {
        if (!node.backtrack[o] || node.done[o])
          continue;
        if (node.asleep(node.processes[o])) {
          node.done[o] = true;
          continue;
        }
        if (bound >= 0 && node.preemptionsBefore + node.cost(o) > static_cast<unsigned>(bound)) {
          node.done[o] = true;
          ++stats.boundCuts;
          continue;
        }
        next = o;
      }
    }
    if (next) {
      node.chosen = *next;
      if (node.kind == DecisionKind::Event)
        node.done[*next] = true;
      return true;
    }
    if (node.kind == DecisionKind::Event)
      stats.pruned +=
          static_cast<std::uint64_t>(std::count(node.done.begin(), node.done.end(), false));
    stack.pop_back();
  }
  return false;
}

} // namespace

double searchedFraction(const std::vector<Node> &stack, std::size_t frozen) {
  double searched = 0, weight = 1;
  for (std::size_t i = frozen; i < stack.size(); ++i) {
    const Node &n = stack[i];
    std::size_t before = 0, total = 0;
    if (n.kind == DecisionKind::StaleByte) {
      before = n.chosen;
      total = n.options;
    } else {
      for (std::uint32_t o = 0; o < n.options; ++o) {
        total += n.backtrack[o] || n.done[o];
        before += n.done[o] && o != n.chosen;
      }
    }
    if (total == 0)
      break;
    searched += weight * static_cast<double>(before) / static_cast<double>(total);
    weight /= static_cast<double>(total);
  }
  return searched;
}

namespace {

// Whether `node` has a branch left besides its chosen one that advance() would take.
bool hasBranchLeft(const Node &node, int bound) {
  if (node.kind == DecisionKind::StaleByte)
    return node.chosen + 1 < node.options;
  for (std::uint32_t o = 0; o < node.options; ++o)
    if (node.backtrack[o] && !node.done[o] && !node.asleep(node.processes[o]) &&
        (bound < 0 || node.preemptionsBefore + node.cost(o) <= static_cast<unsigned>(bound)))
      return true;
  return false;
}

// What is left of `item` (its stack standing at the next branch to run) as two independent items,
// in depth-first order: the nodes from the item's first free one down to the shallowest level L
// with a branch left are made full (every awake option explored), so that no race found later can
// add to them; then the branch L stands on with everything below it, and L's later branches.
// Their shares of the subtree, for estimates: the item's own executions took searchedFraction() of
// its share, the later branches take theirs by the same weights, the branch L stands on the rest.
std::vector<SearchItem> splitRest(SearchItem item, int bound) {
  std::vector<Node> &stack = item.stack;
  const double rest = item.share * (1 - searchedFraction(stack, item.frozen));
  double weight = item.share;
  for (std::size_t level = item.frozen; level < stack.size(); ++level) {
    Node &node = stack[level];
    if (node.kind == DecisionKind::Event)
      node.backtrack.assign(node.options, true);
    std::size_t total = node.options, left = node.options - node.chosen - 1;
    if (node.kind == DecisionKind::Event) {
      total =
          static_cast<std::size_t>(std::count(node.backtrack.begin(), node.backtrack.end(), true));
      left = 0;
      for (std::uint32_t o = 0; o < node.options; ++o)
        left += node.backtrack[o] && !node.done[o];
    }
    if (!hasBranchLeft(node, bound)) {
      weight /= static_cast<double>(std::max<std::size_t>(total, 1));
      continue;
    }
    const double laterShare =
        std::min(rest, weight * static_cast<double>(left) / static_cast<double>(total));
    SearchItem later{{stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(level) + 1},
                     level,
                     true,
                     laterShare};
    item.frozen = level + 1;
    item.share = rest - laterShare;
    return {std::move(item), std::move(later)};
  }
  item.frozen = stack.size(); // only the branch the top stands on is left
  item.share = rest;
  return {std::move(item)};
}

} // namespace

std::vector<SearchItem> searchItem(Exploration &x, const TreeShape &shape, SearchItem item,
                                   std::uint64_t splitAfter,
                                   const std::function<bool(double searched)> &abandon) {
  std::vector<Node> &stack = item.stack;
  const std::size_t frozen = item.frozen;
  if (item.advanceFirst && !advance(stack, frozen, shape.bound, x.stats())) {
    x.stats().complete = true;
    return {};
  }
  std::uint64_t ran = 0;
  RaceCache races;
  while (true) {
    if (x.stats().executions >= x.options().maxExecutions)
      return {}; // budget exhausted: not complete
    if (abandon && abandon(searchedFraction(stack, frozen)))
      return {};
    if (splitAfter && ran == splitAfter) {
      x.stats().complete = true; // this item's own share; the rest is in the items returned
      item.advanceFirst = false;
      return splitRest(std::move(item), shape.bound);
    }
    DfsScheduler dfs(stack, shape);
    sim::RunResult run = x.harness().runExecution(dfs, [&] { return dfs.stopped(); });
    ++ran;
    const bool cut = dfs.stopped();
    if (cut)
      ++x.stats().sleepBlocked;
    const auto log = x.harness().machine().events();
    recordBranchEvents(stack, log);
    if (shape.reduction)
      addBacktrackPoints(stack, log, races);
    if (!x.finish(dfs, dfs.preemptions(), cut, run))
      return {};
    if (!advance(stack, frozen, shape.bound, x.stats())) {
      x.stats().complete = true;
      return {};
    }
    races.stableBelow = stack.back().logSize; // the node branched at, and every one above it
  }
}

void searchTree(Exploration &x, const TreeShape &shape, std::vector<Node> stack,
                const std::function<bool(double searched)> &abandon) {
  const std::size_t frozen = stack.size();
  searchItem(x, shape, SearchItem{std::move(stack), frozen, false}, 0, abandon);
}

std::vector<std::vector<Node>> frontierAt(Harness &harness, const TreeShape &shape,
                                          std::size_t depth, std::uint64_t &boundCuts) {
  TreeShape upper = shape;
  upper.fullDepth = depth;
  std::vector<std::vector<Node>> roots;
  std::vector<Node> stack;
  ExploreStats stats;
  while (true) {
    DfsScheduler dfs(stack, upper, depth);
    harness.runExecution(dfs, [&] { return dfs.stopped() || dfs.atFrontier(); });
    recordBranchEvents(stack, harness.machine().events());
    roots.push_back(stack);
    if (!advance(stack, 0, shape.bound, stats))
      break;
  }
  boundCuts = stats.boundCuts;
  return roots;
}

} // namespace ftsim::verify::detail
