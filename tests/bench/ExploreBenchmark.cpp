// Exploration benchmark: one complete exhaustive exploration per iteration, with source-DPOR +
// sleep sets and naive, on the same site-level scenarios. Counters: executions of one exploration
// (the reduction factor is naive/dpor) and executions per second (CPU time of the thread, which
// includes restoring the snapshot, running the machine and the oracles).
// Run build/tests/verify/ftsim_bench_explore.

#include "ftsim/verify/Explore.h"
#include "ftsim/verify/ScenarioInstance.h"

#include <benchmark/benchmark.h>

namespace {

using namespace ftsim;

verify::Scenario scenario(const char *protocol, unsigned cpus, unsigned sites,
                          verify::Transition t) {
  verify::Scenario s;
  s.name = "bench";
  s.protocol = protocol;
  s.cpus = cpus;
  s.sites.assign(sites, t);
  return s;
}

void explore(benchmark::State &state, verify::Scenario s, bool reduction) {
  verify::ScenarioInstance instance(s);
  verify::ExploreOptions o;
  o.reduction = reduction;
  o.stopAtFirst = false;
  verify::ExploreResult r;
  std::uint64_t executions = 0;
  for (auto _ : state) {
    r = verify::explore(instance, o);
    executions += r.stats.executions;
  }
  if (!r.stats.complete)
    state.SkipWithError("exploration did not complete");
  state.counters["executions"] = static_cast<double>(r.stats.executions);
  state.counters["states"] = static_cast<double>(r.stats.distinctStates);
  state.counters["exec_per_s"] =
      benchmark::Counter(static_cast<double>(executions), benchmark::Counter::kIsRate);
}

using T = verify::Transition;
BENCHMARK_CAPTURE(explore, int3_2cpu_1site_dpor, scenario("int3", 2, 1, T::NopToCall), true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, int3_2cpu_1site_naive, scenario("int3", 2, 1, T::NopToCall), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, int3_2cpu_call2call_dpor, scenario("int3", 2, 1, T::CallToCall), true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, int3_2cpu_call2call_naive, scenario("int3", 2, 1, T::CallToCall), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, int3_2cpu_2sites_dpor, scenario("int3", 2, 2, T::NopToCall), true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(explore, int3_2cpu_2sites_naive, scenario("int3", 2, 2, T::NopToCall), false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

} // namespace

BENCHMARK_MAIN();
