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
// (verify::proveByteStatesEverywhere). ppc32 adds engine- and encoder-level checkers (below).

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Progress.h"

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

// The default checkers of `arch` (x86_64 or ppc32). ppc32 adds, after the site-level ones:
//  - cmodx:enable-modify-disable: the ISA's live-patching rule (arch::LivePatchingRule, powerpc
//    CMODX after the Power ISA's Book II "Instruction Storage" section, "Concurrent Modification
//    and Execution of Instructions") over a site enabled, retargeted and disabled: kills
//    non-patch-class writes (word-trap-first) and the two-instruction order/grace mutants. A
//    protocol need not make other CPUs synchronise before it returns: Linux's (patch-instruction,
//    c96f83856f56) does not, and survives. The same rule is the live-patching oracle of `ftsim
//    check`, which finds every protocol mutant killed here on some scenario
//    (ppc32-mflr-wrong-order, ppc32-mflr-no-grace, the word-trap-first snippet check);
//  - z3:bl-range: the Z3 LI-range theorem, and an encoder held to it (kills bl-truncate, an
//    encoder mutant `check` cannot select: it runs the real encoder).
// ppc32 also has mutants outside the protocol table (word-trap-first, bl-truncate); checkers that
// build protocols from the table by name do not apply to them.
std::vector<MutantChecker> defaultMutantCheckers(const arch::Arch &arch);

// Runs every protocol of `arch` through `checkers`. A mutant stops at its first killer unless
// `allCheckers`; the correct protocol always meets every checker. `progress`, when given, hears
// (protocols done, protocols in all) after each.
MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers = false, const ProgressFn &progress = {});

} // namespace ftsim::verify
