// Split trees (Subtrees.h): `--jobs 2` against `--jobs 1` on the same split tree in one run, and
// the error of the executions estimate after 10% of a search. Run build/tests/verify/
// ftsim_bench_parallel (wall time: the workers are threads).
//
//  jobs/<scenario>:     counters jobs1_s and jobs2_s (medians of alternating runs, wall clock),
//                       ratio = jobs2_s / jobs1_s, and executions (equal for both, checked).
//                       The machine's own yardstick, in the same rounds: pair_s, two `--jobs 1`
//                       searches at once on two threads (each its own harness), and
//                       pair_ratio = pair_s / 2 / jobs1_s, what one search costs when two share the
//                       machine (0.5 if the two cores served two searches as fast as one);
//                       vs_pair = jobs2_s / (pair_s / 2), one search on two workers against half
//                       of that pair (1.0: the workers lose nothing to splitting the tree).
//  estimate/<scenario>: estimate_error_pct = (estimate - actual) / actual x 100, the estimate of
//                       the progress line when 10% of the executions are done, and
//                       finished_only_error_pct for the finished subtrees' mean alone; the same
//                       at 50% (at50_*).

#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/explore/Subtrees.h"
#include "ftsim/verify/harness/SiteHarness.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace {

using namespace ftsim;

verify::Scenario scenario(const char *protocol, unsigned cpus, unsigned sites) {
  verify::Scenario s;
  s.name = "bench";
  s.protocol = protocol;
  s.cpus = cpus;
  s.sites.assign(sites, verify::Transition::NopToCall);
  return s;
}

verify::ExploreOptions options(const verify::Scenario &s, unsigned jobs) {
  verify::ExploreOptions o = verify::exploreOptionsFor(s);
  o.subtrees = verify::kDefaultSubtrees;
  o.jobs = jobs;
  o.newHarness = [s] { return std::make_unique<verify::SiteHarness>(s); };
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void jobs(benchmark::State &state, verify::Scenario s) {
  verify::SiteHarness harness(s), second(s);
  std::vector<double> one, two, pair;
  std::uint64_t executions[2] = {0, 0};
  auto seconds = [](auto &&f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (auto _ : state) {
    for (unsigned j : {1u, 2u}) {
      verify::ExploreResult r;
      (j == 1 ? one : two).push_back(seconds([&] { r = verify::explore(harness, options(s, j)); }));
      executions[j - 1] = r.stats.executions;
      if (!r.stats.complete)
        state.SkipWithError("the search did not complete");
    }
    verify::ExploreResult other;
    pair.push_back(seconds([&] {
      std::thread t([&] { other = verify::explore(second, options(s, 1)); });
      const verify::ExploreResult r = verify::explore(harness, options(s, 1));
      t.join();
      if (r.stats.executions != executions[0] || other.stats.executions != executions[0])
        state.SkipWithError("two searches at once ran other executions than one");
    }));
  }
  if (executions[0] != executions[1])
    state.SkipWithError("--jobs 2 ran other executions than --jobs 1");
  state.counters["executions"] = static_cast<double>(executions[0]);
  state.counters["jobs1_s"] = median(one);
  state.counters["jobs2_s"] = median(two);
  state.counters["ratio"] = median(two) / median(one);
  state.counters["pair_s"] = median(pair);
  state.counters["pair_ratio"] = median(pair) / 2 / median(one);
  state.counters["vs_pair"] = median(two) / (median(pair) / 2);
}

// The estimate the progress line shows (reports every 2 ms, one worker) at the first report with
// at least 10% of the executions done, against the tree's size; next to it, at the same report,
// the estimate from the finished subtrees alone (count x their mean, never below the executions so
// far), which the progress line showed before running subtrees were estimated from their paths.
void estimate(benchmark::State &state, verify::Scenario s) {
  verify::SiteHarness harness(s);
  double error = 0, finishedOnlyError = 0;
  for (auto _ : state) {
    std::uint32_t count = 0;
    std::vector<std::uint64_t> sizes;
    struct Report {
      std::uint64_t executions, estimate, finishedOnly;
    };
    std::vector<Report> reports;
    verify::SubtreeHooks hooks;
    hooks.begin = [&](const verify::SubtreePlan &plan, auto &) { count = plan.count; };
    hooks.finished = [&](const verify::SubtreeResult &r) { sizes.push_back(r.stats.executions); };
    verify::ExploreOptions o = options(s, 1);
    o.subtreeHooks = &hooks;
    o.progressEvery = std::chrono::milliseconds(2);
    o.progress = [&](const verify::ExploreStats &p) {
      reports.push_back({p.executions, p.estimatedExecutions,
                         std::max(p.executions, verify::estimateExecutions(count, sizes))});
    };
    const verify::ExploreResult r = verify::explore(harness, o);
    const auto actual = static_cast<double>(r.stats.executions);
    for (double share : {0.1, 0.5}) {
      auto at = std::find_if(reports.begin(), reports.end(), [&](const Report &x) {
        return static_cast<double>(x.executions) >= share * actual;
      });
      if (at == reports.end()) {
        state.SkipWithError("no progress report after 10% or 50% of the executions");
        return;
      }
      const double e = (static_cast<double>(at->estimate) - actual) / actual * 100;
      const double f = (static_cast<double>(at->finishedOnly) - actual) / actual * 100;
      if (share == 0.1) {
        error = e;
        finishedOnlyError = f;
      } else {
        state.counters["at50_estimate_error_pct"] = e;
        state.counters["at50_finished_only_error_pct"] = f;
      }
    }
    state.counters["executions"] = actual;
  }
  state.counters["estimate_error_pct"] = error;
  state.counters["finished_only_error_pct"] = finishedOnlyError;
}
BENCHMARK_CAPTURE(jobs, int3_3cpus, scenario("int3", 3, 1))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(7);
BENCHMARK_CAPTURE(jobs, int3_2cpus_3sites, scenario("int3", 2, 3))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(estimate, int3_2cpus, scenario("int3", 2, 1))->Iterations(1);
BENCHMARK_CAPTURE(estimate, int3_2cpus_2sites, scenario("int3", 2, 2))->Iterations(1);
BENCHMARK_CAPTURE(estimate, int3_2cpus_3sites, scenario("int3", 2, 3))->Iterations(1);
BENCHMARK_CAPTURE(estimate, int3_3cpus, scenario("int3", 3, 1))->Iterations(1);

} // namespace

BENCHMARK_MAIN();
