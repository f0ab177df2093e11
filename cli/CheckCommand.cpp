// ftsim check: explore a scenario's schedules with every oracle that applies (Check.h). Exit
// status and words as in Verdict.h: 0 VERIFIED (or NO VIOLATION in N randomised runs), 1
// VIOLATION (minimised, written as a replay file), 2 bad input, 3 INCOMPLETE.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/replay/Timeline.h"

#include <fmt/format.h>

#include <cstdio>

namespace ftsim::cli {
namespace {

struct CheckFlags {
  verify::CheckRequest request;
  std::string cex;
  std::string chrome;
  bool json = false;
  bool quiet = false;
};

void progressLine(const verify::ExploreStats &st) {
  std::fprintf(stderr, "\rftsim check: %llu executions, %llu pruned, %llu states, %.0f s",
               static_cast<unsigned long long>(st.executions),
               static_cast<unsigned long long>(st.pruned),
               static_cast<unsigned long long>(st.distinctStates), st.seconds);
  std::fflush(stderr);
}

void run(const CheckFlags &f, CommandResult &result) {
  verify::CheckRequest request = f.request;
  request.scenarioFile = resolveScenarioPath(request.scenarioFile);
  const verify::Scenario s = verify::buildCheckScenario(request);
  verify::ExploreOptions eo = verify::buildExploreOptions(s, request);
  if (!f.cex.empty())
    checkWritable(f.cex, "--cex");
  if (!f.chrome.empty())
    checkWritable(f.chrome, "--chrome");
  if (showProgress(f.quiet))
    eo.progress = progressLine;
  auto harness = verify::makeHarness(s, harnessEnv());
  const verify::CheckReport r = verify::check(*harness, eo);
  if (showProgress(f.quiet) && r.result.stats.seconds >= 1.0)
    std::fprintf(stderr, "\n");
  std::string path;
  if (r.minimised) {
    path = f.cex.empty() ? freshOutputPath("ftsim-cex", "--cex") : f.cex;
    verify::writeReplayFile(path, s, *r.minimised);
    if (!f.chrome.empty())
      writeTextFile(f.chrome, verify::chromeTrace(*harness, {r.minimised->violation}));
  } else if (!f.chrome.empty()) {
    std::fprintf(stderr, "ftsim: --chrome %s: no counterexample, nothing written\n",
                 f.chrome.c_str());
  }
  fmt::print("{}", f.json ? verify::checkJson(*harness, eo, r, path)
                          : verify::formatCheck(*harness, r, path));
  result.exitCode = verify::exitStatus(r.verdict);
}

} // namespace

void addCheckCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "check", "Explore the schedules of a scenario with every oracle that applies; exit 0 "
               "verified, 1 violation, 2 bad input, 3 incomplete");
  auto f = std::make_shared<CheckFlags>();
  verify::CheckRequest &r = f->request;
  cmd->add_option("--scenario", r.scenarioFile,
                  "a scenario file, or the name of one shipped with ftsim (corpora/scenarios)");
  optionalFlag(cmd, "--arch", r.arch, "x86_64 or ppc32 (default x86_64)");
  optionalFlag(cmd, "--protocol", r.protocol, "a patch protocol (ftsim protocols)");
  optionalFlag(cmd, "--linux", r.linuxProfile,
               "a Linux profile (ftsim protocols): its protocol, update order and trampoline "
               "freeing throughout");
  optionalFlag(cmd, "--cpus", r.cpus, "CPUs (1-8); the patcher runs on CPU 0");
  optionalFlag(cmd, "--explore", r.explorer,
               "explorer: exhaustive, rr-bounded, deviation-bounded, pct, random (default: the "
               "scenario's)");
  optionalFlag(cmd, "--bound", r.bound,
               "exhaustive: preemption bound (-1 none); rr-bounded: deviations");
  optionalFlag(cmd, "--runs", r.runs, "pct/random: number of runs");
  optionalFlag(cmd, "--seed", r.seed, "pct/random: seed");
  optionalFlag(cmd, "--depth", r.depth, "pct: bug depth d (1-20)");
  optionalFlag(cmd, "--store", r.store, "store model: byte, word, line (default byte; ppc32 word)");
  optionalFlag(cmd, "--fetch", r.fetch, "fetch model: atomic, line, stale (default stale)");
  optionalFlag(cmd, "--site-offset", r.siteOffset, "site address mod 64");
  optionalFlag(cmd, "--sites", r.sites, "sites patched in one batch (1-8)");
  optionalFlag(cmd, "--transition", r.transition, "nop-to-call, call-to-nop or call-to-call");
  cmd->add_flag("--preemption", r.preemption, "two tasks per CPU and timer preemption");
  optionalFlag(cmd, "--max-executions", r.maxExecutions, "exhaustive: execution budget");
  cmd->add_option(
      "--cex", f->cex,
      "where to write the replay file (default: ftsim-cex.json in the working directory, or "
      "ftsim-cex-N.json if that exists; never an existing file)");
  cmd->add_flag("--json", f->json, "machine-readable result on stdout (no times)");
  cmd->add_flag("--naive", r.naive, "exhaustive without reduction (to measure DPOR)");
  cmd->add_flag("--quiet", f->quiet, "no progress on stderr (shown only on a terminal)");
  optionalFlag(cmd, "--tramp-free", r.trampFree,
               "trampoline scenarios: when a dynamic ops' trampoline is freed: immediate, "
               "sched-sync, rcu-tasks, rude, rcu-tasks-classic");
  optionalFlag(cmd, "--tramp-scenario", r.trampScenario,
               "tramp-free-preempted (default), ops-uaf-no-sync or idle-tramp-free");
  cmd->add_flag("--preempt", r.preempt, "trampoline scenarios: timer preemption (PREEMPTION)");
  cmd->add_flag("--no-sync-unchanged", r.noSyncUnchanged,
                "trampoline scenarios: skip the sync when unregistering changes no code "
                "(before 0e792b89e680)");
  optionalFlag(cmd, "--image", r.image, "guest image of kernel/trampoline scenarios");
  optionalFlag(cmd, "--kernel", r.kernel,
               "run Linux's own text_poke code from Debian's linux-source-VERSION (6.1, 6.12)");
  optionalFlag(cmd, "--kernel-tree", r.kernelTree,
               "run Linux's own text_poke code from this x86-64 tree (built out of tree, cached)");
  optionalFlag(cmd, "--mutant", r.mutant,
               "with --kernel/--kernel-tree: a source mutation operator applied to a private copy "
               "of the tree's alternative.c (ftsim mutants --kernel lists them)");
  cmd->add_flag("--foreign-int3", r.foreignInt3,
                "with --kernel/--kernel-tree: a kprobe-like int3 on the second traced function, "
                "which the batch does not own (poke_int3_handler sees it first, as in Linux)");
  cmd->add_option("--chrome", f->chrome, "write the counterexample's Chrome trace-event JSON");
  cmd->callback([f, &result] { run(*f, result); });
}

} // namespace ftsim::cli
