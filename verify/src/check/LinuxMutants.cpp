// Source mutants of a Linux tree's text_poke code (LinuxMutants.h).

#include "ftsim/verify/check/LinuxMutants.h"

#include "ftsim/arch/Error.h"
#include "ftsim/linux/LinuxGuest.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/LinuxHarness.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace ftsim::verify {
namespace {

// The scenario that can tell each operator from the tree: 2 CPUs, byte stores.
struct OperatorScenario {
  std::string op;
  unsigned sites = 1;
  Transition transition = Transition::NopToCall;
  bool descending = false;
  std::string fetch = "stale";
  bool foreignInt3 = false;
  unsigned batches = 1;
  unsigned calls = 1;
  int preemptions = -1; // CHESS bound of the search, -1: none
};

const std::vector<OperatorScenario> &operatorScenarios() {
  static const std::vector<OperatorScenario> table{
      // a CPU may fetch the new tail behind a stale first byte
      {"merge-first-two-phases", 1, Transition::NopToCall, false, "stale"},
      // a CPU may fetch a stale first byte with the new tail (or the reverse)
      {"no-tail-sync", 1, Transition::NopToCall, false, "stale"},
      // a CPU may fetch the stale int3 after the handler's descriptor is gone
      {"no-final-sync", 1, Transition::NopToCall, false, "stale"},
      // a handler that holds a reference reads the cleared vector
      // (an int3 the batch does not own, as in 285a54efe386: the batch's own are all handled
      // before the final text_poke_sync(), whose IPI waits for the handler's iret)
      {"clear-vector-before-count", 1, Transition::NopToCall, false, "atomic", true},
      // a handler may still run after the batch returns: the next batch's reference count is
      // clobbered by its late put_desc(), and that batch's own int3 is declined (two batches, the
      // task calling twice; at most 2 preemptions, as the unbounded tree is beyond budget)
      {"no-refcount-wait", 1, Transition::NopToCall, false, "atomic", true, 2, 2, 2},
      // a call at a site traced throughout is lost
      {"skip-emulation", 1, Transition::CallToCall, false, "atomic"},
      // queued in descending order, the handler's bsearch misses one site
      {"no-order-check", 2, Transition::NopToCall, true, "atomic"},
  };
  return table;
}

Scenario scenarioFor(const OperatorScenario &o, const std::string &kernel, const std::string &tree,
                     const std::string &mutant) {
  Scenario s;
  s.code = CodeKind::Linux;
  s.kernel = kernel;
  s.kernelTree = tree;
  s.mutant = mutant;
  s.cpus = 2;
  s.store = sim::StoreModel::Byte;
  s.fetch = &sim::fetchModelByName(o.fetch);
  s.sites.assign(o.sites, o.transition);
  s.descending = o.descending;
  s.foreignInt3 = o.foreignInt3;
  s.batches = o.batches;
  s.calls = o.calls;
  s.bounds.preemptions = o.preemptions;
  s.name = fmt::format("linux-{}-{}", kernel.empty() ? "tree" : kernel,
                       mutant.empty() ? o.op + "-scenario" : mutant);
  s.validate(s.name);
  return s;
}

LinuxMutantResult explore(const Scenario &s, const OperatorScenario &o) {
  LinuxMutantResult r;
  r.op = s.mutant;
  r.scenario = s.describe();
  const auto start = std::chrono::steady_clock::now();
  LinuxHarness h(s);
  CheckReport report = check(h, exploreOptionsFor(s));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.executions = report.result.stats.executions;
  r.verdict = report.verdict;
  (void)o;
  if (report.minimised) {
    const Violation &v = report.minimised->violation;
    r.killed = true;
    r.evidence = summarizeViolation(v);
    r.where = h.symbol(v.pc);
    // The harness's own finding in that execution (the last one run: the minimised
    // counterexample's replay) names the guest instruction better than a fault at the
    // exception-return stub: the int3 poke_int3_handler declined.
    if (!h.findings().empty()) {
      r.evidence += "; " + h.findings().front().message;
      r.where = h.symbol(h.findings().front().pc);
    }
  } else if (report.found) {
    r.killed = true;
    r.evidence = summarizeViolation(report.found->violation);
    r.where = h.symbol(report.found->violation.pc);
  }
  return r;
}

} // namespace

std::vector<std::pair<std::string, std::string>> linuxMutationOperators() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string script =
      (std::filesystem::path(linuxk::linuxObjectsScript()).parent_path() / "mutate").string();
  FILE *p = popen(fmt::format("'{}' --list", script).c_str(), "r");
  if (!p)
    fatal("cannot run {}", script);
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::string l(line);
    while (!l.empty() && l.back() == '\n')
      l.pop_back();
    const auto tab = l.find('\t');
    if (tab != std::string::npos)
      out.emplace_back(l.substr(0, tab), l.substr(tab + 1));
  }
  pclose(p);
  if (out.empty())
    fatal("{} --list gave no operators", script);
  return out;
}

LinuxMutationScore runLinuxMutants(const std::string &kernel, const std::string &kernelTree,
                                   const ProgressFn &progress) {
  LinuxMutationScore score;
  const std::uint64_t runs = 2 * operatorScenarios().size();
  auto ran = [&] {
    if (progress)
      progress(score.results.size(), runs);
  };
  const auto ops = linuxMutationOperators();
  score.tree = linuxk::buildLinuxGuest({kernel, kernelTree, "", ""}).describe();
  for (const OperatorScenario &o : operatorScenarios()) {
    LinuxMutantResult r = explore(scenarioFor(o, kernel, kernelTree, ""), o);
    r.description = "the tree as it is, under " + o.op + "'s scenario";
    if (r.killed)
      score.treeSurvives = false;
    score.results.push_back(std::move(r));
    ran();
  }
  for (const OperatorScenario &o : operatorScenarios()) {
    LinuxMutantResult r = explore(scenarioFor(o, kernel, kernelTree, o.op), o);
    for (const auto &[name, what] : ops)
      if (name == o.op)
        r.description = what;
    ++score.mutants;
    score.killed += r.killed;
    score.results.push_back(std::move(r));
    ran();
  }
  return score;
}

} // namespace ftsim::verify
