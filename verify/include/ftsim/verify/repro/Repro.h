#pragma once
// `ftsim repro`: the published scenarios, each reproduced in one call. A published scenario is a
// group of scenario files that name it with `published = "NAME"` (its page is papers/NAME.md):
// the variant as it was when the bug was reported (`[expect] verdict = "violation"`, with the
// oracle that must see it) and the fixed one(s) (`verdict = "verified"`). Reproducing a variant
// runs `check` on it with the file's own exploration and says whether the outcome matches the
// published one; optionally it also times the first counterexample of a buggy variant under each
// explorer (exhaustive, pct, random) that applies to its kind.

#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

struct HarnessEnv;

struct PublishedScenario {
  std::string name;               // the `published` key: papers/NAME.md
  std::vector<std::string> files; // its scenario files, sorted
  std::vector<Scenario> variants; // parsed, in the order of `files`
};

// The scenario files of `dir` (*.toml) that name a published scenario, grouped and sorted by name;
// FatalError naming a file that does not parse, or a group without a buggy or a fixed variant.
std::vector<PublishedScenario> publishedScenarios(const std::string &dir);
// The group called `name`; FatalError naming the known ones otherwise.
const PublishedScenario &findPublished(const std::vector<PublishedScenario> &all,
                                       const std::string &name);

// Time to the first counterexample under one explorer (buggy variants).
struct FirstCounterexample {
  std::string explorer;
  bool applies = true; // the explorer does not apply to the scenario's kind: not run
  bool found = false;
  double limit = 0; // the wall time it was given
  double seconds = 0;
  std::uint64_t executions = 0;
};

struct ReproOutcome {
  std::string file;
  Scenario scenario;
  CheckReport report;
  bool matches = false; // the verdict (and, for a violation, the oracle) is the published one
  double seconds = 0;   // the whole check, minimisation included
  std::vector<FirstCounterexample> firsts; // with `timeFirsts`, buggy variants only
};

// Runs `check` on one variant; with `firstLimit` > 0 seconds, also each explorer's first
// counterexample of a buggy variant, each search given at most that much wall time.
ReproOutcome reproduceVariant(const std::string &file, const Scenario &scenario,
                              const HarnessEnv &env, double firstLimit);

// "violation torn-fetch" / "verified": what the published record says.
std::string publishedOutcome(const Scenario &scenario);
// "VIOLATION torn-fetch" / "VERIFIED" / "NO VIOLATION (not a proof)".
std::string reproducedOutcome(const ReproOutcome &outcome);

// For people: one block per published scenario, a line per variant.
std::string formatRepro(const PublishedScenario &published,
                        const std::vector<ReproOutcome> &outcomes);
// One Markdown table over every outcome (papers/README.md's index of reproductions).
std::string reproMarkdown(const std::vector<PublishedScenario> &all,
                          const std::vector<std::vector<ReproOutcome>> &outcomes);

} // namespace ftsim::verify
