// The exhaustive explorer's tree split at a frontier and searched subtree by subtree, on worker
// threads, merged in depth-first order (Subtrees.h).

#include "ftsim/verify/explore/Subtrees.h"

#include "DporTree.h"

#include "ftsim/arch/Error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

namespace ftsim::verify {

using detail::Node;
using detail::TreeShape;

namespace {

constexpr std::size_t kMaxFrontierDepth = 256;

TreeShape shapeOf(const Harness &harness, const ExploreOptions &o) {
  TreeShape shape;
  shape.reduction = o.reduction && harness.reductionSound();
  shape.bound = o.preemptionBound;
  return shape;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= 0x100000001b3ull;
  }
  return h;
}

// The roots of the smallest frontier depth with at least options.subtrees of them (or the whole
// tree's executions, when it has fewer).
SubtreePlan computePlan(Harness &harness, const ExploreOptions &o,
                        std::vector<std::vector<Node>> &roots) {
  if (o.subtrees == 0)
    FTSIM_PANIC("planSubtrees without subtrees");
  TreeShape shape = shapeOf(harness, o);
  SubtreePlan plan;
  for (std::size_t depth = 1; depth <= kMaxFrontierDepth; ++depth) {
    roots = detail::frontierAt(harness, shape, depth, plan.boundCuts);
    plan.depth = depth;
    const bool exhausted =
        std::all_of(roots.begin(), roots.end(), [&](const auto &r) { return r.size() < depth; });
    if (roots.size() >= o.subtrees || exhausted)
      break;
  }
  plan.count = static_cast<std::uint32_t>(roots.size());
  std::uint64_t h = mix(mix(0xcbf29ce484222325ull, plan.depth), o.pieceExecutions);
  for (const auto &root : roots) {
    h = mix(h, root.size());
    for (const Node &n : root)
      h = mix(mix(mix(h, static_cast<std::uint64_t>(n.kind)), n.options), n.chosen);
  }
  plan.digest = h;
  return plan;
}

// Adds a searched part's counts to `s` (not its states, its completeness or its time).
void addCounts(ExploreStats &s, const ExploreStats &p) {
  s.executions += p.executions;
  s.sleepBlocked += p.sleepBlocked;
  s.pruned += p.pruned;
  s.boundCuts += p.boundCuts;
  s.eventLimitHits += p.eventLimitHits;
  s.decisions += p.decisions;
  s.events += p.events;
  s.maxEvents = std::max(s.maxEvents, p.maxEvents);
  s.maxPreemptions = std::max(s.maxPreemptions, p.maxPreemptions);
}

SubtreeResult resultOf(std::uint32_t index, Exploration &x) {
  SubtreeResult r;
  r.index = index;
  r.stats = x.stats();
  r.stats.seconds = 0;
  r.states.assign(x.states().begin(), x.states().end());
  std::sort(r.states.begin(), r.states.end());
  r.stats.distinctStates = r.states.size();
  r.violatingExecutions = x.violatingExecutions();
  r.counterexample = x.counterexample();
  return r;
}

} // namespace

struct SubtreeRunner::Roots {
  std::vector<std::vector<Node>> roots;
  TreeShape shape;
};

SubtreeRunner::SubtreeRunner(Harness &harness, const ExploreOptions &options)
    : harness_(harness), options_(options) {
  auto roots = std::make_shared<Roots>();
  plan_ = computePlan(harness, options, roots->roots);
  roots->shape = shapeOf(harness, options);
  roots->shape.fullDepth = plan_.depth;
  roots_ = std::move(roots);
  options_.progress = nullptr;
  options_.subtrees = 0;
  options_.jobs = 1;
  options_.subtreeHooks = nullptr;
}

SubtreeRunner::SubtreeRunner(Harness &harness, const SubtreeRunner &same)
    : harness_(harness), options_(same.options_), plan_(same.plan_), roots_(same.roots_) {}

SubtreeRunner::~SubtreeRunner() = default;

std::uint64_t SubtreeRunner::pieceBudget(const SubtreePiece &piece) const {
  // Doubling with each split: a subtree of N executions splits about log4(N / base) times deep,
  // not N / base times, so the full nodes of the splits stay few on the largest trees.
  const std::size_t generation = std::min<std::size_t>(piece.path.size(), 24);
  const std::uint64_t base = options_.pieceExecutions;
  // Saturated: a file's piece_executions near 2^64 must not wrap to 0 ("never split") or less.
  return base > (std::numeric_limits<std::uint64_t>::max() >> generation)
             ? std::numeric_limits<std::uint64_t>::max()
             : base << generation;
}

PieceOutcome SubtreeRunner::runPiece(const SubtreePiece &piece,
                                     const std::function<bool(double searched)> &abandon) const {
  if (piece.index >= plan_.count)
    FTSIM_PANIC("subtree {} of {}", piece.index, plan_.count);
  detail::SearchItem item;
  if (piece.item) {
    item = *piece.item;
  } else {
    item.stack = roots_->roots[piece.index];
    item.frozen = item.stack.size();
  }
  Exploration x(harness_, options_);
  std::vector<detail::SearchItem> rest =
      detail::searchItem(x, roots_->shape, std::move(item), pieceBudget(piece), abandon);
  PieceOutcome out;
  out.result = resultOf(piece.index, x);
  for (std::size_t k = 0; k < rest.size(); ++k) {
    SubtreePiece p{piece.index, piece.path, nullptr, rest[k].share};
    p.path.push_back(static_cast<std::uint32_t>(k));
    p.item = std::make_shared<const detail::SearchItem>(std::move(rest[k]));
    out.rest.push_back(std::move(p));
  }
  return out;
}

SubtreeResult SubtreeRunner::run(std::uint32_t index,
                                 const std::function<bool(double searched)> &abandon) const {
  std::vector<std::pair<PiecePath, SubtreeResult>> done;
  std::vector<SubtreePiece> todo{SubtreePiece{index, {}, nullptr}};
  while (!todo.empty() && (done.empty() || pieceNeeded(todo.back().path, done, options_))) {
    SubtreePiece piece = std::move(todo.back());
    todo.pop_back();
    PieceOutcome out = runPiece(piece, abandon);
    done.emplace_back(std::move(piece.path), std::move(out.result));
    for (std::size_t k = out.rest.size(); k-- > 0;) // the first piece is searched next
      todo.push_back(std::move(out.rest[k]));
  }
  return assembleSubtree(index, std::move(done), todo.empty(), options_);
}

SubtreeResult assembleSubtree(std::uint32_t index,
                              std::vector<std::pair<PiecePath, SubtreeResult>> pieces,
                              bool everyPiece, const ExploreOptions &options) {
  std::sort(pieces.begin(), pieces.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  SubtreeResult r;
  r.index = index;
  r.stats.complete = everyPiece;
  std::vector<std::uint64_t> states;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const SubtreeResult &p = pieces[k].second;
    ExploreStats &s = r.stats;
    addCounts(s, p.stats);
    s.complete = s.complete && p.stats.complete;
    states.insert(states.end(), p.states.begin(), p.states.end());
    r.violatingExecutions += p.violatingExecutions;
    if (!r.counterexample && p.counterexample)
      r.counterexample = p.counterexample;
    if ((p.counterexample && options.stopAtFirst) || s.executions >= options.maxExecutions) {
      s.complete = s.complete && k + 1 == pieces.size() && !p.counterexample;
      break;
    }
  }
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  r.states = std::move(states);
  r.stats.distinctStates = r.states.size();
  return r;
}

bool pieceNeeded(const PiecePath &path,
                 const std::vector<std::pair<PiecePath, SubtreeResult>> &finished,
                 const ExploreOptions &options) {
  std::uint64_t before = 0;
  for (const auto &[p, r] : finished)
    if (p < path) {
      if (r.counterexample && options.stopAtFirst)
        return false;
      before += r.stats.executions;
    }
  return before < options.maxExecutions;
}

std::uint64_t estimateExecutions(std::uint32_t count, const std::vector<std::uint64_t> &finished,
                                 const std::vector<RunningSubtree> &running) {
  long double sum = 0;
  for (std::uint64_t n : finished)
    sum += static_cast<long double>(n);
  for (const RunningSubtree &r : running) {
    // Below a searched fraction of 1/executions the path says less than the count itself.
    const long double e = static_cast<long double>(r.executions);
    sum += r.searched * e > 1 ? e / r.searched : e;
  }
  const std::size_t known = finished.size() + running.size();
  if (known == 0)
    return 0;
  const std::size_t unstarted = count > known ? count - known : 0;
  return static_cast<std::uint64_t>(sum + sum / known * unstarted + 0.5L);
}

std::vector<std::uint32_t> searchOrder(const SubtreePlan &plan) {
  std::vector<std::uint32_t> order(plan.count);
  for (std::uint32_t i = 0; i < plan.count; ++i)
    order[i] = i;
  std::mt19937_64 rng(plan.digest);
  for (std::uint32_t i = plan.count; i > 1; --i) // Fisher-Yates, portable (no std::shuffle)
    std::swap(order[i - 1], order[rng() % i]);
  return order;
}

std::optional<std::uint32_t> mergeStop(const std::vector<std::uint32_t> &order,
                                       const std::map<std::uint32_t, SubtreeResult> &results,
                                       const ExploreOptions &o) {
  std::uint64_t total = 0;
  for (std::uint32_t i : order) {
    auto it = results.find(i);
    if (it == results.end())
      return std::nullopt;
    total += it->second.stats.executions;
    if ((it->second.counterexample && o.stopAtFirst) || total >= o.maxExecutions)
      return i;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> mergeStop(const std::map<std::uint32_t, SubtreeResult> &results,
                                       const ExploreOptions &options) {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; results.count(i); ++i)
    order.push_back(i);
  if (order.size() < results.size() || results.empty())
    order.push_back(static_cast<std::uint32_t>(order.size())); // the first gap
  return mergeStop(order, results, options);
}

void Exploration::absorb(const SubtreeResult &r) {
  addCounts(result_.stats, r.stats);
  states_.insert(r.states.begin(), r.states.end());
  result_.violatingExecutions += r.violatingExecutions;
  if (!result_.counterexample && r.counterexample)
    result_.counterexample = r.counterexample;
}

SubtreePlan planSubtrees(Harness &harness, const ExploreOptions &options) {
  return SubtreeRunner(harness, options).plan();
}

void mergeSubtrees(Exploration &x, const SubtreePlan &plan,
                   const std::map<std::uint32_t, SubtreeResult> &results, std::uint64_t resumed) {
  const ExploreOptions &o = x.options();
  bool complete = true;
  std::uint64_t total = 0;
  std::uint32_t merged = 0;
  for (const auto &[index, r] : results) {
    if (index != merged)
      break; // a gap: the subtrees after it are not the next ones in depth-first order
    merged = index + 1;
    x.absorb(r);
    total += r.stats.executions;
    complete = complete && r.stats.complete;
    if ((r.counterexample && o.stopAtFirst) || (total >= o.maxExecutions && merged < plan.count)) {
      complete = false;
      break;
    }
  }
  ExploreStats &s = x.stats();
  s.complete = complete && merged == plan.count && !x.counterexample();
  s.boundCuts += plan.boundCuts;
  s.subtrees = plan.count;
  s.frontierDepth = plan.depth;
  s.subtreesResumed = resumed;
}

} // namespace ftsim::verify
