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
//  - cmodx+sync:enable-modify-disable: the ISA's live-patching rule (arch::LivePatchingRule, powerpc CMODX) as an oracle
//    over a site enabled, retargeted and disabled, plus "every change is followed by the other
//    CPUs' context synchronisation before the protocol returns" (Power ISA v3.1 Book II 1.6):
//    kills non-patch-class writes (word-trap-first), the two-instruction order/grace mutants and
//    the dropped sync (word-nosync);
//  - z3:bl-range: the Z3 LI-range theorem, and an encoder held to it (kills bl-truncate).
// A running-guest checker (a stale `bl` still traced after the tracer is off, under the stale
// fetch model) was tried and did not kill word-nosync: the simulator's stale choices did not keep
// CPU 1 on the old word across the run, so it is not part of the defaults.
// ppc32 also has mutants outside the protocol table (word-trap-first, bl-truncate); checkers that
// build protocols from the table by name do not apply to them.
std::vector<MutantChecker> defaultMutantCheckers(const arch::Arch &arch);

// Runs every protocol of `arch` through `checkers`. A mutant stops at its first killer unless
// `allCheckers`; the correct protocol always meets every checker.
MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers = false);

} // namespace ftsim::verify
