// ftsim fuzz: random engine operation sequences under random schedules and memory models, every
// oracle on (verify/Fuzz.h). Exit 0 when no violation is found, 1 with the shrunk failure saved as
// a replay file, 2 on bad input. Deterministic with --runs R; with only --seconds N the number of
// runs done depends on the machine and is printed, so the run can be repeated with --runs.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/Fuzz.h"
#include "ftsim/verify/Verdict.h"
#include "ftsim/verify/Replay.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace ftsim::cli {

void addFuzzCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "fuzz", "Fuzz engine operation sequences (ops, filters, tracers) on the running guest under "
              "random schedules; exit 0 no violation, 1 violation saved as a replay file");
  struct Options {
    double seconds = 10;
    std::uint64_t seed = 1;
    std::uint64_t runs = 0;
    std::string arch = defaultArchName();
    std::string image;
    std::string cex;
    std::string protocol;
    unsigned maxSteps = 6;
    bool json = false;
    bool quiet = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--seconds", o->seconds, "time budget (ignored with --runs)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--seed", o->seed, "seed of the generated sequences and schedules");
  cmd->add_option("--runs", o->runs, "exactly this many runs (the deterministic mode)");
  cmd->add_option("--arch", o->arch, fmt::format("{}", fmt::join(executableArchNames(), " or ")));
  cmd->add_option("--image", o->image, "guest image (flavour or path)");
  cmd->add_option("--max-steps", o->maxSteps, "engine operations per sequence (1-20)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--protocol", o->protocol,
                  "patch protocol of every run (default: the ISA's correct one; a broken one, "
                  "e.g. direct, exercises the failure path)");
  cmd->add_option("--cex", o->cex, "where to write the replay file (default ./ftsim-fuzz.json)");
  cmd->add_flag("--json", o->json, "machine-readable result on stdout (no times)");
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr");
  cmd->callback([o, &result] {
    executableArch(o->arch);
    verify::FuzzOptions f;
    f.arch = o->arch;
    f.image = o->image;
    f.imagePath = resolveImagePath(o->arch, o->image);
    f.seed = o->seed;
    f.runs = o->runs;
    f.seconds = o->seconds;
    f.maxSteps = o->maxSteps;
    f.protocol = o->protocol;
    if (!o->quiet)
      f.progress = [](std::uint64_t runs, std::uint64_t events) {
        std::fprintf(stderr, "\rftsim fuzz: %llu runs, %llu events",
                     static_cast<unsigned long long>(runs),
                     static_cast<unsigned long long>(events));
        std::fflush(stderr);
      };
    const verify::FuzzResult r = verify::fuzz(f);
    if (!o->quiet)
      std::fprintf(stderr, "\n");
    nlohmann::ordered_json j;
    j["seed"] = o->seed;
    if (!o->protocol.empty())
      j["protocol"] = o->protocol;
    j["runs"] = r.runs;
    j["events"] = r.events;
    j["refused_operations"] = r.notes;
    const std::string mode =
        o->runs ? fmt::format("--runs {}", o->runs)
                : fmt::format("--seconds {} (repeat with --runs {})", o->seconds, r.runs);
    if (!r.failing) {
      j["verdict"] = std::string(verify::verdictWord(verify::Verdict::NoViolation));
      if (o->json)
        fmt::print("{}\n", j.dump(2));
      else
        fmt::print("ftsim fuzz: NO VIOLATION in {} runs (not a proof; {} events, {} operations "
                   "refused with an errno), seed {}, {}\n",
                   r.runs, r.events, r.notes, o->seed, mode);
      result.exitCode = verify::exitStatus(verify::Verdict::NoViolation);
      return;
    }
    const std::string path = o->cex.empty() ? "ftsim-fuzz.json" : o->cex;
    verify::writeReplayFile(path, *r.failing, *r.cex);
    std::string steps, original;
    for (const verify::EngineStep &st : r.failing->engine.steps)
      steps += (steps.empty() ? "" : "; ") + st.describe();
    for (const verify::EngineStep &st : r.original->engine.steps)
      original += (original.empty() ? "" : "; ") + st.describe();
    j["verdict"] = std::string(verify::verdictWord(verify::Verdict::Violation));
    j["run"] = r.runs - 1;
    j["original_steps"] = original;
    j["original_violation"] = r.originalViolation;
    j["steps"] = steps;
    j["violation"] = verify::summarizeViolation(r.cex->violation);
    j["decisions"] = r.cex->choices.size();
    j["replay"] = path;
    if (o->json)
      fmt::print("{}\n", j.dump(2));
    else {
      fmt::print("ftsim fuzz: VIOLATION in run {} of seed {} ({})\n", r.runs - 1, o->seed, mode);
      fmt::print("generated: {}\n  {}\n", original, r.originalViolation);
      fmt::print("shrunk to: {} ({})\n", steps, r.failing->describe());
      fmt::print("{}", verify::formatViolation(r.cex->violation));
      fmt::print("schedule minimised to {} decisions, {} events\n", r.cex->choices.size(),
                 r.cex->events);
      fmt::print("replay: ftsim replay {}\n", path);
    }
    result.exitCode = verify::exitStatus(verify::Verdict::Violation);
  });
}

} // namespace ftsim::cli
