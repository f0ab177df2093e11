// Part of ftsim_bench_tramp: enabling the function tracer on every site of an N-function synthetic
// image on the simulated machine (kernel/EnableAtScale.h: the patcher writes current_tracer while
// the other CPUs idle and take its IPIs; every store and sync is a scheduled event), next to its
// baseline in the same run: booting the same image (ftrace_init's read-verify-nop of every site,
// text_poke_early, and the machine's construction). Counters: batches, syncs and stores of the
// enabling (x86 text_poke_bp_batch: 3 syncs per batch of up to 256 sites), its wall-clock and
// process-CPU seconds (on a shared machine the CPU seconds are what it costs), and `vs_boot`, the
// enabling's CPU time over the boot's.
//
//   build/tests/bench/ftsim_bench_tramp --benchmark_filter=AtScale

#include "ftsim/arch/Image.h"
#include "ftsim/kernel/EnableAtScale.h"
#include "ftsim/kernel/Kernel.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>

using namespace ftsim;

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double processSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void BM_EnableAtScale(benchmark::State &state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const arch::Arch &isa = arch::archByName("x86_64");
  const arch::Image image = arch::syntheticImage(isa, n, 1);
  const kernel::KernelConfig config = kernel::enableAtScaleConfig(2, "");
  double boot = 0, enable = 0, bootCpu = 0, enableCpu = 0;
  kernel::EnableAtScaleReport report;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = processSeconds();
    kernel::Kernel k(image, config);
    boot += since(t0);
    bootCpu += processSeconds() - c0;
    t0 = std::chrono::steady_clock::now();
    c0 = processSeconds();
    report = kernel::enableTracer(k, "function");
    enable += since(t0);
    enableCpu += processSeconds() - c0;
    if (!report.completed)
      state.SkipWithError("the patcher did not finish");
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["records"] = static_cast<double>(report.records);
  state.counters["batches"] = static_cast<double>(report.stats.batches);
  state.counters["syncs"] = static_cast<double>(report.stats.syncs);
  state.counters["stores"] = static_cast<double>(report.stats.stores);
  state.counters["enable_s"] = enable / iterations;
  state.counters["enable_cpu_s"] = enableCpu / iterations;
  state.counters["boot_s"] = boot / iterations;
  state.counters["vs_boot"] = enableCpu / bootCpu;
}
BENCHMARK(BM_EnableAtScale)->Arg(1000)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
