// ftsim replay FILE: reproduce a counterexample byte for byte and print its timeline. Exit 0 when
// the file reproduces exactly what it records, 2 when it does not (edited, another scenario) or
// cannot be read.

#include "Commands.h"

#include "ftsim/verify/Replay.h"
#include "ftsim/verify/ScenarioInstance.h"

#include <fmt/format.h>

namespace ftsim::cli {

void addReplayCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "replay", "Reproduce a counterexample file byte for byte and print its timeline");
  auto path = std::make_shared<std::string>();
  cmd->add_option("FILE", *path, "a replay file written by ftsim check")->required();
  cmd->callback([path, &result] {
    verify::ReplayFile file = verify::loadReplayFile(*path);
    verify::ScenarioInstance instance(file.scenario);
    verify::Reproduction r = verify::reproduce(instance, file, *path);
    fmt::print("replay {}: {}\n", *path, file.scenario.describe());
    fmt::print("{} decisions, {} preemption{}, {} events\n", file.counterexample.choices.size(),
               r.execution.preemptions, r.execution.preemptions == 1 ? "" : "s",
               r.execution.events);
    fmt::print("timeline:\n{}", r.timeline);
    fmt::print("{}", verify::formatViolation(r.execution.violations.front()));
    fmt::print("reproduced: event log hash {:#018x} matches\n", r.execution.logHash);
    result.exitCode = 0;
  });
}

} // namespace ftsim::cli
