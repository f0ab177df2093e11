#pragma once
// One verdict vocabulary for every command that checks something (check, replay, prove, mutants,
// fuzz), with one exit status each:
//
//   0  VERIFIED      an exhaustive search completed within the bounds stated in the output and no
//                    execution was cut; or, for randomised search, NO VIOLATION in N runs (not a
//                    proof) — the output says which of the two it is
//   1  VIOLATION     a violation was found: minimised counterexample, replay file written
//   2  BAD INPUT     one line naming the input (ftsim::FatalError)
//   3  INCOMPLETE    nothing proven: the execution budget or time ran out, or some execution was
//                    cut at max_events before the scenario finished (the output says how many)
//
// JSON output carries the same word (verdictWord) in its "verdict" field.

#include <cstdint>
#include <string>
#include <string_view>

namespace ftsim::verify {

enum class Verdict {
  Verified,    // exhaustive and complete within bounds, nothing cut
  NoViolation, // randomised: no violation in N runs, nothing cut (not a proof); exit 0
  Violation,
  BadInput,
  Incomplete,
};

// "VERIFIED", "NO VIOLATION", "VIOLATION", "BAD INPUT", "INCOMPLETE".
std::string_view verdictWord(Verdict verdict);
// 0, 0, 1, 2, 3.
int exitStatus(Verdict verdict);

// How much of the search space an exploration covered, and why it is not a proof when it is not.
struct Coverage {
  bool exhaustive = false;      // the explorer enumerates a space (not sampling)
  bool complete = false;        // exhaustive: every schedule within the bounds ran (false: the
                                // execution budget ran out first)
  std::uint64_t executions = 0; // executions run
  std::uint64_t cut = 0;        // executions cut at max_events before the scenario finished
};

// The verdict of a search that found no violation.
Verdict verdictOf(const Coverage &coverage);
// Why an INCOMPLETE verdict is incomplete, one clause: "the execution budget (200000) ran out;
// 3 executions were cut at max_events = 8". Empty for other verdicts.
std::string incompleteReason(const Coverage &coverage, std::uint64_t budget,
                             std::uint64_t maxEvents);

} // namespace ftsim::verify
