// ftsim trace: boot a guest image on the simulated machine, enable a tracer through the simulated
// tracefs before the workloads start (boot-time patching), run one workload task per CPU under a
// seeded random schedule, and print what `cat trace` (and optionally trace_stat, stack_trace)
// shows, in Linux's formats.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/kernel/EnableAtScale.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/RandomScheduler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

namespace ftsim::cli {
namespace {

struct TraceOptions {
  std::string arch = defaultArchName();
  unsigned cpus = 4;
  std::string tracer = "function";
  std::vector<std::string> filters;
  std::vector<std::string> notrace;
  std::vector<std::string> graphFunctions;
  std::string workload = "mixed";
  std::string
      protocol; // "": the ISA's correct protocol (int3 on x86_64, patch-instruction on ppc32)
  std::string linuxProfile; // "": none; else its protocol, update order, trampoline freeing
  std::uint64_t seed = 1;
  std::uint64_t maxEvents = 50'000'000;
  std::string image;
  bool profile = false;
  bool stack = false;
  std::size_t synthetic = 0; // >0: enable the tracer on an N-function synthetic image, no trace
  bool progress = false;
};

// --synthetic N: what enabling the tracer on every site costs, deterministic counts only (the
// time is ftsim_bench_tramp's BM_EnableAtScale).
void runSynthetic(const TraceOptions &o, CommandResult &result) {
  const kernel::EnableAtScaleReport r = kernel::enableAtScale(
      arch::archByName(o.arch), o.synthetic, o.cpus, o.tracer, o.protocol, o.seed, o.linuxProfile);
  fmt::print("{} ({} CPUs, {} protocol): {} tracer on {} records: {} batches, {} syncs, {} "
             "stores, {} sites patched, {} machine events\n",
             r.image, o.cpus, r.protocol, o.tracer, r.records, r.stats.batches, r.stats.syncs,
             r.stats.stores, r.stats.sites, r.events);
  if (!r.completed) {
    std::fprintf(stderr, "ftsim: trace: the patcher did not finish\n");
    result.exitCode = 1;
  }
}

void runTrace(const TraceOptions &o, CommandResult &result) {
  kernel::KernelConfig config;
  config.machine.cpus = o.cpus;
  config.machine.quantum = 64;
  config.machine.keepLog = false; // only the trace is read: memory stays bounded however long
  arch::Image image = arch::loadImage(resolveImagePath(o.arch, o.image));
  const arch::Arch &isa = arch::archByName(o.arch);
  if (image.arch != &isa)
    fatal("--image {} is a {} image, not {}", image.name, image.arch->name(), isa.name());
  config.protocol = o.protocol;
  if (!o.linuxProfile.empty())
    kernel::applyLinuxProfile(config, o.linuxProfile, isa.name());
  kernel::Kernel kernel(std::move(image), config);
  model::TraceFs &fs = kernel.tracefs();
  bool first = true;
  for (const std::string &f : o.filters) {
    fs.write("set_ftrace_filter", f, !first);
    first = false;
  }
  first = true;
  for (const std::string &f : o.notrace) {
    fs.write("set_ftrace_notrace", f, !first);
    first = false;
  }
  first = true;
  for (const std::string &f : o.graphFunctions) {
    fs.write("set_graph_function", f, !first);
    first = false;
  }
  if (o.profile)
    fs.write("function_profile_enabled", "1");
  if (o.stack)
    fs.write("stack_tracer_enabled", "1");
  fs.write("current_tracer", o.tracer);
  kernel.watchPatchSites();
  for (unsigned cpu = 0; cpu < o.cpus; ++cpu)
    kernel.addWorkload(o.workload, cpu, o.seed + cpu);
  sim::RandomScheduler scheduler(o.seed);
  // In batches of events when progress is shown (the machine resumes where a batch stopped: the
  // same run as one call); the estimate is against --max-events, an upper bound.
  Progress progress("trace", "events", progressMode(o.progress));
  const std::uint64_t batch = progress.enabled() ? 1'000'000 : o.maxEvents;
  sim::RunResult run;
  for (std::uint64_t done = 0; done < o.maxEvents;) {
    const sim::RunResult part = kernel.run(scheduler, std::min(batch, o.maxEvents - done));
    done += part.events;
    run.events = done;
    run.status = part.status;
    progress.update(done, o.maxEvents, std::nullopt, "at most: --max-events");
    if (part.status != sim::RunResult::Status::EventLimit)
      break;
  }
  progress.finish();
  std::fputs(fs.read("trace").c_str(), stdout);
  if (o.profile)
    for (unsigned cpu = 0; cpu < o.cpus; ++cpu)
      std::fputs(fmt::format("\n# trace_stat/function{}\n{}", cpu,
                             fs.read(fmt::format("trace_stat/function{}", cpu)))
                     .c_str(),
                 stdout);
  if (o.stack)
    std::fputs(fmt::format("\n# stack_max_size: {}# stack_trace\n{}", fs.read("stack_max_size"),
                           fs.read("stack_trace"))
                   .c_str(),
               stdout);
  for (const sim::Finding &finding : kernel.machine().findings())
    std::fprintf(stderr, "ftsim: %s\n", sim::formatFinding(finding).c_str());
  if (run.status == sim::RunResult::Status::EventLimit)
    std::fprintf(stderr,
                 "ftsim: trace: the workloads did not finish within --max-events %llu events (a "
                 "guest that runs away?); the trace above is what was recorded until then\n",
                 static_cast<unsigned long long>(o.maxEvents));
  if (!kernel.machine().findings().empty() || run.status != sim::RunResult::Status::Completed)
    result.exitCode = 1;
}

} // namespace

void addTraceCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "trace", "Run guest workloads on the simulated machine with a tracer on and print the trace "
               "in Linux's format");
  auto o = std::make_shared<TraceOptions>();
  cmd->add_option("--arch", o->arch,
                  fmt::format("architecture ({})", fmt::join(executableArchNames(), ", ")))
      ->check(CLI::IsMember(executableArchNames()));
  cmd->add_option("--cpus", o->cpus, "simulated CPUs (1..8)")->check(CLI::Range(1u, 8u));
  cmd->add_option("--tracer", o->tracer, "function, function_graph or nop")
      ->check(CLI::IsMember({"function", "function_graph", "nop"}));
  cmd->add_option("--filter", o->filters, "set_ftrace_filter pattern (repeatable)");
  cmd->add_option("--notrace", o->notrace, "set_ftrace_notrace pattern (repeatable)");
  cmd->add_option("--graph-function", o->graphFunctions, "set_graph_function pattern");
  cmd->add_option("--workload", o->workload, "sched, mm, fs, boot, mixed or tight (one per CPU)");
  cmd->add_option("--protocol", o->protocol,
                  "patch protocol (see ftsim protocols; default: the ISA's correct one)");
  cmd->add_option("--linux", o->linuxProfile,
                  "a Linux profile (ftsim protocols): its patch protocol, update order and "
                  "trampoline freeing");
  cmd->add_option("--seed", o->seed, "seed of the random schedule and the workloads");
  cmd->add_option("--max-events", o->maxEvents,
                  "stop the run after this many machine events, 1-1000000000 (default 50000000)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  cmd->add_option("--image", o->image, "built-in image name or linked ELF path");
  cmd->add_flag("--profile", o->profile, "also enable the function profiler (trace_stat)");
  cmd->add_flag("--stack", o->stack, "also enable the stack tracer (stack_trace)");
  addProgressFlag(cmd, o->progress);
  auto *synthetic = cmd->add_option(
      "--synthetic", o->synthetic,
      "instead: boot a synthetic image of N functions (1..1000000), enable --tracer on every "
      "site with the other CPUs idle, and print the batches, syncs and stores it cost");
  cmd->callback([o, cmd, synthetic, &result] {
    if (synthetic->count() == 0)
      return runTrace(*o, result);
    for (const char *other : {"--image", "--filter", "--notrace", "--graph-function", "--workload",
                              "--max-events", "--profile", "--stack"})
      if (cmd->count(other) > 0)
        fatal("trace: --synthetic and {} exclude each other (no workloads run)", other);
    runSynthetic(*o, result);
  });
}

} // namespace ftsim::cli
