// ftsim replay FILE: reproduce a counterexample byte for byte and print its timeline, for every
// kind of scenario (the file embeds it). Exit 1 (VIOLATION) when the file reproduces exactly what
// it records — the violation is there again — and 2 when it does not (edited, another scenario
// or build) or cannot be read. --chrome OUT.json writes the execution as Chrome trace-event JSON
// (Perfetto); --svg OUT.svg draws it (Svg.h).

#include "Commands.h"

#include "ftsim/verify/check/Verdict.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/replay/Svg.h"
#include "ftsim/verify/replay/Timeline.h"

#include <fmt/format.h>

namespace ftsim::cli {

void addReplayCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "replay", "Reproduce a counterexample file byte for byte and print its timeline; exit 1 "
                "when the recorded violation reproduces, 2 when it does not");
  auto path = std::make_shared<std::string>();
  auto chrome = std::make_shared<std::string>();
  auto svg = std::make_shared<std::string>();
  auto full = std::make_shared<bool>(false);
  cmd->add_option("FILE", *path, "a replay file written by ftsim check or ftsim fuzz")->required();
  cmd->add_option("--chrome", *chrome, "also write the execution as Chrome trace-event JSON");
  cmd->add_option("--svg", *svg,
                  "also draw the execution as an SVG picture: CPUs as lanes over the violation's "
                  "trail, each CPU's view of the patched sites, the violation decoded");
  cmd->add_flag("--full-timeline", *full,
                "every event of the execution, not only those that led to the violation");
  cmd->callback([path, chrome, svg, full, &result] {
    if (!chrome->empty())
      checkWritable(*chrome, "--chrome");
    if (!svg->empty())
      checkWritable(*svg, "--svg");
    const verify::ReplayFile file = verify::loadReplayFile(*path);
    auto harness = verify::makeHarness(file.scenario, harnessEnv());
    const verify::Reproduction r = verify::reproduce(*harness, file, *path, *full);
    fmt::print("replay {}: {}\n", *path, file.scenario.describe());
    fmt::print("{} decisions, {} preemption{}, {} events\n", file.counterexample.choices.size(),
               r.execution.preemptions, r.execution.preemptions == 1 ? "" : "s",
               r.execution.events);
    fmt::print("timeline:\n{}", r.timeline);
    fmt::print("{}", verify::formatViolation(r.violation, false));
    fmt::print("reproduced: event log hash {:#018x} matches\n", r.execution.logHash);
    if (!chrome->empty()) {
      writeTextFile(*chrome, verify::chromeTrace(*harness, r.execution.violations));
      fmt::print("chrome trace: {}\n", *chrome);
    }
    if (!svg->empty()) {
      writeTextFile(*svg, verify::counterexampleSvg(*harness, file.counterexample, *path));
      fmt::print("svg: {}\n", *svg);
    }
    result.exitCode = verify::exitStatus(verify::Verdict::Violation);
  });
}

} // namespace ftsim::cli
