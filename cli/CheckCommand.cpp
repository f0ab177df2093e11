// ftsim check: explore a scenario's schedules with every oracle that applies (Check.h). Exit
// status and words as in Verdict.h: 0 VERIFIED (or NO VIOLATION in N randomised runs), 1
// VIOLATION (minimised, written as a replay file), 2 bad input, 3 INCOMPLETE.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#ifdef FTSIM_HAVE_MPI
#include "ftsim/verify/check/MpiCheck.h"
#endif
#include "ftsim/verify/check/SplitCheck.h"
#include "ftsim/verify/explore/SubtreeFiles.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/replay/Svg.h"
#include "ftsim/verify/replay/Timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace ftsim::cli {
namespace {

struct CheckFlags {
  verify::CheckRequest request;
  std::string cex;
  std::string chrome;
  std::string svg;
  bool json = false;
  bool quiet = false;
  bool progress = false;
  bool fullTimeline = false;
  std::vector<std::string> split; // N DIR
  std::string subtree, out, checkpoint, resume;
  std::optional<double> checkpointEvery;
};

unsigned defaultJobs() { return std::max(1u, std::thread::hardware_concurrency()); }

// --split N DIR: the job files of the tree, nothing searched.
void writeSplit(const CheckFlags &f, const verify::Scenario &s, verify::ExploreOptions eo,
                CommandResult &result) {
  unsigned files = 0;
  try {
    std::size_t used = 0;
    const unsigned long n = std::stoul(f.split[0], &used);
    if (used != f.split[0].size() || n == 0 || n > 100000)
      throw std::invalid_argument("range");
    files = static_cast<unsigned>(n);
  } catch (const std::exception &) {
    fatal("--split {}: the number of files must be 1 to 100000", f.split[0]);
  }
  if (eo.subtrees == 0)
    fatal("--split with --subtrees 0: one tree cannot be split");
  eo.subtrees = std::max(eo.subtrees, files);
  auto harness = verify::makeHarness(s, harnessEnv());
  const verify::SubtreePlan plan = verify::planSubtrees(*harness, eo);
  const auto paths = verify::writeSplitFiles(verify::splitTreeOf(s, eo, plan), files, f.split[1]);
  fmt::print("ftsim check: {} subtrees below depth {} in {} files in {}{}\n"
             "run each: ftsim check --subtree FILE; then: ftsim merge {}\n",
             plan.count, plan.depth, paths.size(), f.split[1],
             paths.size() < files ? " (the tree has fewer subtrees than files)" : "", f.split[1]);
  result.exitCode = 0;
}

// --subtree FILE: search the file's subtrees, write their result file.
void runSubtree(const CheckFlags &f, CLI::App *cmd, CommandResult &result) {
  for (const CLI::Option *opt : cmd->get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() && name != "--subtree" && name != "--jobs" && name != "--out" &&
        name != "--quiet")
      fatal("--subtree {}: the file holds the scenario and the bounds; {} does not apply",
            f.subtree, name);
  }
  const verify::SubtreeJob job = verify::loadSubtreeJob(f.subtree);
  const std::string out = f.out.empty() ? verify::resultPathOf(f.subtree) : f.out;
  checkWritable(out, "--out");
  const verify::Scenario s = job.tree.scenario;
  auto harness = verify::makeHarness(s, harnessEnv());
  const verify::SubtreeResults r =
      verify::runSubtreeJob(job, *harness, f.request.jobs.value_or(defaultJobs()),
                            [s] { return verify::makeHarness(s, harnessEnv()); });
  verify::writeFileAtomically(out, verify::subtreeResultsJson(r));
  std::uint64_t executions = 0, violating = 0;
  for (const auto &[i, one] : r.results) {
    executions += one.stats.executions;
    violating += one.violatingExecutions;
  }
  fmt::print("ftsim check: {} of {} subtrees searched ({} executions, {} violating); results in "
             "{}; the verdict: ftsim merge DIR\n",
             r.results.size(), job.tree.plan.count, executions, violating, out);
  result.exitCode = 0;
}

// The running stats as a progress report: executions of the split tree's estimate (with its
// ETA), of a randomised explorer's runs, or of an unsplit tree's budget.
void reportProgress(Progress &p, const verify::ExploreOptions &eo, const verify::ExploreStats &st) {
  const std::string detail = fmt::format("{} pruned, {} states", st.pruned, st.distinctStates);
  if (st.estimatedExecutions)
    p.update(st.executions, st.estimatedExecutions,
             st.etaSeconds < 0 ? std::optional<double>() : std::optional<double>(st.etaSeconds),
             st.estimatedFromFinished
                 ? fmt::format("{}, total estimated; {} from the finished subtrees alone", detail,
                               st.estimatedFromFinished)
                 : detail + ", total estimated");
  else if (verify::explorerByName(eo.explorer).exhaustive())
    p.update(st.executions, 0, std::nullopt,
             fmt::format("{}, budget {}", detail, eo.maxExecutions));
  else
    p.update(st.executions, eo.maxExecutions, std::nullopt, detail);
}

void run(const CheckFlags &f, CLI::App *cmd, CommandResult &result) {
  if (!f.subtree.empty())
    return runSubtree(f, cmd, result);
  if (!f.out.empty())
    fatal("--out {}: only with --subtree FILE", f.out);
  verify::CheckRequest request = f.request;
  request.scenarioFile = resolveScenarioPath(request.scenarioFile);
  const verify::Scenario s = verify::buildCheckScenario(request);
  verify::ExploreOptions eo = verify::buildExploreOptions(s, request);
  eo.fullTrail = f.fullTimeline;
  if (!f.split.empty())
    return writeSplit(f, s, eo, result);
  if (!f.cex.empty())
    checkWritable(f.cex, "--cex");
  if (!f.chrome.empty())
    checkWritable(f.chrome, "--chrome");
  if (!f.svg.empty())
    checkWritable(f.svg, "--svg");
  if (f.progress && f.quiet)
    fatal("--progress and --quiet: choose one");
  auto progress =
      std::make_shared<Progress>("check", "executions", progressMode(f.progress, f.quiet));
  if (progress->enabled())
    eo.progress = [progress, &eo](const verify::ExploreStats &st) {
      reportProgress(*progress, eo, st);
    };
  std::shared_ptr<verify::SubtreeHooks> hooks;
  if (!f.checkpoint.empty() || !f.resume.empty() || f.checkpointEvery) {
    if (eo.subtrees == 0)
      fatal("--checkpoint and --resume save and load subtrees: not with --subtrees 0 or {}",
            eo.explorer);
    verify::CheckpointOptions cp;
    cp.resumeFrom = f.resume;
    cp.path = f.checkpoint.empty() ? f.resume : f.checkpoint;
    if (cp.path.empty())
      fatal("--checkpoint-every without --checkpoint FILE");
    // --resume alone saves to the file it resumes from: name the flag the user gave.
    checkWritable(cp.path, f.checkpoint.empty() ? "--resume" : "--checkpoint");
    if (f.checkpointEvery) {
      if (!(*f.checkpointEvery > 0 && *f.checkpointEvery <= 1e6))
        fatal("--checkpoint-every {}: use a number of seconds above 0 and at most 1000000",
              *f.checkpointEvery);
      cp.every = std::chrono::milliseconds(static_cast<long long>(*f.checkpointEvery * 1000));
    }
    hooks = verify::checkpointHooks(s, eo, cp);
    eo.subtreeHooks = hooks.get();
  }
  eo.newHarness = [s] { return verify::makeHarness(s, harnessEnv()); };
#ifdef FTSIM_HAVE_MPI
  const bool ranks = verify::underMpirun();
#else
  const bool ranks = false;
#endif
  if (!ranks)
    eo.crew = verify::startWorkers(s, eo); // the workers build their harnesses with this one
  auto harness = verify::makeHarness(s, harnessEnv());
#ifdef FTSIM_HAVE_MPI
  if (ranks) {
    if (hooks)
      fatal("under mpirun: --checkpoint and --resume are for one process");
    eo.progress = nullptr;
    const std::optional<verify::CheckReport> r = verify::mpiCheck(*harness, eo);
    if (r) // rank 0 prints the one result
      printCheck(*harness, eo, *r, ReportFlags{f.cex, f.chrome, f.svg, f.json, true}, result);
    return;
  }
#endif
  const verify::CheckReport r = verify::check(*harness, eo);
  progress->update(r.result.stats.executions, r.result.stats.executions, 0.0, "done");
  progress->finish();
  printCheck(*harness, eo, r, ReportFlags{f.cex, f.chrome, f.svg, f.json, true}, result);
}

} // namespace

void printCheck(verify::Harness &h, const verify::ExploreOptions &eo, const verify::CheckReport &r,
                const ReportFlags &f, CommandResult &result) {
  const verify::Scenario &s = h.scenario();
  verify::Harness *harness = &h;
  if (!f.quiet && r.result.stats.seconds >= 1.0) // end the progress line
    std::fprintf(stderr, "\n");
  std::string path;
  if (r.minimised) {
    path = f.cex.empty() ? freshOutputPath("ftsim-cex", "--cex") : f.cex;
    verify::writeReplayFile(path, s, *r.minimised);
    if (!f.chrome.empty())
      writeTextFile(f.chrome, verify::chromeTrace(*harness, {r.minimised->violation}));
  }
  for (const auto &[flag, file] : {std::pair{"--chrome", &f.chrome}, std::pair{"--svg", &f.svg}})
    if (!r.minimised && !file->empty())
      std::fprintf(stderr, "ftsim: %s %s: no counterexample, nothing written\n", flag,
                   file->c_str());
  // Last: drawing replays the counterexample, so the harness's machine then holds it again.
  if (r.minimised && !f.svg.empty())
    writeTextFile(f.svg, verify::counterexampleSvg(*harness, *r.minimised, path));
  fmt::print("{}", f.json ? verify::checkJson(*harness, eo, r, path)
                          : verify::formatCheck(*harness, r, path));
  result.exitCode = verify::exitStatus(r.verdict);
}

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
  optionalFlag(cmd, "--protocol-file", r.protocolFile,
               "a patch protocol as a TOML file (README.md, \"Protocols as files\")");
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
  optionalFlag(cmd, "--jobs", r.jobs,
               "exhaustive: worker threads (default: the machine's cores); the results do not "
               "depend on it");
  optionalFlag(cmd, "--subtrees", r.subtrees,
               "exhaustive: split the tree at the first depth with at least N subtrees (default "
               "64; 0: one tree, one thread)");
  cmd->add_option(
      "--cex", f->cex,
      "where to write the replay file (default: ftsim-cex.json in the working directory, or "
      "ftsim-cex-N.json if that exists; never an existing file)");
  cmd->add_flag("--json", f->json, "machine-readable result on stdout (no times)");
  cmd->add_flag("--full-timeline", f->fullTimeline,
                "the counterexample's every event up to the violation, not only those that led "
                "to it");
  cmd->add_flag("--naive", r.naive, "exhaustive without reduction (to measure DPOR)");
  cmd->add_flag("--no-state-hashing", r.noStateHashing,
                "exhaustive on kernel and trampoline scenarios: search on from every state, even "
                "one reached before with as many deviations left (to measure the hashing)");
  cmd->add_option("--continuation", r.continuation,
                  "exhaustive on kernel and trampoline scenarios: the base schedule the bound "
                  "counts deviations from: run-on (the process that ran last while it can; the "
                  "default) or round-robin (the CPUs and the patcher in turn)");
  cmd->add_flag("--quiet", f->quiet, "no progress on stderr (shown only on a terminal)");
  addProgressFlag(cmd, f->progress);
  optionalFlag(cmd, "--tramp-free", r.trampFree,
               "trampoline scenarios: when a dynamic ops' trampoline is freed: immediate, "
               "sched-sync, rcu-tasks, rude, rcu-tasks-classic");
  optionalFlag(cmd, "--tramp-scenario", r.trampScenario,
               "tramp-free-preempted (default), ops-uaf-no-sync, idle-tramp-free or "
               "irq-tramp-free");
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
  optionalFlag(cmd, "--batches", r.batches,
               "with --kernel/--kernel-tree: this many batches back to back (1-4), each undoing "
               "the one before, so a late handler meets the next batch");
  cmd->add_option("--chrome", f->chrome, "write the counterexample's Chrome trace-event JSON");
  cmd->add_option("--svg", f->svg,
                  "draw the counterexample as an SVG picture: CPUs as lanes over the violation's "
                  "trail, each CPU's view of the patched sites, the violation decoded");
  cmd->add_option("--split", f->split,
                  "write the tree's subtrees as N job files in DIR (nothing is searched)")
      ->expected(2)
      ->type_name("N DIR");
  cmd->add_option("--subtree", f->subtree,
                  "search the subtrees of a job file of --split; writes FILE's .result.json");
  cmd->add_option("--out", f->out, "--subtree: where to write the result file");
  cmd->add_option("--checkpoint", f->checkpoint,
                  "save the searched subtrees to FILE (atomically) every --checkpoint-every s");
  optionalFlag(cmd, "--checkpoint-every", f->checkpointEvery,
               "seconds between checkpoints (default 60)");
  cmd->add_option("--resume", f->resume,
                  "resume from a checkpoint FILE: its subtrees are not searched again (and the "
                  "checkpoint goes on in FILE unless --checkpoint says elsewhere)");
  cmd->callback([f, cmd, &result] { run(*f, cmd, result); });
}

} // namespace ftsim::cli
