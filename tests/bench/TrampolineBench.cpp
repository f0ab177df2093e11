// f3bea49115b2's point in numbers (f3bea491): the function tracer on every function
// and a kprobe-like ops (SAVE_REGS) on schedule. Before per-ops trampolines every traced call goes
// ftrace_caller -> ftrace_ops_list_func, which tests both ops' hashes; with them, every function
// but schedule calls the tracer's own trampoline, which calls function_trace_call directly. Both
// configurations run workload_tight (256 calls of decay_load) on one CPU, every instruction an
// event, in the same iteration, against the untraced run:
//   guest instructions per traced call (exact, Machine::steppedInstructions), ops tested per call
//   (the list function's ftrace_ops_test loop: host code in the simulator, which models the C list
//   function as a hypercall), and host time per call.

#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <benchmark/benchmark.h>

#include <chrono>

using namespace ftsim;

namespace {

struct Measured {
  std::uint64_t instructions = 0;
  std::uint64_t calls = 0;     // callbacks from trampolines
  std::uint64_t listCalls = 0; // of which through the list function
  std::size_t opsListed = 0;   // ops on the list while it ran
  double seconds = 0;
};

Measured runOnce(const arch::Image &image, bool traced, bool opsTrampolines) {
  kernel::KernelConfig config;
  config.machine.cpus = 1;
  config.opsTrampolines = opsTrampolines;
  if (image.name.find("mcount") != std::string::npos) // mcount sites: Linux 4.19's code
    kernel::applyLinuxProfile(config, "4.19", "x86_64");
  kernel::Kernel kernel(image, config);
  model::FtraceOps kprobe("kprobe_ftrace_ops", {}, model::OpsFlag::SaveRegs);
  kprobe.func = [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {};
  if (traced) {
    kernel.core().setFilter(kprobe, "schedule", true);
    kernel.tracefs().write("current_tracer", "function");
    kernel.core().registerFunction(kprobe);
  }
  kernel.addWorkload("tight", 0, 1);
  sim::RoundRobinScheduler scheduler;
  const auto begin = std::chrono::steady_clock::now();
  kernel.run(scheduler);
  Measured m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  m.instructions = kernel.machine().steppedInstructions();
  m.calls = kernel.callbacks().size();
  for (const kernel::CallbackEvent &c : kernel.callbacks())
    m.listCalls += c.function == "ftrace_ops_list_func";
  m.opsListed = kernel.core().opsList().size();
  return m;
}

void BM_ListFunctionVsOpsTrampoline(benchmark::State &state, const std::string &flavour) {
  const arch::Image image =
      arch::loadImage(std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/kernel.elf");
  Measured base, list, tramp;
  for (auto _ : state) {
    base = runOnce(image, false, false);
    list = runOnce(image, true, false);
    tramp = runOnce(image, true, true);
  }
  if (!list.calls || list.calls != tramp.calls) {
    state.SkipWithError("the two configurations traced different numbers of calls");
    return;
  }
  const double calls = static_cast<double>(list.calls);
  auto perCall = [&](const Measured &m) {
    return static_cast<double>(m.instructions - base.instructions) / calls;
  };
  state.counters["traced_calls"] = calls;
  state.counters["list_insn_per_call"] = perCall(list);
  state.counters["tramp_insn_per_call"] = perCall(tramp);
  state.counters["saved_insn_per_call"] = perCall(list) - perCall(tramp);
  state.counters["list_ops_tested_per_call"] =
      static_cast<double>(list.listCalls * list.opsListed) / calls;
  state.counters["tramp_ops_tested_per_call"] =
      static_cast<double>(tramp.listCalls * tramp.opsListed) / calls;
  state.counters["list_host_ns_per_call"] = (list.seconds - base.seconds) * 1e9 / calls;
  state.counters["tramp_host_ns_per_call"] = (tramp.seconds - base.seconds) * 1e9 / calls;
}

BENCHMARK_CAPTURE(BM_ListFunctionVsOpsTrampoline, x86_64_fentry, std::string("x86_64-fentry"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_ListFunctionVsOpsTrampoline, x86_64_mcount, std::string("x86_64-mcount"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

} // namespace

BENCHMARK_MAIN();
