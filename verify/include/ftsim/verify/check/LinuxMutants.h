#pragma once
// `ftsim mutants --kernel 6.12` (--kernel-tree DIR): the source mutation operators of
// linux/kbuild/mutate applied to a private copy of the tree's alternative.c, each compiled with
// the tree's recorded Kbuild command, linked, and explored exhaustively with the scenario that
// can tell it from the tree (LinuxHarness.h). The unmutated tree must pass every one of those
// scenarios. A mutant that survives is a finding about ftsim's bounds or oracles.

#include "ftsim/verify/check/Verdict.h"

#include "ftsim/arch/Progress.h"
#include <cstdint>

#include <string>
#include <vector>

namespace ftsim::verify {

struct LinuxMutantResult {
  std::string op;          // "clear-vector-before-count", or "" for the unmutated tree
  std::string description; // the operator's one line
  std::string scenario;    // the scenario it was explored with
  bool killed = false;
  std::string evidence; // the minimised violation, one line
  std::string where;    // the guest instruction: "poke_int3_handler+0x5a (arch/...:2411)"
  std::uint64_t executions = 0;
  double seconds = 0;
  Verdict verdict = Verdict::Incomplete;
};

struct LinuxMutationScore {
  std::string tree;                       // "Linux 6.12.117 (linux-source-6.12), ..."
  std::vector<LinuxMutantResult> results; // the unmutated tree's runs first
  unsigned mutants = 0, killed = 0;
  bool treeSurvives = true; // the unmutated tree passes every scenario
};

// Operators and their one-line descriptions, from linux/kbuild/mutate --list.
std::vector<std::pair<std::string, std::string>> linuxMutationOperators();

// `progress`, when given, hears (runs done, runs in all) after each scenario run (the tree's, then
// each mutant's).
LinuxMutationScore runLinuxMutants(const std::string &kernel, const std::string &kernelTree,
                                   const ProgressFn &progress = {});

} // namespace ftsim::verify
