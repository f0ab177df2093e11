// ftsim fuzz: random engine operation sequences under random schedules and memory models, every
// oracle on (verify/Fuzz.h). Exit 0 when no violation is found, 1 with the shrunk failure saved as
// a replay file, 2 on bad input. Deterministic with --runs R; with only --seconds N the number of
// runs done depends on the machine and is printed, so the run can be repeated with --runs.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Fuzz.h"
#include "ftsim/verify/check/Verdict.h"
#include "ftsim/verify/replay/Replay.h"

#include <fmt/format.h>

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
    std::string linuxProfile;
    unsigned maxSteps = 6;
    bool json = false;
    bool quiet = false;
    bool progress = false;
  };
  auto o = std::make_shared<Options>();
  auto *seconds = cmd->add_option("--seconds", o->seconds, "time budget, 0.1-86400 (default 10)")
                      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--seed", o->seed, "seed of the generated sequences and schedules");
  cmd->add_option("--runs", o->runs,
                  "exactly this many runs, 1-1000000000 (the deterministic mode)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1000000000}))
      ->excludes(seconds);
  cmd->add_option("--arch", o->arch, fmt::format("{}", fmt::join(executableArchNames(), " or ")));
  cmd->add_option("--image", o->image, "guest image (flavour or path)");
  cmd->add_option("--max-steps", o->maxSteps, "engine operations per sequence (1-20)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--protocol", o->protocol,
                  "patch protocol of every run (default: the ISA's correct one; a broken one, "
                  "e.g. direct, exercises the failure path)");
  cmd->add_option("--linux", o->linuxProfile,
                  "a Linux profile (ftsim protocols): its protocol and update order in every run");
  cmd->add_option(
      "--cex", o->cex,
      "where to write the replay file (default: ftsim-fuzz.json in the working directory, or "
      "ftsim-fuzz-N.json if that exists; never an existing file)");
  cmd->add_flag("--json", o->json, "machine-readable result on stdout (no times)");
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr (shown only on a terminal)");
  addProgressFlag(cmd, o->progress);
  cmd->callback([o, &result] {
    executableArch(o->arch);
    if (!o->cex.empty())
      checkWritable(o->cex, "--cex");
    verify::FuzzOptions f;
    f.arch = o->arch;
    f.image = o->image;
    f.imagePath = resolveImagePath(o->arch, o->image);
    f.seed = o->seed;
    f.runs = o->runs;
    f.seconds = o->seconds;
    f.maxSteps = o->maxSteps;
    f.protocol = o->protocol;
    f.linuxProfile = o->linuxProfile;
    if (o->progress && o->quiet)
      fatal("--progress and --quiet: choose one");
    Progress progress("fuzz", "runs", progressMode(o->progress, o->quiet));
    const auto started = std::chrono::steady_clock::now();
    if (progress.enabled())
      f.progress = [&](std::uint64_t runs, std::uint64_t events) {
        // --runs R: runs of R; else the time budget says what remains.
        const double spent =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        progress.update(runs, f.runs,
                        f.runs ? std::nullopt : std::optional<double>(f.seconds - spent),
                        fmt::format("{} events", events));
      };
    const verify::FuzzResult r = verify::fuzz(f);
    progress.finish();
    std::string path;
    if (r.failing) {
      path = o->cex.empty() ? freshOutputPath("ftsim-fuzz", "--cex") : o->cex;
      verify::writeReplayFile(path, *r.failing, *r.cex);
    }
    fmt::print("{}", o->json ? verify::fuzzJson(f, r, path) : verify::formatFuzz(f, r, path));
    result.exitCode =
        verify::exitStatus(r.failing ? verify::Verdict::Violation : verify::Verdict::NoViolation);
  });
}

} // namespace ftsim::cli
