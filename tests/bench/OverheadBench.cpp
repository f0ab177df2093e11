// The slides' "retq only is 13% added overhead": the same guest workload with every profiling call
// left in place (each site calls __fentry__, which just returns) against the booted kernel (every
// site a 5-byte nop). Reported as guest instructions (exact, from the simulator) and host time per
// run, both as ratios against the nop baseline measured in the same process. The simulator counts
// instructions, not cycles: see papers/retq-overhead.md for what that can and cannot say.

#include "ftsim/arch/Image.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <map>

using namespace ftsim;

namespace {

arch::Image image(const std::string &flavour, bool booted) {
  arch::Image img = arch::loadImage(std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/kernel.elf");
  if (booted)
    model::StaticBoot boot(img);
  return img;
}

struct Baseline {
  std::uint64_t instructions = 0;
  double secondsPerRun = 0;
};

std::map<std::string, Baseline> &baselines() {
  static std::map<std::string, Baseline> m;
  return m;
}

// `workload` on one CPU, every instruction an event. The machine is built once; each iteration
// restores the snapshot taken before the run (engines and translated code stay alive), so the
// time measured is execution, not set-up.
void BM_Workload(benchmark::State &state, const std::string &flavour, const std::string &workload,
                 bool booted) {
  const arch::Image img = image(flavour, booted);
  sim::MachineConfig config;
  config.cpus = 1;
  sim::Machine machine(*img.arch, config);
  machine.loadImage(img);
  machine.addTask({workload, 0, img.findSymbol(workload)->addr, 7});
  const sim::Snapshot start = machine.snapshot();
  std::uint64_t instructions = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    machine.restore(start);
    sim::RoundRobinScheduler scheduler;
    machine.run(scheduler, 50'000'000);
    instructions = machine.steppedInstructions();
  }
  const double perRun =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      static_cast<double>(state.iterations());
  const std::string key = flavour + "/" + workload;
  if (booted)
    baselines()[key] = {instructions, perRun};
  state.counters["guest_instructions"] = static_cast<double>(instructions);
  if (!booted && baselines().count(key)) {
    const Baseline &base = baselines()[key];
    state.counters["instr_vs_nops"] =
        static_cast<double>(instructions) / static_cast<double>(base.instructions);
    state.counters["time_vs_nops"] = perRun / base.secondsPerRun;
  }
}

} // namespace

// Baselines first (Google Benchmark runs them in registration order).

BENCHMARK_CAPTURE(BM_Workload, fentry_mixed_nops, "x86_64-fentry", "workload_mixed", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, fentry_mixed_call_ret, "x86_64-fentry", "workload_mixed", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, fentry_tight_nops, "x86_64-fentry", "workload_tight", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, fentry_tight_call_ret, "x86_64-fentry", "workload_tight", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, mcount_mixed_nops, "x86_64-mcount", "workload_mixed", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, mcount_mixed_call_ret, "x86_64-mcount", "workload_mixed", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, ppc32_mixed_nops, "ppc32-mcount", "workload_mixed", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, ppc32_mixed_call_ret, "ppc32-mcount", "workload_mixed", false)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
