// ftsim demo: the main job on the built-in guest, end to end, in a minute: boot the image as
// ftrace_init() does, then show why live patching needs a protocol (the slides' torn instruction)
// and that today's protocol is safe.

#include "Commands.h"

#include "ftsim/arch/Image.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/oracle/Oracle.h"
#include "ftsim/verify/prove/Proofs.h"
#include "ftsim/verify/prove/ProtocolTrace.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <fmt/format.h>

namespace ftsim::cli {
namespace {

// The demo's sections, done of kSections, as progress on stderr.
constexpr unsigned kSections = 5;
Progress *demoProgress = nullptr;
unsigned sectionsDone = 0;

void section(const std::string &title) {
  if (demoProgress) {
    demoProgress->update(sectionsDone++, kSections);
    demoProgress->clear();
  }
  fmt::print("\n== {}\n", title);
  std::fflush(stdout);
}

// Boot the built-in image and return it with its records.
void demoBoot(const std::string &archName) {
  arch::Image image = arch::loadImage(resolveImagePath(archName, ""));
  model::StaticBoot booted(image);
  const model::ImageBoot &boot = booted.result();
  const arch::Arch &isa = *image.arch;
  fmt::print("{} built-in image:\n  {}{}\n", isa.name(), boot.bugText,
             boot.report.allocationLine());
  const arch::ImageSymbol *schedule = image.findSymbol("schedule");
  for (const auto &page : booted.core().records().pages())
    for (const auto &rec : page.records)
      if (schedule && rec.ip >= schedule->addr && rec.ip < schedule->addr + schedule->size) {
        arch::Bytes bytes(isa.siteSize());
        image.read(rec.ip, bytes);
        fmt::print("  schedule's site at {:#x}: {} ({})\n", rec.ip, arch::hexBytes(bytes),
                   arch::describeBytes(isa, bytes, rec.ip));
      }
}

// Four CPUs run workload_sched; the patcher (CPU 0) switches the function tracer on for *sched*
// while they run, through the int3 protocol, and the guests' checksums are compared with an
// untraced run.
bool demoLiveTrace() {
  auto run = [](bool traced, std::string *trace, std::size_t *findings) {
    kernel::KernelConfig config;
    config.machine.cpus = 4;
    config.protocol = "int3";
    kernel::Kernel kernel(arch::loadImage(resolveImagePath(defaultArchName(), "")), config);
    kernel.watchPatchSites();
    for (unsigned cpu = 1; cpu < 4; ++cpu)
      kernel.addWorkload("sched", cpu, 40 + cpu);
    if (traced)
      kernel.patcher([](kernel::Kernel &k) {
        k.tracefs().write("set_ftrace_filter", "*sched*");
        k.tracefs().write("current_tracer", "function");
      });
    sim::RandomScheduler scheduler(2014);
    kernel.run(scheduler, 50'000'000);
    std::vector<std::uint64_t> results;
    for (unsigned t = 0; t < 3; ++t)
      results.push_back(kernel.machine().task(static_cast<int>(t)).result);
    if (trace)
      *trace = kernel.tracefs().read("trace");
    if (findings)
      *findings = kernel.machine().findings().size();
    return results;
  };
  std::string trace;
  std::size_t findings = 0;
  const auto untraced = run(false, nullptr, nullptr);
  const auto traced = run(true, &trace, &findings);
  std::size_t shown = 0, lines = 0;
  for (std::size_t pos = 0; pos < trace.size();) {
    const std::size_t end = trace.find('\n', pos);
    const std::string line = trace.substr(pos, end - pos);
    pos = end == std::string::npos ? trace.size() : end + 1;
    ++lines;
    if (line.rfind("# entries", 0) == 0 || (line[0] != '#' && shown++ < 8) ||
        line.rfind("#           TASK", 0) == 0)
      fmt::print("  {}\n", line);
  }
  fmt::print("  ... ({} lines)\n", lines);
  const bool same = traced == untraced;
  fmt::print("  checksums traced {} untraced ({} findings: torn fetches, faults)\n",
             same ? "==" : "!=", findings);
  return same && findings == 0;
}

// The slides' scenario explored: CPU 1 runs a function whose site CPU 0 rewrites, under the most
// permissive models (byte stores, stale fetch). Plain stores: the explorer finds the torn fetch
// and minimises it. Today's int3 protocol: every schedule verified.
bool demoExplore() {
  bool ok = true;
  for (const char *protocol : {"direct", "int3"}) {
    verify::Scenario s;
    s.arch = defaultArchName();
    s.protocol = protocol;
    s.cpus = 2;
    s.name = std::string("demo-") + protocol;
    s.validate("demo");
    verify::SiteHarness harness(s);
    const verify::CheckReport report = verify::check(harness, verify::exploreOptionsFor(s));
    const verify::ExploreResult &r = report.result;
    if (report.minimised) {
      const verify::Counterexample &min = *report.minimised;
      fmt::print("  {}: VIOLATION after {} executions (minimised to {} preemptions, {} events)\n",
                 protocol, r.stats.executions, min.preemptions, min.events);
      std::string text = verify::formatViolation(min.violation);
      for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = text.find('\n', pos);
        fmt::print("    {}\n", text.substr(pos, end - pos));
        if (end == std::string::npos)
          break;
        pos = end + 1;
        if (pos > 600) {
          fmt::print("    ...\n");
          break;
        }
      }
      ok &= std::string(protocol) == "direct";
    } else {
      fmt::print("  {}: {}, every schedule of {} CPUs ({} executions with source-DPOR, {} "
                 "distinct final states; {})\n",
                 protocol, verify::verdictWord(report.verdict), s.cpus, r.stats.executions,
                 r.stats.distinctStates, report.models);
      ok &= std::string(protocol) == "int3" && report.verdict == verify::Verdict::Verified;
    }
  }
  return ok;
}

} // namespace

void addDemoCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand("demo", "Boot the built-in guest images and show the torn-"
                                         "instruction hazard and today's protocol, end to end");
  auto forced = std::make_shared<bool>(false);
  addProgressFlag(cmd, *forced);
  cmd->callback([forced, &result] {
    Progress progress("demo", "sections", progressMode(*forced));
    demoProgress = &progress;
    sectionsDone = 0;
    section("Boot: every mcount/fentry call site becomes a nop (ftrace_init)");
    for (const std::string &name : executableArchNames())
      demoBoot(name);

    section("Live tracing: 3 CPUs run workload_sched while CPU 0 enables the function tracer on "
            "*sched* (int3 protocol, random schedule)");
    bool ok = demoLiveTrace();

    section("Exploring every schedule: CPU 1 runs schedule() while CPU 0 rewrites its site "
            "(byte stores, stale fetch)");
    ok &= demoExplore();

    section("The slides' breakpoint walk-through (int3 protocol, real protocol code)");
    const arch::Arch &x86 = arch::defaultArch();
    const std::uint64_t site = 0xffffffff810f45f4;
    const verify::ProtocolTrace trace =
        verify::traceProtocol(x86, "int3", sim::StoreModel::Line,
                              {{site, x86.nop(), x86.call(site, 0xffffffff810f7430).bytes}});
    std::size_t stores = 0;
    fmt::print("  {}   {}\n", arch::hexBytes(trace.siteAt(0, 0)),
               arch::describeBytes(x86, trace.siteAt(0, 0), site));
    for (const auto &step : trace.steps) {
      if (step.kind == verify::TraceStep::Kind::Sync) {
        fmt::print("  -- sync (IPI to every CPU)\n");
        continue;
      }
      const arch::Bytes now = trace.siteAt(++stores, 0);
      fmt::print("  {}   {}\n", arch::hexBytes(now), arch::describeBytes(x86, now, site));
    }

    section("Z3: what a CPU can fetch at the site while it is rewritten");
    const auto torn = verify::proveByteStates(x86, {"direct", sim::StoreModel::Word,
                                                    &sim::fetchModelByName("stale"),
                                                    verify::SiteTransition::NopToCall, 6, 1});
    fmt::print("  plain stores (protocol 'direct'): {}\n    {}\n",
               torn.holds ? "no counterexample (unexpected)" : "UNSAFE", torn.counterexample);
    ok &= !torn.holds;
    for (const arch::Arch *a : arch::executableArchs()) {
      const std::string name = arch::protocolsFor(*a).front().name;
      const auto proof = verify::proveByteStatesEverywhere(*a, name);
      fmt::print("  {} '{}': {}\n    {}\n", a->name(), name,
                 proof.holds ? "proved safe" : "COUNTEREXAMPLE",
                 proof.holds ? proof.name : proof.counterexample);
      ok &= proof.holds;
    }
    progress.update(kSections, kSections);
    progress.finish();
    demoProgress = nullptr;
    result.exitCode = ok ? 0 : 1;
  });
}

} // namespace ftsim::cli
