// ftsim check: explore a patching scenario's schedules with every oracle on. Exit 0 when no
// violation is found (saying what was covered), 1 when one is found (printed, minimised and
// written as a replay file), 2 on bad input.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/Explore.h"
#include "ftsim/verify/Replay.h"
#include "ftsim/verify/Scenario.h"
#include "ftsim/verify/ScenarioInstance.h"
#include "ftsim/verify/ScenarioKernel.h"
#include "ftsim/verify/TrampolineScenario.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

namespace ftsim::cli {
namespace {

struct CheckOptions {
  std::string scenario;
  std::string arch;
  std::string protocol;
  unsigned cpus = 0;
  std::string explore = "exhaustive";
  int bound = -2; // -2: from the scenario
  std::uint64_t runs = 1000;
  std::uint64_t seed = 1;
  unsigned depth = 3;
  std::string store;
  std::string fetch;
  int siteOffset = -1;
  unsigned sites = 0;
  std::string transition;
  bool preemption = false;
  std::string cex;
  bool json = false;
  bool naive = false;
  bool quiet = false;
  std::uint64_t maxExecutions = 0;
  std::string trampFree;
  std::string trampScenario = "tramp-free-preempted";
  bool preempt = false;
  bool noSyncUnchanged = false;
  std::string image;
  std::string chrome;
};

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    fatal("{}: cannot write", path);
}

// --tramp-free / --tramp-scenario: the trampoline-lifetime scenarios of issue 7
// (TrampolineScenario.h), with their own bounded systematic search.
void runTrampolineCheck(const CheckOptions &o, CommandResult &result) {
  verify::TrampolineCheckOptions t;
  if (o.trampScenario == "tramp-free-preempted")
    t.scenario = verify::TrampolineScenarioKind::TrampFreePreempted;
  else if (o.trampScenario == "ops-uaf-no-sync")
    t.scenario = verify::TrampolineScenarioKind::OpsUafNoSync;
  else
    fatal("--tramp-scenario '{}' (known: tramp-free-preempted, ops-uaf-no-sync)", o.trampScenario);
  const std::string arch = o.arch.empty() ? defaultArchName() : o.arch;
  executableArch(arch);
  if (o.explore != "exhaustive")
    fatal("--explore {}: the trampoline scenarios are explored exhaustively within their bounds "
          "(use --explore exhaustive)",
          o.explore);
  t.imagePath = resolveImagePath(arch, o.image);
  t.protocol = o.protocol;
  t.free.free = model::parseTrampolineFree(o.trampFree.empty() ? "rcu-tasks" : o.trampFree);
  t.free.syncWhenUnchanged = !o.noSyncUnchanged;
  t.preempt = o.preempt;
  if (o.bound >= 0) {
    t.preemptionBound = static_cast<unsigned>(o.bound);
    t.delayBound = static_cast<unsigned>(o.bound);
  } else if (o.bound != -2) {
    fatal("--bound {}: the trampoline scenarios need a finite bound (0 or more)", o.bound);
  }
  if (o.maxExecutions)
    t.maxExecutions = o.maxExecutions;
  const verify::TrampolineCheckResult r = verify::checkTrampolineScenario(t);
  if (o.json) {
    nlohmann::ordered_json j;
    j["scenario"] = o.trampScenario;
    j["arch"] = arch;
    j["free"] = std::string(model::trampolineFreeName(t.free.free));
    j["sync_when_unchanged"] = t.free.syncWhenUnchanged;
    j["preempt"] = t.preempt;
    j["verdict"] = r.violation ? "violation" : r.complete ? "verified" : "incomplete";
    j["executions"] = r.executions;
    j["events"] = r.events;
    j["complete"] = r.complete;
    j["bounds"] = r.bounds;
    if (r.violation) {
      j["violation"] = *r.violation;
      j["schedule_decisions"] = r.choices.size();
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", verify::formatTrampolineCheck(t, r));
  }
  result.exitCode = r.violation || !r.complete ? 1 : 0;
}

// Engine-level scenarios (code kind kernel, ScenarioKernel.h).
void runKernelCheck(const CheckOptions &o, verify::Scenario s, CommandResult &result) {
  if (!o.arch.empty())
    s.arch = o.arch;
  if (!o.protocol.empty())
    s.protocol = o.protocol;
  if (o.cpus)
    s.cpus = o.cpus;
  if (!o.store.empty())
    s.store = sim::parseStoreModel(o.store);
  if (!o.fetch.empty())
    s.fetch = sim::parseFetchModel(o.fetch);
  if (o.explore != "exhaustive") {
    if (o.explore != "random" && o.explore != "pct")
      fatal("--explore '{}' (known: exhaustive, pct, random)", o.explore);
    s.engine.explore = o.explore;
    s.engine.runs = o.runs;
    s.engine.scheduleSeed = o.seed;
    s.engine.pctDepth = o.depth;
  }
  if (!o.image.empty())
    s.image = o.image;
  s.validate(o.scenario);
  verify::KernelScenarioRunner runner(s, resolveImagePath(s.arch, s.image));
  const verify::KernelExploreResult r = verify::exploreKernelScenario(runner);
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["describe"] = s.describe();
  j["explore"] = s.engine.explore;
  j["executions"] = r.executions;
  j["events"] = r.events;
  j["coverage"] = r.coverage;
  if (!r.counterexample) {
    j["verdict"] = "no-violation";
    if (o.json)
      fmt::print("{}\n", j.dump(2));
    else {
      fmt::print("ftsim check: {}\n", s.describe());
      fmt::print("no violation: {} (randomised: not a proof)\n", r.coverage);
      fmt::print("{} executions, {} events, {:.2f} s\n", r.executions, r.events, r.seconds);
    }
    result.exitCode = 0;
    return;
  }
  const verify::Counterexample &min = *r.counterexample;
  const std::string path = o.cex.empty() ? "ftsim-cex.json" : o.cex;
  verify::writeReplayFile(path, s, min);
  if (!o.chrome.empty()) {
    const verify::ReplayFile file = verify::loadReplayFile(path);
    writeText(o.chrome, verify::reproduceKernel(runner, file, path, true).chrome);
  }
  j["verdict"] = "violation";
  j["oracle"] = min.violation.oracle;
  j["violation"] = verify::summarizeViolation(min.violation);
  j["events"] = min.events;
  j["decisions"] = min.choices.size();
  j["found"] = {{"events", r.found->events}, {"decisions", r.found->choices.size()}};
  j["replay"] = path;
  if (o.json)
    fmt::print("{}\n", j.dump(2));
  else {
    fmt::print("ftsim check: {}\n", s.describe());
    fmt::print("{}", verify::formatViolation(min.violation));
    fmt::print("minimised: {} decisions, {} events (found with {} decisions, {} events)\n",
               min.choices.size(), min.events, r.found->choices.size(), r.found->events);
    fmt::print("replay: ftsim replay {}\n", path);
    fmt::print("after {} executions ({} violating): {}\n", r.executions, r.violatingExecutions,
               r.coverage);
  }
  result.exitCode = 1;
}

std::string coverage(const verify::Scenario &s, const verify::ExploreOptions &o,
                     const verify::ExploreStats &st) {
  if (o.mode != verify::ExploreMode::Exhaustive)
    return fmt::format(
        "{} {} runs (seed {}{})", st.executions, verify::exploreModeName(o.mode), o.seed,
        o.mode == verify::ExploreMode::Pct ? fmt::format(", depth {}", o.pctDepth) : std::string());
  return fmt::format(
      "{} within bounds: {}, every schedule of {} {} with {}, at most {} events per execution "
      "({} executions, {} reached the limit){}",
      st.complete ? "exhaustive" : "INCOMPLETE (execution budget exhausted)",
      o.preemptionBound < 0 ? std::string("no preemption bound")
                            : fmt::format("at most {} preemptions", o.preemptionBound),
      s.cpus, s.cpus == 1 ? "CPU" : "CPUs",
      s.sites.size() == 1 ? "1 site" : fmt::format("{} sites in one batch", s.sites.size()),
      s.bounds.maxEvents, st.executions, st.eventLimitHits,
      o.reduction ? ", source-DPOR + sleep sets" : ", naive (no reduction)");
}

nlohmann::ordered_json statsJson(const verify::ExploreStats &st) {
  nlohmann::ordered_json j;
  j["executions"] = st.executions;
  j["sleep_blocked"] = st.sleepBlocked;
  j["pruned"] = st.pruned;
  j["bound_cuts"] = st.boundCuts;
  j["event_limit_hits"] = st.eventLimitHits;
  j["distinct_states"] = st.distinctStates;
  j["decisions"] = st.decisions;
  j["events"] = st.events;
  j["max_events"] = st.maxEvents;
  j["max_preemptions"] = st.maxPreemptions;
  j["complete"] = st.complete;
  return j;
}

} // namespace

void addCheckCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "check", "Explore the schedules of a patching scenario (exhaustive with source-DPOR, PCT or "
               "random) with every oracle on; exit 0 verified, 1 violation found, 2 bad input");
  auto o = std::make_shared<CheckOptions>();
  cmd->add_option("--scenario", o->scenario, "a scenario file (corpora/scenarios/*.toml)");
  cmd->add_option("--arch", o->arch, "x86_64 or ppc32 (default x86_64)");
  cmd->add_option("--protocol", o->protocol, "a patch protocol (ftsim protocols)");
  cmd->add_option("--cpus", o->cpus, "CPUs (1-8); the patcher runs on CPU 0");
  cmd->add_option("--explore", o->explore, "exhaustive, pct or random");
  cmd->add_option("--bound", o->bound, "preemption bound (exhaustive); -1 for none");
  cmd->add_option("--runs", o->runs, "pct/random: number of runs");
  cmd->add_option("--seed", o->seed, "pct/random: seed");
  cmd->add_option("--depth", o->depth, "pct: bug depth d")->check(CLI::Range(1, 20));
  cmd->add_option("--store", o->store, "store model: byte, word, line (default byte; ppc32 word)");
  cmd->add_option("--fetch", o->fetch, "fetch model: atomic, line, stale (default stale)");
  cmd->add_option("--site-offset", o->siteOffset, "site address mod 64")->check(CLI::Range(0, 63));
  cmd->add_option("--sites", o->sites, "sites patched in one batch (1-8)")->check(CLI::Range(1, 8));
  cmd->add_option("--transition", o->transition, "nop-to-call, call-to-nop or call-to-call");
  cmd->add_flag("--preemption", o->preemption, "two tasks per CPU and timer preemption");
  cmd->add_option("--max-executions", o->maxExecutions, "exhaustive: execution budget");
  cmd->add_option("--cex", o->cex, "where to write the replay file (default ./ftsim-cex.json)");
  cmd->add_flag("--json", o->json, "machine-readable result on stdout (no times)");
  cmd->add_flag("--naive", o->naive, "exhaustive without reduction (to measure DPOR)");
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr");
  cmd->add_option("--tramp-free", o->trampFree,
                  "trampoline scenarios: when a dynamic ops' trampoline is freed: immediate, "
                  "sched-sync, rcu-tasks");
  cmd->add_option("--tramp-scenario", o->trampScenario,
                  "tramp-free-preempted (default) or ops-uaf-no-sync");
  cmd->add_flag("--preempt", o->preempt, "trampoline scenarios: timer preemption (PREEMPTION)");
  cmd->add_flag("--no-sync-unchanged", o->noSyncUnchanged,
                "trampoline scenarios: skip the sync when unregistering changes no code "
                "(before 0e792b89e680)");
  cmd->add_option("--image", o->image, "guest image for kernel scenarios (flavour or path)");
  cmd->add_option("--chrome", o->chrome, "write the counterexample's Chrome trace-event JSON");
  cmd->callback([o, &result] {
    verify::Scenario s;
    if (!o->trampFree.empty() || o->trampScenario != "tramp-free-preempted" || o->noSyncUnchanged) {
      if (!o->scenario.empty())
        fatal("check: --tramp-free/--tramp-scenario and --scenario exclude each other");
      return runTrampolineCheck(*o, result);
    }
    if (o->preempt)
      fatal("check: --preempt belongs to --tramp-free (site scenarios use --preemption)");
    if (!o->scenario.empty())
      s = verify::loadScenarioFile(o->scenario);
    if (s.code == verify::CodeKind::Kernel)
      return runKernelCheck(*o, s, result);
    if (o->scenario.empty() && o->protocol.empty())
      fatal("check: give --protocol (see ftsim protocols) or --scenario FILE");
    const std::string origin = o->scenario.empty() ? "check" : o->scenario;
    if (!o->arch.empty()) {
      s.arch = o->arch;
      if (o->store.empty() && o->scenario.empty())
        s.store = sim::defaultStoreModel(arch::archByName(s.arch));
    }
    if (!o->protocol.empty())
      s.protocol = o->protocol;
    if (o->cpus)
      s.cpus = o->cpus;
    if (!o->store.empty())
      s.store = sim::parseStoreModel(o->store);
    if (!o->fetch.empty())
      s.fetch = sim::parseFetchModel(o->fetch);
    if (o->siteOffset >= 0)
      s.siteOffset = static_cast<unsigned>(o->siteOffset);
    verify::Transition t = s.sites.front();
    if (!o->transition.empty())
      t = verify::parseTransition(o->transition);
    if (o->sites)
      s.sites.assign(o->sites, t);
    else if (!o->transition.empty())
      s.sites.assign(s.sites.size(), t);
    if (o->preemption) {
      s.preemption = true;
      s.tasksPerCpu = std::max(2u, s.tasksPerCpu);
    }
    if (o->scenario.empty())
      s.name = fmt::format("{}-{}-{}cpu", s.arch, s.protocol, s.cpus);
    s.validate(origin);

    verify::ExploreOptions eo;
    eo.mode = verify::parseExploreMode(o->explore);
    eo.reduction = !o->naive;
    eo.preemptionBound = o->bound == -2 ? s.bounds.preemptions : o->bound;
    if (eo.preemptionBound < -1)
      fatal("--bound {}: use -1 for none, or a preemption count", o->bound);
    eo.maxExecutions = eo.mode == verify::ExploreMode::Exhaustive
                           ? (o->maxExecutions ? o->maxExecutions : s.bounds.maxExecutions)
                           : o->runs;
    eo.seed = o->seed;
    eo.pctDepth = o->depth;
    if (!o->quiet)
      eo.progress = [](const verify::ExploreStats &st) {
        std::fprintf(stderr, "\rftsim check: %llu executions, %llu pruned, %llu states, %.0f s",
                     static_cast<unsigned long long>(st.executions),
                     static_cast<unsigned long long>(st.pruned),
                     static_cast<unsigned long long>(st.distinctStates), st.seconds);
        std::fflush(stderr);
      };

    verify::ScenarioInstance instance(s);
    verify::ExploreResult r = verify::explore(instance, eo);
    if (!o->quiet && r.stats.seconds >= 1.0)
      std::fprintf(stderr, "\n");

    nlohmann::ordered_json j;
    j["scenario"] = s.name;
    j["describe"] = s.describe();
    j["explore"] = std::string(verify::exploreModeName(eo.mode));
    j["reduction"] = eo.reduction;
    j["preemption_bound"] = eo.preemptionBound;
    j["max_events"] = s.bounds.maxEvents;
    j["stats"] = statsJson(r.stats);
    if (!r.counterexample) {
      j["verdict"] = "verified";
      j["coverage"] = coverage(s, eo, r.stats);
      if (o->json)
        fmt::print("{}\n", j.dump(2));
      else {
        fmt::print("ftsim check: {}\n", s.describe());
        fmt::print("verified: no violation; {}\n", coverage(s, eo, r.stats));
        fmt::print("executions {}, sleep-set blocked {}, pruned branches {}, bound cuts {}, "
                   "distinct final states {}, {:.2f} s ({:.0f} executions/s)\n",
                   r.stats.executions, r.stats.sleepBlocked, r.stats.pruned, r.stats.boundCuts,
                   r.stats.distinctStates, r.stats.seconds,
                   r.stats.executions / std::max(r.stats.seconds, 1e-9));
      }
      result.exitCode = eo.mode == verify::ExploreMode::Exhaustive && !r.stats.complete ? 1 : 0;
      if (result.exitCode)
        fmt::print(stderr,
                   "ftsim check: exhaustive exploration did not complete within "
                   "{} executions; nothing is verified\n",
                   eo.maxExecutions);
      return;
    }
    const verify::Counterexample found = *r.counterexample;
    const verify::Counterexample min = verify::minimise(instance, found);
    const verify::ReplayedExecution check = verify::replayChoices(instance, min.choices);
    if (check.violations.empty() || check.logHash != min.logHash)
      FTSIM_PANIC("the minimised counterexample does not replay");
    const std::string path = o->cex.empty() ? "ftsim-cex.json" : o->cex;
    verify::writeReplayFile(path, s, min);
    if (!o->chrome.empty()) {
      const verify::ReplayedExecution again = verify::replayChoices(instance, min.choices);
      writeText(o->chrome,
                verify::chromeTrace(
                    instance.machine(), [&](std::uint64_t a) { return instance.siteName(a); },
                    again.violations));
    }
    j["verdict"] = "violation";
    j["oracle"] = min.violation.oracle;
    j["violation"] = verify::summarizeViolation(min.violation);
    j["bytes"] = arch::hexBytes(min.violation.bytes);
    j["decoded"] = min.violation.decoded;
    j["trail"] = min.violation.trail;
    j["preemptions"] = min.preemptions;
    j["events"] = min.events;
    j["found"] = {{"preemptions", found.preemptions}, {"events", found.events}};
    j["replay"] = path;
    if (o->json)
      fmt::print("{}\n", j.dump(2));
    else {
      fmt::print("ftsim check: {}\n", s.describe());
      fmt::print("{}", verify::formatViolation(min.violation));
      fmt::print("minimised: {} preemption{}, {} events (found with {} preemption{}, {} "
                 "events)\n",
                 min.preemptions, min.preemptions == 1 ? "" : "s", min.events, found.preemptions,
                 found.preemptions == 1 ? "" : "s", found.events);
      fmt::print("replay: ftsim replay {}\n", path);
      fmt::print("after {} executions ({} violating), {:.2f} s\n", r.stats.executions,
                 r.violatingExecutions, r.stats.seconds);
    }
    result.exitCode = 1;
  });
}

} // namespace ftsim::cli
