// The sampling explorers: PCT and uniform random (Explore.h).

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace ftsim::verify {
namespace {

using namespace detail;

// PCT or uniform random, one execution.
class RandomisedScheduler final : public CountingScheduler {
public:
  RandomisedScheduler(bool pct, std::mt19937_64 &rng, unsigned depth, std::uint64_t k)
      : pct_(pct), rng_(rng) {
    if (!pct_)
      return;
    // Distinct initial priorities d .. d+n-1 (higher runs first), in random order.
    std::vector<int> order(kIrqProcesses);
    for (int i = 0; i < kIrqProcesses; ++i)
      order[i] = static_cast<int>(depth) + i;
    std::shuffle(order.begin(), order.end(), rng_);
    priority_ = order;
    // A CPU's timer interrupt with a handler ranks with its preemption (the same draws as before
    // interrupts ran handlers, so seeds keep finding what they found).
    for (int cpu = 0; kIrqProcesses + cpu < kProcesses; ++cpu)
      priority_.push_back(priority_[cpu * 3 + 2]);
    // d-1 change points among the first k events; at the i-th, the running process drops to
    // priority d-1-i (below every initial priority).
    for (unsigned i = 1; i < depth; ++i)
      changes_.push_back({std::uniform_int_distribution<std::uint64_t>(1, k)(rng_),
                          static_cast<int>(depth) - 1 - static_cast<int>(i)});
  }

protected:
  std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
    if (!pct_ || p.kind == DecisionKind::StaleByte)
      return static_cast<std::uint32_t>(
          std::uniform_int_distribution<std::uint32_t>(0, p.options - 1)(rng_));
    auto best = [&] {
      std::uint32_t b = 0;
      for (std::uint32_t i = 1; i < p.options; ++i)
        if (priority_[processOf(p.events[i])] > priority_[processOf(p.events[b])])
          b = i;
      return b;
    };
    std::uint32_t pick = best();
    const std::uint64_t step = m.eventCount();
    for (auto &[at, low] : changes_)
      if (at == step && low >= 0) {
        priority_[processOf(p.events[pick])] = low;
        low = -1;
        pick = best();
      }
    return pick;
  }

private:
  bool pct_;
  std::mt19937_64 &rng_;
  std::vector<int> priority_;
  std::vector<std::pair<std::uint64_t, int>> changes_;
};

void randomised(Exploration &x, bool pct) {
  const ExploreOptions &o = x.options();
  std::mt19937_64 rng(o.seed);
  std::uint64_t k = 0; // PCT: the expected number of events of an execution
  for (std::uint64_t r = 0; r < o.maxExecutions; ++r) {
    RandomisedScheduler sched(pct, rng, o.pctDepth, std::max<std::uint64_t>(k, 1));
    // Under a wall-time limit one execution may not outlast it: the clock is read every 1,024
    // events, and an execution stopped there is not counted (it has no verdict).
    std::uint64_t events = 0;
    bool overtime = false;
    const std::function<bool()> stop = [&] {
      overtime = overtime || (++events % 1024 == 0 && x.pastWallLimit());
      return overtime;
    };
    const sim::RunResult run =
        o.wallSeconds > 0 ? x.harness().runExecution(sched, stop) : x.harness().runExecution(sched);
    if (overtime)
      return;
    k = std::max<std::uint64_t>(k, x.harness().machine().eventCount());
    if (!x.finish(sched, sched.preemptions(), false, run))
      return;
  }
}

class PctExplorer final : public Explorer {
public:
  std::string_view name() const override { return "pct"; }
  bool exhaustive() const override { return false; }
  std::string bounds(const Harness &, const ExploreOptions &o) const override {
    return fmt::format("seed {}, depth {}", o.seed, o.pctDepth);
  }
  void run(Exploration &x) const override { randomised(x, true); }
};

class RandomExplorer final : public Explorer {
public:
  std::string_view name() const override { return "random"; }
  bool exhaustive() const override { return false; }
  std::string bounds(const Harness &, const ExploreOptions &o) const override {
    return fmt::format("seed {}", o.seed);
  }
  void run(Exploration &x) const override { randomised(x, false); }
};

} // namespace

const Explorer &pctExplorer() {
  static const PctExplorer e;
  return e;
}

const Explorer &randomExplorer() {
  static const RandomExplorer e;
  return e;
}

} // namespace ftsim::verify
