// Exploration benchmark: one complete exhaustive exploration per iteration, with source-DPOR +
// sleep sets and naive, on the same site-level scenarios. Counters: executions of one exploration
// (the reduction factor is naive/dpor) and executions per second (CPU time of the thread, which
// includes restoring the snapshot, running the machine and the patcher, and the oracles: the
// patcher runs on this thread). The same explorations by an earlier build: time its
// `ftsim check` on the same scenarios side by side with this one's.
// Run build/tests/verify/ftsim_bench_explore.

#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/SiteHarness.h"

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

void explore(benchmark::State &state, verify::Scenario s, bool reduction, int bound) {
  verify::SiteHarness instance(s);
  verify::ExploreOptions o;
  o.reduction = reduction;
  o.preemptionBound = bound;
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

verify::Scenario atomic(verify::Scenario s) {
  s.store = sim::StoreModel::Line;
  s.fetch = &sim::fetchModelByName("atomic");
  return s;
}

using T = verify::Transition;
// Naive exploration of the stale model without a bound does not finish in minutes: compare at
// preemption bound 2 there, and unbounded under atomic fetch with line stores.
BENCHMARK_CAPTURE(explore, int3_stale_bound2_dpor, scenario("int3", 2, 1, T::NopToCall), true, 2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(explore, int3_stale_bound2_naive, scenario("int3", 2, 1, T::NopToCall), false, 2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(explore, int3_atomic_dpor, atomic(scenario("int3", 2, 1, T::NopToCall)), true, -1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(explore, int3_atomic_naive, atomic(scenario("int3", 2, 1, T::NopToCall)), false,
                  -1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(explore, int3_stale_2sites_dpor, scenario("int3", 2, 2, T::NopToCall), true, -1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// `ftsim check --protocol int3 --fetch stale --store byte [--cpus 3]`: 68 and 9244 executions.
BENCHMARK_CAPTURE(explore, int3_stale_2cpus_dpor, scenario("int3", 2, 1, T::NopToCall), true, -1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);
BENCHMARK_CAPTURE(explore, int3_stale_3cpus_dpor, scenario("int3", 3, 1, T::NopToCall), true, -1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

} // namespace

BENCHMARK_MAIN();
