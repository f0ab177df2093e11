// ftsim mutants: the mutation score of the checkers over every patch protocol variant of an ISA.
// Exit 0 when every mutant is killed and the correct protocol by none, 1 otherwise.

#include "Commands.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Mutants.h"
#include "ftsim/verify/check/Verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ftsim::cli {

void addMutantsCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "mutants", "Mutation score: run every protocol mutant through the exploration oracles and "
                 "the Z3 byte-state proof; the correct protocol must survive");
  auto archName = std::make_shared<std::string>(defaultArchName());
  auto all = std::make_shared<bool>(false);
  cmd->add_option("--arch", *archName, fmt::format("{}", fmt::join(executableArchNames(), " or ")));
  cmd->add_flag("--all-checkers", *all,
                "run every checker on every mutant (default: stop at the "
                "first killer)");
  cmd->callback([archName, all, &result] {
    const arch::Arch &a = arch::archByName(*archName);
    if (!a.executable())
      fatal("--arch {}: mutants need an executable architecture ({})", a.name(),
            fmt::join(executableArchNames(), ", "));
    const auto checkers = verify::defaultMutantCheckers(a);
    verify::MutationScore score = verify::runMutants(a, checkers, *all);
    for (const verify::MutantResult &r : score.results) {
      std::string verdict;
      if (r.correct)
        verdict = r.killedBy.empty() ? "survives every checker (correct protocol)"
                                     : "KILLED (the correct protocol must survive)";
      else
        verdict = r.killedBy.empty() ? "SURVIVED" : "killed by " + r.killedBy.front();
      fmt::print("{:<18} {}\n", r.protocol, verdict);
      if (!r.difference.empty())
        fmt::print("{:<18}   mutation: {}\n", "", r.difference);
      for (std::size_t i = 0; i < r.killedBy.size(); ++i)
        fmt::print("{:<18}   {}: {}\n", "", r.killedBy[i], r.evidence[i]);
    }
    // The correct protocol killed is a violation; a mutant no checker kills leaves the score
    // incomplete (the checkers cannot tell it from the correct protocol).
    const verify::Verdict verdict = !score.correctSurvives          ? verify::Verdict::Violation
                                    : score.killed != score.mutants ? verify::Verdict::Incomplete
                                                                    : verify::Verdict::Verified;
    fmt::print("mutation score {}: {}/{} mutants killed; correct protocol {}\n{}\n", score.arch,
               score.killed, score.mutants, score.correctSurvives ? "killed by none" : "KILLED",
               verify::verdictWord(verdict));
    result.exitCode = verify::exitStatus(verdict);
  });
}

} // namespace ftsim::cli
