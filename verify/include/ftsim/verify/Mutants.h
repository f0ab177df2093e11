#pragma once
// Mutation score: every protocol variant of an ISA (the historical bugs and the mutants of
// arch::protocolsFor, each differing from the correct protocol in one documented way) is run
// through the checkers; a mutant is killed when some checker finds a violation, and the correct
// protocol must be killed by none.
//
// Checkers are data (MutantChecker): by default, exhaustive source-DPOR exploration of site-level
// scenarios under the most permissive models (byte stores, stale fetch) — nop->call, call->call
// (a handler that skips the call is caught by trace completeness), two sites in one batch, two
// sites queued in descending order — then the Z3 byte-state proof over every offset and model
// (verify::proveByteStatesEverywhere). Engine-level mutants (a trampoline freed without a grace
// period) add their own checkers and candidates when the Kernel integration lands.

#include "ftsim/arch/Arch.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

struct MutantChecker {
  std::string name; // "explore:call-to-call", "z3:byte-states"
  // Returns a one-line description of the violation that kills `protocol`, or nothing.
  std::function<std::optional<std::string>(const std::string &protocol)> check;
};

struct MutantResult {
  std::string protocol;
  std::string difference; // "" for the correct protocol
  bool correct = false;
  std::vector<std::string> killedBy; // checker names
  std::vector<std::string> evidence; // per killer, the violation
};

struct MutationScore {
  std::string arch;
  std::vector<MutantResult> results;
  unsigned mutants = 0; // variants that are not the correct protocol
  unsigned killed = 0;  // of those, killed by some checker
  bool correctSurvives = true;
};

// The default checkers of `arch` (x86_64 or ppc32).
std::vector<MutantChecker> defaultMutantCheckers(const arch::Arch &arch);

// Runs every protocol of `arch` through `checkers`. A mutant stops at its first killer unless
// `allCheckers`; the correct protocol always meets every checker.
MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers = false);

} // namespace ftsim::verify
