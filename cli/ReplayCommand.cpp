// ftsim replay FILE: reproduce a counterexample byte for byte and print its timeline. Exit 0 when
// the file reproduces exactly what it records, 2 when it does not (edited, another scenario) or
// cannot be read. Engine-level scenarios (code kind kernel, written by ftsim check --scenario and
// ftsim fuzz) boot the guest image the scenario names. --chrome OUT.json writes the execution as
// Chrome trace-event JSON (Perfetto).

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/Replay.h"
#include "ftsim/verify/ScenarioInstance.h"
#include "ftsim/verify/ScenarioKernel.h"

#include <fmt/format.h>

#include <fstream>

namespace ftsim::cli {
namespace {
void writeChrome(const std::string &path, const std::string &json) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json;
  if (!out)
    fatal("{}: cannot write", path);
}
} // namespace

void addReplayCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "replay", "Reproduce a counterexample file byte for byte and print its timeline");
  auto path = std::make_shared<std::string>();
  auto chrome = std::make_shared<std::string>();
  cmd->add_option("FILE", *path, "a replay file written by ftsim check or ftsim fuzz")->required();
  cmd->add_option("--chrome", *chrome, "also write the execution as Chrome trace-event JSON");
  cmd->callback([path, chrome, &result] {
    verify::ReplayFile file = verify::loadReplayFile(*path);
    if (file.scenario.code == verify::CodeKind::Kernel) {
      verify::KernelScenarioRunner runner(
          file.scenario, resolveImagePath(file.scenario.arch, file.scenario.image));
      verify::KernelReproduction r = verify::reproduceKernel(runner, file, *path, !chrome->empty());
      fmt::print("replay {}: {}\n", *path, file.scenario.describe());
      fmt::print("{} decisions, {} preemption{}, {} events\n", r.execution.choices.size(),
                 r.execution.preemptions, r.execution.preemptions == 1 ? "" : "s",
                 r.execution.events);
      fmt::print("timeline:\n{}", r.timeline);
      fmt::print("{}", verify::formatViolation(r.violation));
      fmt::print("reproduced: event log hash {:#018x} matches\n", r.execution.logHash);
      if (!chrome->empty()) {
        writeChrome(*chrome, r.chrome);
        fmt::print("chrome trace: {}\n", *chrome);
      }
      result.exitCode = 0;
      return;
    }
    verify::ScenarioInstance instance(file.scenario);
    verify::Reproduction r = verify::reproduce(instance, file, *path);
    fmt::print("replay {}: {}\n", *path, file.scenario.describe());
    fmt::print("{} decisions, {} preemption{}, {} events\n", file.counterexample.choices.size(),
               r.execution.preemptions, r.execution.preemptions == 1 ? "" : "s",
               r.execution.events);
    fmt::print("timeline:\n{}", r.timeline);
    fmt::print("{}", verify::formatViolation(r.execution.violations.front()));
    fmt::print("reproduced: event log hash {:#018x} matches\n", r.execution.logHash);
    if (!chrome->empty()) {
      writeChrome(*chrome,
                  verify::chromeTrace(
                      instance.machine(), [&](std::uint64_t a) { return instance.siteName(a); },
                      r.execution.violations));
      fmt::print("chrome trace: {}\n", *chrome);
    }
    result.exitCode = 0;
  });
}

} // namespace ftsim::cli
