// The search of a split tree on worker threads (Subtrees.h, searchSplit): the workers share the
// subtrees' pieces out of one queue, the pieces a split leaves first, so that every worker helps
// with a large subtree rather than waiting for it; each subtree's result is assembled from its
// pieces in depth-first order and merged as a whole. The other workers build their harnesses while
// this thread plans the tree (Crew.h).

#include "Crew.h"

#include "ftsim/verify/explore/PieceQueue.h"
#include "ftsim/verify/explore/Subtrees.h"

#include "ftsim/arch/Error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

namespace ftsim::verify {
namespace {

// A worker's piece in progress, for the estimate.
struct Slot {
  std::uint32_t index = 0;
  double share = 0;
  std::atomic<bool> busy{false};
  std::atomic<std::uint64_t> executions{0};
  std::atomic<double> searched{0};
};

// Workers to start before the plan: one per subtree asked for, at most.
unsigned earlyWorkers(const ExploreOptions &o) {
  return o.newHarness ? std::min(std::max(1u, o.jobs), std::max(1u, o.subtrees)) - 1 : 0;
}

} // namespace

bool searchesSplitTree(const ExploreOptions &o) {
  return o.explorer == "exhaustive" && o.subtrees > 0;
}

std::shared_ptr<Crew> startWorkers(const ExploreOptions &o) {
  if (!searchesSplitTree(o) || earlyWorkers(o) == 0)
    return nullptr;
  return std::make_shared<Crew>(earlyWorkers(o), o.newHarness);
}

void searchSplit(Exploration &x, const SubtreeHooks &hooks) {
  const ExploreOptions &o = x.options();
  const std::shared_ptr<Crew> crewOwner =
      o.crew && o.crew->claim() ? o.crew : std::make_shared<Crew>(earlyWorkers(o), o.newHarness);
  Crew &crew = *crewOwner;
  struct Joined { // the workers use this frame: they end before it does, whoever else owns them
    Crew &crew;
    ~Joined() { crew.join(); }
  } joined{crew};
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
  std::mutex mutex;
  std::condition_variable changed; // for the coordinator: results, or the workers done
  std::condition_variable queued;  // for idle workers: pieces, or nothing left
  std::vector<std::uint32_t> todo;
  for (std::uint32_t i : searchOrder(plan))
    if (std::binary_search(order.begin(), order.end(), i) && !results.count(i))
      todo.push_back(i);
  PieceQueue queue(o, todo);
  std::vector<std::uint64_t> sizes; // executions of the finished subtrees, for the estimate
  for (const auto &[i, r] : results)
    sizes.push_back(r.stats.executions);

  std::vector<SubtreeResult> fresh; // finished, not yet handed to hooks.finished
  std::exception_ptr failure;       // the first worker's exception, rethrown here
  std::atomic<std::uint32_t> stopAfter{std::numeric_limits<std::uint32_t>::max()};
  std::atomic<std::uint64_t> running{0}; // executions of this run, for progress
  unsigned active = 0;
  const unsigned jobs =
      std::max(1u, std::min<unsigned>(o.jobs, std::max<std::size_t>(todo.size(), 1)));
  std::vector<Slot> slots(jobs);
  auto lowerStop = [&](std::uint32_t i) { // under the lock
    queue.stopAfter(i);
    std::uint32_t cur = stopAfter.load();
    while (i < cur && !stopAfter.compare_exchange_weak(cur, i)) {
    }
  };
  if (auto s = mergeStop(order, results, o))
    lowerStop(*s);

  // Under the lock: the subtrees the queue finished, for the coordinator.
  auto collect = [&] {
    for (SubtreeResult &r : queue.results()) {
      if (r.counterexample && o.stopAtFirst)
        lowerStop(r.index);
      fresh.push_back(std::move(r));
      changed.notify_all();
    }
  };

  // In a handler: the first failure is rethrown at the end; every worker stops.
  auto fail = [&] {
    std::lock_guard guard(mutex);
    if (!failure)
      failure = std::current_exception();
    lowerStop(0);
    queued.notify_all();
  };

  auto work = [&](Harness *given, std::exception_ptr failed, Slot &slot) {
    try {
      if (failed)
        std::rethrow_exception(failed);
      const SubtreeRunner runner(*given, first);
      std::unique_lock lock(mutex);
      while (true) {
        std::optional<SubtreePiece> piece;
        queued.wait(lock, [&] { return (piece = queue.take()) || queue.drained() || failure; });
        collect(); // subtrees whose last pieces take() dropped
        if (!piece || failure) {
          queued.notify_all(); // the others: nothing left
          break;
        }
        slot.index = piece->index;
        slot.share = piece->share;
        slot.executions = 0;
        slot.searched = 0;
        slot.busy = true;
        lock.unlock();
        const std::uint32_t i = piece->index;
        PieceOutcome out = runner.runPiece(*piece, [&](double searched) {
          running.fetch_add(1);
          slot.executions.fetch_add(1);
          slot.searched = searched;
          return i > stopAfter.load();
        });
        lock.lock();
        slot.busy = false;
        const bool split = !out.rest.empty();
        queue.finished(*piece, std::move(out));
        collect();
        if (split || queue.drained())
          queued.notify_all();
      }
    } catch (...) {
      fail();
    }
    std::lock_guard guard(mutex);
    --active;
    changed.notify_all();
  };

  if (jobs > 1 && !o.newHarness)
    FTSIM_PANIC("--jobs {} without a way to build the workers' harnesses", jobs);
  active = jobs;
  crew.start([&](unsigned w, Harness *h, std::exception_ptr e) { work(h, std::move(e), slots[w]); },
             jobs);

  const auto start = std::chrono::steady_clock::now();
  std::uint64_t before = 0;
  for (const auto &[i, r] : results)
    before += r.stats.executions;
  // The progress line's estimate (estimateExecutions): every open subtree counts with its
  // executions over the share of it its finished and running pieces cover.
  auto estimate = [&](std::uint32_t count) {
    std::map<std::uint32_t, RunningSubtree> inProgress;
    for (const auto &[i, t] : queue.open()) {
      inProgress[i].executions += t.executions;
      inProgress[i].searched += t.searched;
    }
    for (const Slot &slot : slots)
      if (slot.busy) {
        RunningSubtree &r = inProgress[slot.index];
        r.executions += slot.executions.load();
        r.searched += slot.share * slot.searched.load();
      }
    std::vector<RunningSubtree> list;
    for (const auto &[i, r] : inProgress)
      list.push_back({r.executions, std::min(1.0, r.searched)});
    return estimateExecutions(count, sizes, list);
  };
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
          fail();
        }
        sizes.push_back(r.stats.executions);
        results[r.index] = std::move(r);
      }
      if (auto s = mergeStop(order, results, o)) {
        std::lock_guard guard(mutex);
        lowerStop(*s);
      }
      if (o.progress) {
        ExploreStats p;
        p.executions = before + running.load();
        p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        p.subtrees = plan.count;
        p.subtreesResumed = resumed;
        const auto count = static_cast<std::uint32_t>(order.size());
        lock.lock();
        p.estimatedExecutions = std::max(p.executions, estimate(count));
        lock.unlock();
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
  work(&x.harness(), nullptr, slots[0]);
  coordinator.join();
  crew.join();
  if (failure)
    std::rethrow_exception(failure);
  if (hooks.end)
    hooks.end();
  mergeSubtrees(x, plan, results, resumed);
}

} // namespace ftsim::verify
