// ftsim prove: Z3 proofs (negate-and-expect-unsat), Prove.h. Exit 0 when every proof that should
// hold holds (and what is meant to be unsafe is shown so), 1 with the counterexample of a proof
// that should hold, 2 on bad input, 3 when something meant to be unsafe is not shown so within
// the bounds.

#include "Commands.h"

#include "ftsim/verify/prove/Prove.h"

#include <fmt/format.h>

#include <memory>

namespace ftsim::cli {

void addProveCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "prove", "Z3 proofs: byte-state safety of patch protocols at every site offset under every "
               "store and fetch model, branch-encoding round trips and ranges, trampoline freeing "
               "on a bounded task model");
  auto q = std::make_shared<verify::ProveRequest>();
  auto forced = std::make_shared<bool>(false);
  optionalFlag(cmd, "--arch", q->arch, "x86_64 or ppc32 (default: both)");
  optionalFlag(cmd, "--protocol", q->protocol,
               "a protocol name (ftsim protocols); default: each architecture's correct one");
  optionalFlag(cmd, "--protocol-file", q->protocolFile,
               "a patch protocol as a TOML file (README.md, \"Protocols as files\")");
  optionalFlag(cmd, "--store", q->store, "restrict to one store model: byte, word, line");
  optionalFlag(cmd, "--fetch", q->fetch, "restrict to one fetch model: atomic, line, stale");
  optionalFlag(cmd, "--site-offset", q->siteOffset, "restrict to one site offset (0-63)");
  cmd->add_flag("--encodings", q->encodingsOnly, "only the branch-encoding proofs");
  cmd->add_flag("--quiescence", q->quiescenceOnly,
                "only the trampoline-freeing proofs on the bounded task model");
  optionalFlag(cmd, "--tramp-free", q->trampFree,
               "with --quiescence: one strategy (immediate, sched-sync, rcu-tasks)");
  cmd->add_option("--tasks", q->tasks, "bounded task model: tasks (1-8)")->check(CLI::Range(1, 8));
  cmd->add_option("--cpus", q->cpus, "bounded task model: CPUs (1-8)")->check(CLI::Range(1, 8));
  cmd->add_option("--steps", q->steps, "bounded task model: events per schedule (1-64)")
      ->check(CLI::Range(1, 64));
  addProgressFlag(cmd, *forced);
  cmd->callback([q, forced, &result] {
    Progress progress("prove", "stages", progressMode(*forced));
    if (progress.enabled())
      q->progress = progress.fn();
    const verify::ProveReport r = verify::prove(*q);
    progress.finish();
    fmt::print("{}{}\n", r.text, verify::verdictWord(r.verdict));
    result.exitCode = verify::exitStatus(r.verdict);
  });
}

} // namespace ftsim::cli
