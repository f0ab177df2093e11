// ftsim mutants: the mutation score of the checkers over every patch protocol variant of an ISA.
// Exit 0 when every mutant is killed and the correct protocol by none, 1 otherwise.

#include "Commands.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/LinuxMutants.h"
#include "ftsim/verify/check/Mutants.h"
#include "ftsim/verify/check/Verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ftsim::cli {
namespace {

// --kernel / --kernel-tree: the source mutants of a Linux tree's own text_poke code.
void runKernelMutants(const std::string &kernel, const std::string &tree, bool forced,
                      CommandResult &result) {
  Progress progress("mutants", "scenario runs", progressMode(forced));
  const verify::LinuxMutationScore score =
      verify::runLinuxMutants(kernel, tree, progress.enabled() ? progress.fn() : ProgressFn());
  progress.finish();
  fmt::print("{}\n", score.tree);
  for (const verify::LinuxMutantResult &r : score.results) {
    const std::string name = r.op.empty() ? "(the tree)" : r.op;
    std::string verdict;
    if (r.op.empty())
      verdict = r.killed ? "VIOLATION (the tree itself fails this scenario)"
                         : std::string(verify::verdictWord(r.verdict));
    else
      verdict = r.killed ? "killed" : fmt::format("SURVIVED ({})", verify::verdictWord(r.verdict));
    fmt::print("{:<26} {} — {} executions, {:.1f} s\n", name, verdict, r.executions, r.seconds);
    fmt::print("{:<26}   {}\n", "", r.description);
    fmt::print("{:<26}   scenario: {}\n", "", r.scenario);
    if (r.killed) {
      fmt::print("{:<26}   {}\n", "", r.evidence);
      fmt::print("{:<26}   at {}\n", "", r.where);
    }
  }
  const verify::Verdict verdict = !score.treeSurvives             ? verify::Verdict::Violation
                                  : score.killed != score.mutants ? verify::Verdict::Incomplete
                                                                  : verify::Verdict::Verified;
  fmt::print("mutation score {}: {}/{} source mutants killed; the tree {}\n{}\n", score.tree,
             score.killed, score.mutants,
             score.treeSurvives ? "passes every scenario" : "FAILS a scenario",
             verify::verdictWord(verdict));
  result.exitCode = verify::exitStatus(verdict);
}

} // namespace

void addMutantsCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "mutants", "Mutation score: run every protocol mutant through the exploration oracles and "
                 "the Z3 byte-state proof; the correct protocol must survive");
  auto archName = std::make_shared<std::string>(defaultArchName());
  auto all = std::make_shared<bool>(false);
  auto forced = std::make_shared<bool>(false);
  cmd->add_option("--arch", *archName, fmt::format("{}", fmt::join(executableArchNames(), " or ")));
  auto kernel = std::make_shared<std::string>();
  auto kernelTree = std::make_shared<std::string>();
  cmd->add_option("--kernel", *kernel,
                  "source mutants of Debian's linux-source-VERSION's text_poke code (6.1, 6.12)");
  cmd->add_option("--kernel-tree", *kernelTree,
                  "source mutants of this x86-64 tree's text_poke code");
  cmd->add_flag("--all-checkers", *all,
                "run every checker on every mutant (default: stop at the "
                "first killer)");
  addProgressFlag(cmd, *forced);
  cmd->callback([archName, all, kernel, kernelTree, forced, &result] {
    if (!kernel->empty() || !kernelTree->empty()) {
      if (!kernel->empty() && !kernelTree->empty())
        fatal("mutants: --kernel and --kernel-tree exclude each other");
      runKernelMutants(*kernel, *kernelTree, *forced, result);
      return;
    }
    const arch::Arch &a = arch::archByName(*archName);
    if (!a.executable())
      fatal("--arch {}: mutants need an executable architecture ({})", a.name(),
            fmt::join(executableArchNames(), ", "));
    const auto checkers = verify::defaultMutantCheckers(a);
    Progress progress("mutants", "mutants", progressMode(*forced));
    verify::MutationScore score =
        verify::runMutants(a, checkers, *all, progress.enabled() ? progress.fn() : ProgressFn());
    progress.finish();
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
