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
  std::uint64_t h = mix(0xcbf29ce484222325ull, plan.depth);
  for (const auto &root : roots) {
    h = mix(h, root.size());
    for (const Node &n : root)
      h = mix(mix(mix(h, static_cast<std::uint64_t>(n.kind)), n.options), n.chosen);
  }
  plan.digest = h;
  return plan;
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

// The subtrees to search, in depth-first order, and whether the running total of `results` in
// that order already reached the budget or a counterexample (then the index it stops at).
std::optional<std::uint32_t> stopIndex(const std::vector<std::uint32_t> &order,
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

SubtreeResult SubtreeRunner::run(std::uint32_t index,
                                 const std::function<bool(double searched)> &abandon) const {
  if (index >= plan_.count)
    FTSIM_PANIC("subtree {} of {}", index, plan_.count);
  Exploration x(harness_, options_);
  detail::searchTree(x, roots_->shape, roots_->roots[index], abandon);
  return resultOf(index, x);
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

std::optional<std::uint32_t> mergeStop(const std::map<std::uint32_t, SubtreeResult> &results,
                                       const ExploreOptions &options) {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; results.count(i); ++i)
    order.push_back(i);
  if (order.size() < results.size() || results.empty())
    order.push_back(static_cast<std::uint32_t>(order.size())); // the first gap
  return stopIndex(order, results, options);
}

void Exploration::absorb(const SubtreeResult &r) {
  ExploreStats &s = result_.stats;
  s.executions += r.stats.executions;
  s.sleepBlocked += r.stats.sleepBlocked;
  s.pruned += r.stats.pruned;
  s.boundCuts += r.stats.boundCuts;
  s.eventLimitHits += r.stats.eventLimitHits;
  s.decisions += r.stats.decisions;
  s.events += r.stats.events;
  s.maxEvents = std::max(s.maxEvents, r.stats.maxEvents);
  s.maxPreemptions = std::max(s.maxPreemptions, r.stats.maxPreemptions);
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

void searchSplit(Exploration &x, const SubtreeHooks &hooks) {
  const ExploreOptions &o = x.options();
  const SubtreeRunner first(x.harness(), o);
  const SubtreePlan &plan = first.plan();

  std::map<std::uint32_t, SubtreeResult> results;
  if (hooks.begin)
    hooks.begin(plan, results);
  std::vector<std::uint32_t> order = hooks.only;
  if (order.empty())
    for (std::uint32_t i = 0; i < plan.count; ++i)
      order.push_back(i);
  std::sort(order.begin(), order.end());
  for (std::uint32_t i : order)
    if (i >= plan.count)
      fatal("subtree {} does not exist: the tree has {} subtrees", i, plan.count);
  for (auto it = results.begin(); it != results.end();)
    it = std::find(order.begin(), order.end(), it->first) == order.end() ? results.erase(it)
                                                                         : std::next(it);
  const std::uint64_t resumed = results.size();
  std::vector<std::uint32_t> todo;
  std::vector<std::uint64_t> sizes; // executions of the finished subtrees, for the estimate
  for (std::uint32_t i : searchOrder(plan))
    if (std::binary_search(order.begin(), order.end(), i) && !results.count(i))
      todo.push_back(i);
  for (const auto &[i, r] : results)
    sizes.push_back(r.stats.executions);

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<SubtreeResult> fresh;   // finished, not yet handed to hooks.finished
  std::exception_ptr failure;         // the first worker's exception, rethrown here
  std::atomic<std::size_t> cursor{0}; // next entry of `todo`
  std::atomic<std::uint32_t> stopAfter{std::numeric_limits<std::uint32_t>::max()};
  std::atomic<std::uint64_t> running{0}; // executions of this run, for progress
  std::atomic<unsigned> active{0};
  const unsigned jobs =
      std::max(1u, std::min<unsigned>(o.jobs, std::max<std::size_t>(todo.size(), 1)));
  struct Slot { // a worker's subtree in progress, for the estimate
    std::atomic<bool> busy{false};
    std::atomic<std::uint64_t> executions{0};
    std::atomic<double> searched{0};
  };
  std::vector<Slot> slots(jobs);
  auto lowerStop = [&](std::uint32_t i) {
    std::uint32_t cur = stopAfter.load();
    while (i < cur && !stopAfter.compare_exchange_weak(cur, i)) {
    }
  };
  if (auto s = stopIndex(order, results, o))
    lowerStop(*s);

  auto work = [&](Harness *given, Slot &slot) {
    try {
      std::unique_ptr<Harness> own;
      if (!given) {
        own = o.newHarness();
        given = own.get();
      }
      const SubtreeRunner runner(*given, first);
      while (true) {
        const std::size_t k = cursor.fetch_add(1);
        if (k >= todo.size())
          break;
        const std::uint32_t i = todo[k];
        if (i > stopAfter.load())
          continue;
        slot.executions = 0;
        slot.searched = 0;
        slot.busy = true;
        SubtreeResult r = runner.run(i, [&](double searched) {
          running.fetch_add(1);
          slot.executions.fetch_add(1);
          slot.searched = searched;
          return i > stopAfter.load();
        });
        slot.busy = false;
        if (i > stopAfter.load())
          continue; // abandoned: after the subtree the merge stops at
        if (r.counterexample && o.stopAtFirst)
          lowerStop(i);
        std::lock_guard lock(mutex);
        fresh.push_back(std::move(r));
        changed.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!failure)
        failure = std::current_exception();
      lowerStop(0);
    }
    std::lock_guard lock(mutex);
    --active;
    changed.notify_all();
  };

  if (jobs > 1 && !o.newHarness)
    FTSIM_PANIC("--jobs {} without a way to build the workers' harnesses", jobs);
  active = jobs;
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < jobs; ++w)
    threads.emplace_back(work, nullptr, std::ref(slots[w]));

  const auto start = std::chrono::steady_clock::now();
  std::uint64_t before = 0;
  for (const auto &[i, r] : results)
    before += r.stats.executions;
  // The coordination (results, hooks, progress) on a thread of its own, so that the first worker
  // runs on this thread: every engine is used only by the thread that created it.
  std::thread coordinator([&] {
    std::unique_lock lock(mutex);
    while (true) {
      changed.wait_for(lock, std::min(o.progressEvery, std::chrono::milliseconds(1000)),
                       [&] { return !fresh.empty() || active == 0; });
      std::vector<SubtreeResult> batch;
      batch.swap(fresh);
      const bool over = active == 0;
      const bool failed = static_cast<bool>(failure);
      lock.unlock();
      for (SubtreeResult &r : batch) {
        try {
          if (hooks.finished && !failed)
            hooks.finished(r); // a checkpoint that cannot be written stops every worker
        } catch (...) {
          std::lock_guard guard(mutex);
          if (!failure)
            failure = std::current_exception();
          lowerStop(0);
        }
        sizes.push_back(r.stats.executions);
        results[r.index] = std::move(r);
      }
      if (auto s = stopIndex(order, results, o))
        lowerStop(*s);
      if (o.progress) {
        ExploreStats p;
        p.executions = before + running.load();
        p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        p.subtrees = plan.count;
        p.subtreesResumed = resumed;
        std::vector<RunningSubtree> inProgress;
        for (const Slot &slot : slots)
          if (slot.busy)
            inProgress.push_back({slot.executions.load(), slot.searched.load()});
        const auto count = static_cast<std::uint32_t>(order.size());
        p.estimatedExecutions =
            std::max(p.executions, estimateExecutions(count, sizes, inProgress));
        if (!sizes.empty())
          p.estimatedFromFinished = std::max(p.executions, estimateExecutions(count, sizes));
        const std::uint64_t now = running.load();
        if (p.estimatedExecutions && now && p.seconds > 0)
          p.etaSeconds = static_cast<double>(p.estimatedExecutions -
                                             std::min(p.estimatedExecutions, p.executions)) *
                         p.seconds / static_cast<double>(now);
        o.progress(p);
      }
      lock.lock();
      if (over && fresh.empty())
        break;
    }
  });
  work(&x.harness(), slots[0]);
  coordinator.join();
  for (std::thread &t : threads)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
  if (hooks.end)
    hooks.end();
  mergeSubtrees(x, plan, results, resumed);
}

} // namespace ftsim::verify
