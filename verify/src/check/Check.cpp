// ftsim check as one library call (Check.h).

#include "ftsim/verify/check/Check.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/replay/Timeline.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace ftsim::verify {
namespace {

std::string coverageText(const Harness &h, const ExploreOptions &o, const ExploreResult &r) {
  const ExploreStats &st = r.stats;
  const Explorer &explorer = explorerByName(o.explorer);
  if (!r.exhaustive)
    return fmt::format("{} {} runs ({})", st.executions, o.explorer, explorer.bounds(h, o));
  const std::string what = r.counterexample ? o.explorer + " search (stopped at the violation)"
                           : st.complete    ? o.explorer + " within bounds"
                                            : o.explorer + " search (budget ran out)";
  return fmt::format("{}: {}; {}; at most {} events per execution ({} executions, {} cut at the "
                     "limit){}",
                     what, explorer.bounds(h, o), h.describeSetup(), h.scenario().bounds.maxEvents,
                     st.executions, st.eventLimitHits, explorer.method(h, o));
}

// How a split tree was searched (Subtrees.h); "" for one tree.
std::string splitLine(const ExploreStats &st) {
  if (st.subtrees == 0)
    return {};
  std::string out = fmt::format("  split: {} subtrees below depth {} (sleep sets only above it)",
                                st.subtrees, st.frontierDepth);
  if (st.subtreesResumed)
    out += fmt::format("; {} resumed from the checkpoint, not searched again", st.subtreesResumed);
  return out + "\n";
}

// What state hashing did (VisibleSearch.h); "" when nothing was hashed.
std::string hashingLine(const ExploreStats &st) {
  if (st.hashedStates == 0)
    return {};
  return fmt::format("  state hashing: {} states hashed, {} executions stopped at a state "
                     "expanded before\n",
                     st.hashedStates, st.revisits);
}

} // namespace

ExploreOptions exploreOptionsFor(const Scenario &s) {
  ExploreOptions o;
  o.explorer = s.explorer();
  o.preemptionBound = s.bounds.preemptions;
  o.seed = s.explore.seed;
  o.pctDepth = s.explore.pctDepth;
  if (!s.explore.continuation.empty())
    o.continuation = *continuationByName(s.explore.continuation);
  o.maxExecutions =
      explorerByName(o.explorer).exhaustive() ? s.bounds.maxExecutions : s.explore.runs;
  return o;
}

CheckReport check(Harness &harness, const ExploreOptions &options) {
  return concludeCheck(harness, options, explore(harness, options));
}

CheckReport concludeCheck(Harness &harness, const ExploreOptions &options, ExploreResult result) {
  CheckReport report;
  report.result = std::move(result);
  const Scenario &s = harness.scenario();
  report.coverage = coverageText(harness, options, report.result);
  report.models = fmt::format("store {}, fetch {}, max_events {}", sim::storeModelName(s.store),
                              s.fetch->name(), s.bounds.maxEvents);
  if (!report.result.counterexample) {
    const Coverage c = report.result.coverage();
    report.verdict = verdictOf(c);
    report.incomplete = incompleteReason(c, options.maxExecutions, s.bounds.maxEvents);
    return report;
  }
  report.verdict = Verdict::Violation;
  report.found = report.result.counterexample;
  Counterexample min = minimise(harness, *report.found, options.oracles);
  // Re-check: the minimised schedule replays to the same log, and the machine now holds it.
  const ReplayedExecution again =
      replayChoices(harness, min.choices, options.oracles, min.continues);
  if (again.logHash != min.logHash || again.violations.empty())
    FTSIM_PANIC("the minimised counterexample does not replay");
  attachTrail(harness, min.violation, options.fullTrail);
  report.minimised = std::move(min);
  return report;
}

std::string formatCheck(const Harness &h, const CheckReport &r, const std::string &replayPath) {
  std::string out = fmt::format("ftsim check: {}\n", h.scenario().describe());
  if (const Scenario &s = h.scenario(); !s.source.empty() || !s.fidelity.empty())
    out += fmt::format("  source: {}; fidelity: {}\n", s.source.empty() ? "-" : s.source,
                       s.fidelity.empty() ? "not stated" : s.fidelity);
  const ExploreStats &st = r.result.stats;
  if (r.verdict != Verdict::Violation) {
    out += fmt::format("{}: no violation; {}\n", verdictWord(r.verdict), r.coverage);
    if (r.verdict == Verdict::NoViolation)
      out += "  randomised search: not a proof\n";
    if (r.verdict == Verdict::Incomplete)
      out += fmt::format("  nothing is proven: {}\n", r.incomplete);
    out += fmt::format("  models: {}\n", r.models);
    out += fmt::format("  linux: {}\n", describeScenarioProfile(h.scenario()));
    out += fmt::format("executions {} (complete {}, sleep-set blocked {}, cut at the event limit "
                       "{}), pruned branches {}, bound cuts {}, distinct final states {}, {:.2f} s "
                       "({:.0f} executions/s)\n",
                       st.executions, st.executions - st.sleepBlocked - st.eventLimitHits,
                       st.sleepBlocked, st.eventLimitHits, st.pruned, st.boundCuts,
                       st.distinctStates, st.seconds, st.executions / std::max(st.seconds, 1e-9));
    out += hashingLine(st);
    out += splitLine(st);
    return out;
  }
  const Counterexample &min = *r.minimised, &found = *r.found;
  out += formatViolation(min.violation);
  const std::string deviating =
      min.continues ? fmt::format(" ({} deviating from the continuation, which follows them; the "
                                  "replay file stores {} decisions and runs of the continuation)",
                                  min.deviations, storedDecisions(min))
                    : std::string();
  out += fmt::format("minimised: {} preemption{}, {} events, {} decisions{} (found with {} "
                     "preemption{}, {} events, {} decisions)\n",
                     min.preemptions, min.preemptions == 1 ? "" : "s", min.events,
                     min.choices.size(), deviating, found.preemptions,
                     found.preemptions == 1 ? "" : "s", found.events, found.choices.size());
  if (!replayPath.empty())
    out += fmt::format("replay: ftsim replay {}\n", replayPath);
  out += fmt::format("  models: {}\n", r.models);
  out += fmt::format("  linux: {}\n", describeScenarioProfile(h.scenario()));
  out += fmt::format("after {} executions ({} violating): {}, {:.2f} s\n", st.executions,
                     r.result.violatingExecutions, r.coverage, st.seconds);
  out += hashingLine(st);
  out += splitLine(st);
  return out;
}

std::string checkJson(const Harness &h, const ExploreOptions &o, const CheckReport &r,
                      const std::string &replayPath) {
  const Scenario &s = h.scenario();
  const ExploreStats &st = r.result.stats;
  nlohmann::ordered_json j;
  j["verdict"] = std::string(verdictWord(r.verdict));
  j["exit_status"] = exitStatus(r.verdict);
  j["scenario"] = s.name;
  j["kind"] = std::string(codeKindName(s.code));
  j["describe"] = s.describe();
  j["source"] = s.source;
  j["fidelity"] = s.fidelity;
  j["linux"] = describeScenarioProfile(s);
  j["explorer"] = o.explorer;
  j["reduction"] = o.reduction;
  j["preemption_bound"] = o.preemptionBound;
  j["max_events"] = s.bounds.maxEvents;
  j["models"] = r.models;
  j["coverage"] = r.coverage;
  if (r.verdict == Verdict::Incomplete)
    j["incomplete"] = r.incomplete;
  j["stats"] = {{"executions", st.executions},
                {"sleep_blocked", st.sleepBlocked},
                {"pruned", st.pruned},
                {"bound_cuts", st.boundCuts},
                {"event_limit_hits", st.eventLimitHits},
                {"distinct_states", st.distinctStates},
                {"hashed_states", st.hashedStates},
                {"revisits", st.revisits},
                {"decisions", st.decisions},
                {"events", st.events},
                {"max_events", st.maxEvents},
                {"max_preemptions", st.maxPreemptions},
                {"complete", st.complete},
                {"subtrees", st.subtrees},
                {"frontier_depth", st.frontierDepth},
                {"subtrees_resumed", st.subtreesResumed}};
  if (r.minimised) {
    const Counterexample &min = *r.minimised;
    j["oracle"] = min.violation.oracle;
    j["violation"] = summarizeViolation(min.violation);
    j["bytes"] = arch::hexBytes(min.violation.bytes);
    j["decoded"] = min.violation.decoded;
    j["trail"] = min.violation.trail;
    j["preemptions"] = min.preemptions;
    j["events"] = min.events;
    j["decisions"] = min.choices.size();
    j["stored_decisions"] = storedDecisions(min);
    j["deviations"] = min.deviations;
    j["continues"] = min.continues;
    j["found"] = {{"preemptions", r.found->preemptions},
                  {"events", r.found->events},
                  {"decisions", r.found->choices.size()}};
    j["replay"] = replayPath;
  }
  return j.dump(2) + "\n";
}

} // namespace ftsim::verify
