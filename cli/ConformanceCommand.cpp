// ftsim conformance: ftsim's C++ int3 protocol against a Linux tree's own text_poke code, batch by
// batch (verify/prove/Conformance.h). Exit 0 when every batch is the same, 1 otherwise, 2 for bad
// input.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/prove/Conformance.h"

#include <fmt/format.h>

#include <memory>

namespace ftsim::cli {

void addConformanceCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "conformance", "Compare the C++ int3 protocol with a Linux tree's own text_poke code on "
                     "random batches: stores, syncs and the handler's state after each");
  struct Flags {
    std::string kernel, kernelTree, mutant, store = "byte", changes = "all";
    std::size_t batches = 100;
    std::uint64_t seed = 1;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("--kernel", f->kernel,
                  "Debian's linux-source-VERSION (6.1, 6.12); 6.12 when no tree is given");
  cmd->add_option("--kernel-tree", f->kernelTree, "any x86-64 tree (built out of tree)");
  cmd->add_option("--mutant", f->mutant,
                  "a source mutant of the tree (linux/kbuild/mutate --list): the check must fail");
  cmd->add_option("--batches", f->batches, "random batches of 1-8 sites, 1-1000000 (default 100)");
  cmd->add_option("--seed", f->seed, "the batches' seed (default 1)");
  cmd->add_option("--store", f->store, "store model both sides split text writes by (byte)");
  cmd->add_option("--changes", f->changes,
                  "all (default: also nop-to-int3 and nop-to-ret) or harness (nop-to-call, "
                  "call-to-nop, call-to-call)");
  cmd->callback([f, &result] {
    if (!f->kernel.empty() && !f->kernelTree.empty())
      fatal("conformance: --kernel and --kernel-tree exclude each other");
    if (f->batches == 0)
      fatal("--batches 0: at least one batch");
    // About 15 ms and one line of output a batch: a million is hours, and more is no comparison
    // anyone waits for.
    if (f->batches > 1000000)
      fatal("--batches {}: at most 1000000", f->batches);
    if (f->changes != "all" && f->changes != "harness")
      fatal("--changes '{}': all or harness", f->changes);
    verify::ConformanceOptions options;
    options.allChanges = f->changes == "all";
    options.batches = f->batches;
    options.seed = f->seed;
    options.store = sim::parseStoreModel(f->store);
    const linuxk::LinuxGuest guest =
        linuxk::buildLinuxGuest({f->kernelTree.empty() && f->kernel.empty() ? "6.12" : f->kernel,
                                 f->kernelTree, "", f->mutant});
    const verify::ConformanceReport report = verify::runConformance(guest, options);
    fmt::print("{}\n", guest.describe());
    for (std::size_t i = 0; i < report.batches.size(); ++i) {
      const verify::ConformanceBatch &b = report.batches[i];
      fmt::print("batch {:>4} [{}]: ", i + 1, verify::describeSites(b.sites));
      if (!b.difference) {
        fmt::print("same ({} steps)\n", b.treeSteps);
        continue;
      }
      const verify::ConformanceDifference &d = *b.difference;
      fmt::print("DIFFERENT at step {} ({}): model '{}', tree '{}'\n", d.step,
                 verify::differenceKindName(d.kind), d.model, d.tree);
    }
    std::string kinds;
    for (const auto &[kind, n] : report.kinds())
      kinds += fmt::format(", {} {}", n, verify::differenceKindName(kind));
    fmt::print(
        "conformance: {}/{} batches the same, {} different{}; store {}, seed {}, changes {}\n",
        report.same(), report.batches.size(), report.batches.size() - report.same(), kinds,
        sim::storeModelName(options.store), options.seed, f->changes);
    result.exitCode = report.conforms() ? 0 : 1;
  });
}

} // namespace ftsim::cli
