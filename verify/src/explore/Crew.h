#pragma once
// A crew of worker threads that build their harnesses while the caller plans (see the class).

#include "ftsim/verify/harness/Harness.h"

#include "ftsim/arch/Error.h"

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ftsim::verify {

// Worker threads besides the caller's, for a split search (SplitSearch.cpp) and an MPI rank's own
// worker (MpiCheck.cpp). Each builds its harness at once (none without `newHarness`), so that
// building them overlaps the plan, a serial part of every search (on the 3-CPU int3 tree a harness
// is about a twentieth of a whole search's time on one worker), then waits for its job; every
// engine stays on the thread that created it. Those started early are as many as the plan will
// likely need; the rest start with the job. Those given no job end, their harnesses unused.
// A crew may also be started before the caller builds its own harness (startWorkers, Subtrees.h),
// so that both are built at once; the first search to claim() it uses it.
class Crew {
public:
  using Job = std::function<void(unsigned worker, Harness *harness, std::exception_ptr failed)>;
  using NewHarness = std::function<std::unique_ptr<Harness>()>;

  Crew(unsigned early, const NewHarness &newHarness) : newHarness_(newHarness) {
    for (unsigned w = 1; w <= early; ++w)
      spawn(w);
  }
  ~Crew() { join(); }
  // True the first time only: this crew's workers are the caller's.
  bool claim() {
    std::lock_guard lock(mutex_);
    return !std::exchange(claimed_, true);
  }
  Crew(const Crew &) = delete;
  Crew &operator=(const Crew &) = delete;

  // Workers 1 to `workers` - 1 run `job`; the others end.
  void start(Job job, unsigned workers) {
    {
      std::lock_guard lock(mutex_);
      if (started_ && job)
        FTSIM_PANIC("a crew's workers given a second job (claim() it first)");
      if (started_)
        return;
      if (job)
        job_ = [job = std::move(job), workers](unsigned w, Harness *h, std::exception_ptr e) {
          if (w < workers)
            job(w, h, std::move(e));
        };
      started_ = true;
    }
    ready_.notify_all();
    for (auto w = static_cast<unsigned>(threads_.size()) + 1; w < workers; ++w)
      spawn(w);
  }
  void join() {
    start(nullptr, 0);
    for (std::thread &t : threads_)
      if (t.joinable())
        t.join();
  }

private:
  void spawn(unsigned w) {
    threads_.emplace_back([this, w] {
      std::unique_ptr<Harness> own;
      std::exception_ptr failed;
      try {
        if (newHarness_)
          own = newHarness_();
      } catch (...) {
        failed = std::current_exception(); // reported by the job, as any worker's failure
      }
      Job job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return started_; });
        job = job_;
      }
      if (job)
        job(w, own.get(), failed);
    });
  }

  const NewHarness newHarness_;
  std::mutex mutex_;
  std::condition_variable ready_;
  bool started_ = false;
  bool claimed_ = false;
  Job job_;
  std::vector<std::thread> threads_;
};

} // namespace ftsim::verify
