// ftsim repro: reproduce the published scenarios (verify/repro/Repro.h) — each variant checked with
// its file's own exploration, compared with the published outcome. Exit 0 when every variant run
// matches, 1 when one differs, 2 on bad input. --svg FILE (one NAME) draws the counterexample of
// its first variant that shows a violation (Svg.h).

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Svg.h"
#include "ftsim/verify/repro/Repro.h"

#include <fmt/format.h>

#include <cstdio>

namespace ftsim::cli {
namespace {

struct ReproFlags {
  std::vector<std::string> names;
  bool list = false;
  bool all = false;
  bool markdown = false;
  bool firsts = false;
  double firstLimit = 10;
  bool quiet = false;
  bool progress = false;
  std::string dir;
  std::string svg;
};

// --svg: the first variant (in file order) with a counterexample, drawn; the others that have one
// are named.
void writeSvg(const std::string &path, const std::vector<verify::ReproOutcome> &group) {
  std::vector<const verify::ReproOutcome *> violating;
  for (const verify::ReproOutcome &o : group)
    if (o.report.minimised)
      violating.push_back(&o);
  if (violating.empty()) {
    std::fprintf(stderr, "ftsim: --svg %s: no variant has a counterexample, nothing written\n",
                 path.c_str());
    return;
  }
  const verify::ReproOutcome &first = *violating.front();
  auto harness = verify::makeHarness(first.scenario, harnessEnv());
  writeTextFile(path, verify::counterexampleSvg(*harness, *first.report.minimised, first.file));
  fmt::print("svg: {} (the counterexample of {})\n", path, first.scenario.name);
  for (std::size_t i = 1; i < violating.size(); ++i)
    fmt::print("svg: {} also has a counterexample, not drawn (ftsim check --scenario {} --svg "
               "FILE draws it)\n",
               violating[i]->scenario.name, violating[i]->file);
}

void run(const ReproFlags &f, CommandResult &result) {
  const auto published = verify::publishedScenarios(f.dir.empty() ? scenarioDir() : f.dir);
  if (f.list + f.all + !f.names.empty() != 1)
    fatal("repro: give one of --list, --all or NAME... (try ftsim repro --list)");
  if (f.list) {
    for (const verify::PublishedScenario &p : published)
      fmt::print("{:<26} {} variants  {}\n", p.name, p.variants.size(), p.variants.front().source);
    return;
  }
  std::vector<const verify::PublishedScenario *> chosen;
  if (f.all)
    for (const verify::PublishedScenario &p : published)
      chosen.push_back(&p);
  for (const std::string &name : f.names)
    chosen.push_back(&verify::findPublished(published, name));
  if (!f.svg.empty()) {
    if (f.names.size() != 1)
      fatal("--svg {}: give exactly one NAME (the picture of one counterexample)", f.svg);
    checkWritable(f.svg, "--svg");
  }
  if (!(f.firstLimit > 0 && f.firstLimit <= 86400))
    fatal("--first-limit {}: give seconds between 0 and 86400", f.firstLimit);
  const double firstLimit = f.firsts || f.markdown ? f.firstLimit : 0;
  std::vector<verify::PublishedScenario> shown;
  std::vector<std::vector<verify::ReproOutcome>> outcomes;
  unsigned variants = 0, matching = 0;
  if (f.progress && f.quiet)
    fatal("--progress and --quiet: choose one");
  Progress progress("repro", "variants", progressMode(f.progress, f.quiet));
  std::uint64_t total = 0;
  for (const verify::PublishedScenario *p : chosen)
    total += p->variants.size();
  for (const verify::PublishedScenario *p : chosen) {
    std::vector<verify::ReproOutcome> group;
    for (std::size_t i = 0; i < p->variants.size(); ++i) {
      progress.update(variants, total, std::nullopt, p->variants[i].name);
      group.push_back(
          verify::reproduceVariant(p->files[i], p->variants[i], harnessEnv(), firstLimit));
      ++variants;
      matching += group.back().matches;
    }
    progress.update(variants, total);
    progress.clear();
    if (!f.markdown)
      fmt::print("{}", verify::formatRepro(*p, group));
    shown.push_back(*p);
    outcomes.push_back(std::move(group));
  }
  progress.finish();
  if (!f.svg.empty())
    writeSvg(f.svg, outcomes.front());
  if (f.markdown)
    fmt::print("{}", verify::reproMarkdown(shown, outcomes));
  else
    fmt::print("{} of {} variants match the published outcome\n", matching, variants);
  result.exitCode = matching == variants ? 0 : 1;
}

} // namespace

void addReproCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "repro", "Reproduce published scenarios (buggy and fixed variants) and compare with the "
               "published outcome; exit 0 when all match, 1 when one differs");
  auto f = std::make_shared<ReproFlags>();
  cmd->add_option("names", f->names, "published scenarios (ftsim repro --list)");
  cmd->add_flag("--list", f->list, "the published scenarios and their variants");
  cmd->add_flag("--all", f->all, "every published scenario");
  cmd->add_flag("--first-times", f->firsts,
                "also time each buggy variant's first counterexample under exhaustive, pct and "
                "random search");
  cmd->add_option("--first-limit", f->firstLimit,
                  "seconds each first-counterexample search may take (default 10)");
  cmd->add_flag("--markdown", f->markdown,
                "print one Markdown table (papers/README.md's index of reproductions), with the "
                "first-counterexample times");
  cmd->add_option("--dir", f->dir,
                  "a directory of scenario files to group instead of the shipped ones");
  cmd->add_option("--svg", f->svg,
                  "with one NAME: draw the counterexample of its first variant (in file order) "
                  "that has one as an SVG picture; other violating variants are named");
  cmd->add_flag("--quiet", f->quiet, "no progress on stderr (shown only on a terminal)");
  addProgressFlag(cmd, f->progress);
  cmd->callback([f, &result] { run(*f, result); });
}

} // namespace ftsim::cli
