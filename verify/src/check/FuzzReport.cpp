// The fuzzer's result for people and as JSON (Fuzz.h).

#include "ftsim/verify/check/Fuzz.h"

#include "ftsim/verify/check/Verdict.h"

#include "ftsim/model/LinuxProfile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ftsim::verify {
namespace {

std::string stepsOf(const Scenario &s) {
  std::string out;
  for (const EngineStep &st : s.engine.steps)
    out += (out.empty() ? "" : "; ") + st.describe();
  return out;
}

// How to repeat the run exactly.
std::string modeOf(const FuzzOptions &o, const FuzzResult &r) {
  return o.runs ? fmt::format("--runs {}", o.runs)
                : fmt::format("--seconds {} (repeat with --runs {})", o.seconds, r.runs);
}

} // namespace

std::string formatFuzz(const FuzzOptions &o, const FuzzResult &r, const std::string &replayPath) {
  const std::string profileLine =
      o.linuxProfile.empty()
          ? std::string()
          : fmt::format("  linux: {}\n",
                        model::describeProfile(model::linuxProfileByName(o.linuxProfile)));
  if (!r.failing)
    return fmt::format("ftsim fuzz: NO VIOLATION in {} runs (not a proof; {} events, {} "
                       "operations refused with an errno), seed {}, {}\n{}",
                       r.runs, r.events, r.notes, o.seed, modeOf(o, r), profileLine);
  std::string out = fmt::format("ftsim fuzz: VIOLATION in run {} of seed {} ({})\n", r.runs - 1,
                                o.seed, modeOf(o, r));
  out += fmt::format("generated: {}\n  {}\n", stepsOf(*r.original), r.originalViolation);
  out += fmt::format("shrunk to: {} ({})\n", stepsOf(*r.failing), r.failing->describe());
  // Without --linux the generated scenario is the engine's defaults: say which release, if any,
  // its choices are (x86_64 without per-ops trampolines is none since v3.17).
  out += o.linuxProfile.empty() ? fmt::format("  linux: {}\n", describeScenarioProfile(*r.failing))
                                : profileLine;
  out += formatViolation(r.cex->violation);
  out += fmt::format("schedule minimised to {} decisions, {} events\n", r.cex->choices.size(),
                     r.cex->events);
  if (!replayPath.empty())
    out += fmt::format("replay: ftsim replay {}\n", replayPath);
  return out;
}

std::string fuzzJson(const FuzzOptions &o, const FuzzResult &r, const std::string &replayPath) {
  nlohmann::ordered_json j;
  j["seed"] = o.seed;
  if (!o.protocol.empty())
    j["protocol"] = o.protocol;
  if (!o.linuxProfile.empty())
    j["linux"] = o.linuxProfile;
  j["runs"] = r.runs;
  j["events"] = r.events;
  j["refused_operations"] = r.notes;
  const Verdict verdict = r.failing ? Verdict::Violation : Verdict::NoViolation;
  j["verdict"] = std::string(verdictWord(verdict));
  j["exit_status"] = exitStatus(verdict);
  if (r.failing) {
    j["run"] = r.runs - 1;
    j["original_steps"] = stepsOf(*r.original);
    j["original_violation"] = r.originalViolation;
    j["steps"] = stepsOf(*r.failing);
    j["linux_line"] = describeScenarioProfile(*r.failing);
    j["violation"] = summarizeViolation(r.cex->violation);
    j["decisions"] = r.cex->choices.size();
    j["replay"] = replayPath;
  }
  return j.dump(2) + "\n";
}

} // namespace ftsim::verify
