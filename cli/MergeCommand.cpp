// ftsim merge DIR: the verdict of a split tree from its subtrees' result files (SplitCheck.h),
// printed as `ftsim check` prints one run of the whole tree.

#include "Commands.h"

#include "ftsim/verify/check/SplitCheck.h"
#include "ftsim/verify/harness/Harness.h"

namespace ftsim::cli {

void addMergeCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "merge", "Merge the result files of `ftsim check --subtree` in DIR into one verdict; exit "
               "0 verified, 1 violation, 2 bad input, 3 incomplete");
  struct Flags {
    std::string dir;
    ReportFlags report;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("DIR", f->dir, "the directory of --split, holding *.result.json files")
      ->required();
  cmd->add_option("--cex", f->report.cex, "where to write the counterexample's replay file");
  cmd->add_option("--chrome", f->report.chrome,
                  "write the counterexample's Chrome trace-event JSON");
  cmd->add_flag("--json", f->report.json, "machine-readable result on stdout (no times)");
  cmd->callback([f, &result] {
    const verify::SubtreeResults results = verify::loadResultsDir(f->dir);
    if (!f->report.cex.empty())
      checkWritable(f->report.cex, "--cex");
    if (!f->report.chrome.empty())
      checkWritable(f->report.chrome, "--chrome");
    auto harness = verify::makeHarness(results.tree.scenario, harnessEnv());
    const verify::CheckReport r = verify::mergeCheck(results, *harness);
    ReportFlags report = f->report;
    report.quiet = true;
    printCheck(*harness, verify::exploreOptionsOf(results.tree), r, report, result);
  });
}

} // namespace ftsim::cli
