// The search of a split tree on worker threads (Subtrees.h, searchSplit): the workers share the
// subtrees' pieces out of one queue, the pieces a split leaves first, so that every worker helps
// with a large subtree rather than waiting for it; each subtree's result is assembled from its
// pieces in depth-first order and merged as a whole.

#include "ftsim/verify/explore/Subtrees.h"

#include "ftsim/arch/Error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

namespace ftsim::verify {
namespace {

using Path = std::vector<std::uint8_t>;

// A subtree some of whose pieces are searched or being searched.
struct OpenSubtree {
  std::vector<std::pair<Path, SubtreeResult>> done;
  std::size_t outstanding = 1; // pieces queued or running
  bool everyPiece = true;      // no piece dropped
  double searchedShare = 0;    // estimated share of the subtree the done pieces cover
  std::uint64_t executions = 0;
};

// A worker's piece in progress, for the estimate.
struct Slot {
  std::uint32_t index = 0;
  double share = 0;
  std::atomic<bool> busy{false};
  std::atomic<std::uint64_t> executions{0};
  std::atomic<double> searched{0};
};

} // namespace

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
  std::mutex mutex;
  std::condition_variable changed; // for the coordinator: results, or the workers done
  std::condition_variable queued;  // for idle workers: pieces, or nothing left
  std::deque<SubtreePiece> queue;
  std::map<std::uint32_t, OpenSubtree> open;
  std::size_t inFlight = 0; // pieces queued or running, over all subtrees
  for (std::uint32_t i : searchOrder(plan))
    if (std::binary_search(order.begin(), order.end(), i) && !results.count(i)) {
      queue.push_back(SubtreePiece{i, {}, nullptr, 1});
      ++inFlight;
    }
  std::vector<std::uint64_t> sizes; // executions of the finished subtrees, for the estimate
  for (const auto &[i, r] : results)
    sizes.push_back(r.stats.executions);

  std::vector<SubtreeResult> fresh; // finished, not yet handed to hooks.finished
  std::exception_ptr failure;       // the first worker's exception, rethrown here
  std::atomic<std::uint32_t> stopAfter{std::numeric_limits<std::uint32_t>::max()};
  std::atomic<std::uint64_t> running{0}; // executions of this run, for progress
  unsigned active = 0;
  const unsigned jobs =
      std::max(1u, std::min<unsigned>(o.jobs, std::max<std::size_t>(queue.size(), 1)));
  std::vector<Slot> slots(jobs);
  auto lowerStop = [&](std::uint32_t i) {
    std::uint32_t cur = stopAfter.load();
    while (i < cur && !stopAfter.compare_exchange_weak(cur, i)) {
    }
  };
  if (auto s = mergeStop(order, results, o))
    lowerStop(*s);

  // Under the lock: one piece of subtree `index` is over (searched, dropped or split); the
  // subtree's result once none is left.
  auto pieceOver = [&](std::uint32_t index, OpenSubtree &t) {
    --inFlight;
    if (--t.outstanding == 0) {
      SubtreeResult r = assembleSubtree(index, std::move(t.done), t.everyPiece, o);
      open.erase(index);
      if (index <= stopAfter.load()) {
        if (r.counterexample && o.stopAtFirst)
          lowerStop(index);
        fresh.push_back(std::move(r));
        changed.notify_all();
      }
    }
    if (inFlight == 0)
      queued.notify_all();
  };

  auto work = [&](Harness *given, Slot &slot) {
    try {
      std::unique_ptr<Harness> own;
      if (!given) {
        own = o.newHarness();
        given = own.get();
      }
      const SubtreeRunner runner(*given, first);
      std::unique_lock lock(mutex);
      while (true) {
        queued.wait(lock, [&] { return !queue.empty() || inFlight == 0 || failure; });
        if (queue.empty() || failure)
          break;
        SubtreePiece piece = std::move(queue.front());
        queue.pop_front();
        OpenSubtree &t = open[piece.index];
        if (piece.index > stopAfter.load() || !pieceNeeded(piece.path, t.done, o)) {
          t.everyPiece = false;
          pieceOver(piece.index, t);
          continue;
        }
        slot.index = piece.index;
        slot.share = piece.share;
        slot.executions = 0;
        slot.searched = 0;
        slot.busy = true;
        lock.unlock();
        const std::uint32_t i = piece.index;
        PieceOutcome out = runner.runPiece(piece, [&](double searched) {
          running.fetch_add(1);
          slot.executions.fetch_add(1);
          slot.searched = searched;
          return i > stopAfter.load();
        });
        lock.lock();
        slot.busy = false;
        OpenSubtree &u = open[i];
        u.executions += out.result.stats.executions;
        u.searchedShare += piece.share;
        for (const SubtreePiece &p : out.rest)
          u.searchedShare -= p.share;
        u.done.emplace_back(std::move(piece.path), std::move(out.result));
        u.outstanding += out.rest.size();
        inFlight += out.rest.size();
        for (std::size_t k = out.rest.size(); k-- > 0;)
          queue.push_front(std::move(out.rest[k])); // next: the pieces of a large subtree
        if (!out.rest.empty())
          queued.notify_all();
        pieceOver(i, u);
      }
    } catch (...) {
      std::lock_guard guard(mutex);
      if (!failure)
        failure = std::current_exception();
      lowerStop(0);
      queued.notify_all();
    }
    std::lock_guard guard(mutex);
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
  // The progress line's estimate (estimateExecutions): every open subtree counts with its
  // executions over the share of it its finished and running pieces cover.
  auto estimate = [&](std::uint32_t count) {
    std::map<std::uint32_t, RunningSubtree> inProgress;
    for (const auto &[i, t] : open) {
      inProgress[i].executions += t.executions;
      inProgress[i].searched += t.searchedShare;
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
          std::lock_guard guard(mutex);
          if (!failure)
            failure = std::current_exception();
          lowerStop(0);
          queued.notify_all();
        }
        sizes.push_back(r.stats.executions);
        results[r.index] = std::move(r);
      }
      if (auto s = mergeStop(order, results, o))
        lowerStop(*s);
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
