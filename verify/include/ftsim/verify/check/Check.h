#pragma once
// `ftsim check` as one library call, for every kind of scenario: explore the scenario's harness
// with every oracle that applies, minimise and re-check the first violation, and say what was
// shown in the verdict vocabulary of Verdict.h — with the bounds and the memory models the
// verdict depends on.

#include "ftsim/verify/check/Verdict.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/Harness.h"

#include <optional>
#include <string>

namespace ftsim::verify {

struct CheckReport {
  Verdict verdict = Verdict::Incomplete;
  ExploreResult result;
  std::optional<Counterexample> found;     // the first violation, as found
  std::optional<Counterexample> minimised; // replayed and re-checked, with its trail
  // "exhaustive within bounds: no preemption bound, ..." or "30 random runs (seed 1)".
  std::string coverage;
  // What the verdict depends on: "store byte, fetch stale, max_events 20000".
  std::string models;
  std::string incomplete; // why, for INCOMPLETE
};

// The exploration the scenario asks for (its explorer, runs, seed, depth, bounds).
ExploreOptions exploreOptionsFor(const Scenario &scenario);

// FatalError when the options do not fit the scenario.
CheckReport check(Harness &harness, const ExploreOptions &options);
// The rest of check() once the exploration's `result` is known (from explore(), or merged from
// subtrees): the verdict, and the first violation minimised and re-checked on `harness`.
CheckReport concludeCheck(Harness &harness, const ExploreOptions &options, ExploreResult result);

// For people: the verdict line, the bounds and models, the statistics or the counterexample.
// `replayPath`: where the counterexample's replay file was written ("" for none).
std::string formatCheck(const Harness &harness, const CheckReport &report,
                        const std::string &replayPath);
// Machine-readable, without times: {"verdict": "VERIFIED", ...}.
std::string checkJson(const Harness &harness, const ExploreOptions &options,
                      const CheckReport &report, const std::string &replayPath);

} // namespace ftsim::verify
