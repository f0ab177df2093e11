// ftsim repro: the published scenarios, grouped from their files, reproduced and compared with the
// published outcome (Repro.h).

#include "ftsim/verify/repro/Repro.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

namespace ftsim::verify {
namespace {

bool isBuggy(const Scenario &s) { return s.expectVerdict == "violation"; }

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The first counterexample of `s` under `explorer`, with the scenario's own bounds and runs.
FirstCounterexample timeFirst(const Scenario &s, const HarnessEnv &env, const std::string &explorer,
                              double limit) {
  FirstCounterexample first;
  first.explorer = explorer;
  first.limit = limit;
  CheckRequest request;
  request.explorer = explorer;
  ExploreOptions options;
  try {
    options = buildExploreOptions(s, request);
  } catch (const FatalError &) {
    first.applies = false;
    return first;
  }
  options.hashLogs = false;
  options.jobs = 1; // one core: the figure is a time to the first counterexample per core
  options.wallSeconds = limit;
  auto harness = makeHarness(s, env);
  const ExploreResult r = explore(*harness, options);
  first.found =
      r.counterexample.has_value() && r.counterexample->violation.oracle == s.expectOracle;
  first.seconds = r.stats.seconds;
  first.executions = r.stats.executions;
  return first;
}

std::string firstText(const FirstCounterexample &f) {
  if (!f.applies)
    return "n/a";
  if (!f.found)
    return fmt::format("not found ({} executions, {:.0f} s limit)", f.executions, f.limit);
  return fmt::format("{:.2f} s", f.seconds);
}

std::string cexLength(const ReproOutcome &o) {
  if (!o.report.minimised)
    return "-";
  // The decisions the replay file stores one by one (the continuation's runs are one entry each).
  const Counterexample &c = *o.report.minimised;
  const std::size_t stored = storedDecisions(c);
  if (stored == c.choices.size())
    return fmt::format("{} decisions, {} events", stored, c.events);
  return fmt::format("{} decisions stored ({} with the continuation's), {} events", stored,
                     c.choices.size(), c.events);
}

} // namespace

std::vector<PublishedScenario> publishedScenarios(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fatal("{}: not a directory of scenario files", dir);
  std::vector<std::string> files;
  for (const auto &entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".toml")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  std::map<std::string, PublishedScenario> groups;
  for (const std::string &file : files) {
    Scenario s = loadScenarioFile(file);
    if (s.published.empty())
      continue;
    PublishedScenario &g = groups[s.published];
    g.name = s.published;
    g.files.push_back(file);
    g.variants.push_back(std::move(s));
  }
  std::vector<PublishedScenario> out;
  for (auto &entry : groups) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string &name = entry.first;
    PublishedScenario &g = entry.second;
    // The buggy variants first, each kind in file order.
    std::vector<std::size_t> order(g.files.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return isBuggy(g.variants[a]) && !isBuggy(g.variants[b]);
    });
    PublishedScenario sorted;
    sorted.name = g.name;
    for (std::size_t i : order) {
      sorted.files.push_back(g.files[i]);
      sorted.variants.push_back(g.variants[i]);
    }
    g = std::move(sorted);
    const auto buggy = std::count_if(g.variants.begin(), g.variants.end(), isBuggy);
    if (buggy == 0 || buggy == static_cast<long>(g.variants.size()))
      fatal("{}: published scenario '{}' needs a variant with expect.verdict = \"violation\" "
            "and one with \"verified\"",
            g.files.front(), name);
    out.push_back(std::move(g));
  }
  return out;
}

const PublishedScenario &findPublished(const std::vector<PublishedScenario> &all,
                                       const std::string &name) {
  for (const PublishedScenario &p : all)
    if (p.name == name)
      return p;
  std::string known;
  for (const PublishedScenario &p : all)
    known += (known.empty() ? "" : ", ") + p.name;
  fatal("repro: unknown published scenario '{}' (known: {})", name, known);
}

ReproOutcome reproduceVariant(const std::string &file, const Scenario &scenario,
                              const HarnessEnv &env, double firstLimit) {
  ReproOutcome o;
  o.file = file;
  o.scenario = scenario;
  const auto start = std::chrono::steady_clock::now();
  auto harness = makeHarness(scenario, env);
  o.report = check(*harness, exploreOptionsFor(scenario));
  o.seconds = secondsSince(start);
  if (isBuggy(scenario))
    o.matches = o.report.verdict == Verdict::Violation && o.report.minimised &&
                o.report.minimised->violation.oracle == scenario.expectOracle;
  else
    o.matches = o.report.verdict == Verdict::Verified || o.report.verdict == Verdict::NoViolation;
  if (firstLimit > 0 && isBuggy(scenario))
    for (const char *explorer : {"exhaustive", "pct", "random"})
      o.firsts.push_back(timeFirst(scenario, env, explorer, firstLimit));
  return o;
}

std::string publishedOutcome(const Scenario &s) {
  return isBuggy(s) ? "violation " + s.expectOracle : s.expectVerdict;
}

std::string reproducedOutcome(const ReproOutcome &o) {
  std::string word(verdictWord(o.report.verdict));
  if (o.report.minimised)
    return word + " " + o.report.minimised->violation.oracle;
  if (o.report.verdict == Verdict::NoViolation)
    return word + " (not a proof)";
  return word;
}

std::string formatRepro(const PublishedScenario &p, const std::vector<ReproOutcome> &outcomes) {
  const Scenario &first = p.variants.front();
  std::string out = fmt::format("{} (papers/{}.md): {}\n", p.name, p.name, first.source);
  for (const ReproOutcome &o : outcomes) {
    const Scenario &s = o.scenario;
    out += fmt::format("  {:<38} {:<5} published {:<22} reproduced {:<28} {}  [{}]\n", s.name,
                       isBuggy(s) ? "buggy" : "fixed", publishedOutcome(s), reproducedOutcome(o),
                       o.matches ? "matches" : "DIFFERS",
                       s.fidelity.empty() ? "fidelity not stated" : s.fidelity);
    if (o.report.minimised)
      out += fmt::format("    counterexample: {}, {} preemption(s); {:.2f} s\n", cexLength(o),
                         o.report.minimised->preemptions, o.seconds);
    else
      out += fmt::format("    {}; {:.2f} s\n", o.report.coverage, o.seconds);
    if (!o.report.models.empty())
      out += fmt::format("    models: {}\n", o.report.models);
    out += fmt::format("    linux: {}\n", describeScenarioProfile(s));
    if (!o.firsts.empty()) {
      std::string line;
      for (const FirstCounterexample &f : o.firsts)
        line += fmt::format("{}{} {}", line.empty() ? "" : ", ", f.explorer, firstText(f));
      out += fmt::format("    first counterexample: {}\n", line);
    }
  }
  return out;
}

std::string reproMarkdown(const std::vector<PublishedScenario> &all,
                          const std::vector<std::vector<ReproOutcome>> &outcomes) {
  std::string out = "| published | variant | linux | fidelity | published outcome | reproduced | "
                    "counterexample | first cex: exhaustive | pct | random |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < all.size() && i < outcomes.size(); ++i)
    for (const ReproOutcome &o : outcomes[i]) {
      std::string firsts[3] = {"-", "-", "-"};
      for (std::size_t k = 0; k < o.firsts.size() && k < 3; ++k)
        firsts[k] = firstText(o.firsts[k]);
      out +=
          fmt::format("| [{}]({}.md) | `{}` | {} | {} | {} | {}{} | {} | {} | {} | {} |\n",
                      all[i].name, all[i].name, o.scenario.name, scenarioLinuxLabel(o.scenario),
                      o.scenario.fidelity.empty() ? "not stated" : o.scenario.fidelity,
                      publishedOutcome(o.scenario), reproducedOutcome(o),
                      o.matches ? "" : " (DIFFERS)", cexLength(o), firsts[0], firsts[1], firsts[2]);
    }
  return out;
}

} // namespace ftsim::verify
