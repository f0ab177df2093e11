// Subtree jobs and the merge of their results (SplitCheck.h).

#include "ftsim/verify/check/SplitCheck.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::verify {

SubtreeResults runSubtreeJob(const SubtreeJob &job, Harness &harness, unsigned jobs,
                             const std::function<std::unique_ptr<Harness>()> &newHarness) {
  ExploreOptions o = exploreOptionsOf(job.tree);
  o.jobs = jobs;
  o.newHarness = newHarness;
  SubtreeResults out;
  out.tree = job.tree;
  SubtreeHooks hooks;
  hooks.only = job.subtrees;
  hooks.begin = [&](const SubtreePlan &plan, std::map<std::uint32_t, SubtreeResult> &) {
    if (!splitTreeOf(job.tree.scenario, o, plan).same(job.tree))
      fatal("the subtree file's tree differs from the one this ftsim builds for its scenario "
            "(another version of ftsim or of the guest image?)");
  };
  hooks.finished = [&](const SubtreeResult &r) { out.results[r.index] = r; };
  o.subtreeHooks = &hooks;
  explore(harness, o);
  return out;
}

CheckReport mergeCheck(const SubtreeResults &results, Harness &harness) {
  ExploreOptions o = exploreOptionsOf(results.tree);
  Exploration x(harness, o);
  mergeSubtrees(x, results.tree.plan, results.results, 0);
  ExploreResult r = x.result(true);
  std::string missing;
  if (!r.counterexample && !r.stats.complete && r.stats.executions < o.maxExecutions) {
    std::uint32_t first = 0;
    while (results.results.count(first))
      ++first;
    missing = fmt::format("subtree {} of {} has no result file", first, results.tree.plan.count);
  }
  CheckReport report = concludeSplitCheck(harness, o, std::move(r));
  if (!missing.empty() && report.verdict == Verdict::Incomplete)
    report.incomplete = missing;
  return report;
}

CheckReport concludeSplitCheck(Harness &harness, const ExploreOptions &o, ExploreResult r) {
  if (r.counterexample && r.counterexample->violation.oracle.empty()) {
    // Result files keep a counterexample's decisions; its violation is observed again here.
    const ReplayedExecution again = replayChoices(harness, r.counterexample->choices, o.oracles);
    if (again.violations.empty() || again.logHash != r.counterexample->logHash)
      fatal("the counterexample of subtree results does not replay on this build");
    r.counterexample->violation = again.violations.front();
  }
  return concludeCheck(harness, o, std::move(r));
}

} // namespace ftsim::verify
