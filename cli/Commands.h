#pragma once
// Each ftsim subcommand registers itself on the app and sets `exitCode` when it runs. Commands are
// thin: parse, call the libraries, print. User mistakes throw ftsim::FatalError (one line, exit 2).

#include "ftsim/arch/Progress.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::arch {
class Arch;
}

namespace ftsim::verify {
struct HarnessEnv;
class Harness;
struct ExploreOptions;
struct CheckReport;
} // namespace ftsim::verify

namespace ftsim::cli {

struct CommandResult {
  int exitCode = 0;
};

void addMcountCommand(CLI::App &app, CommandResult &result);
void addProtocolsCommand(CLI::App &app, CommandResult &result);
void addProveCommand(CLI::App &app, CommandResult &result);
void addCheckCommand(CLI::App &app, CommandResult &result);
void addReplayCommand(CLI::App &app, CommandResult &result);
void addMutantsCommand(CLI::App &app, CommandResult &result);
void addBootCommand(CLI::App &app, CommandResult &result);
void addDemoCommand(CLI::App &app, CommandResult &result);
void addFlagsCommand(CLI::App &app, CommandResult &result);
void addTraceCommand(CLI::App &app, CommandResult &result);
void addFuzzCommand(CLI::App &app, CommandResult &result);
void addReproCommand(CLI::App &app, CommandResult &result);
void addMergeCommand(CLI::App &app, CommandResult &result);
void addConformanceCommand(CLI::App &app, CommandResult &result);

// How `check` and `merge` print a check report: the counterexample's replay file (--cex, or a
// fresh ftsim-cex.json), Chrome trace and SVG picture, then the report as text or JSON; sets the
// exit status.
struct ReportFlags {
  std::string cex, chrome, svg;
  bool json = false;
  bool quiet = false; // no progress line was shown (none to end)
};
void printCheck(verify::Harness &harness, const verify::ExploreOptions &options,
                const verify::CheckReport &report, const ReportFlags &flags, CommandResult &result);

// An option that sets `into` only when given (so "not given" and any value stay apart).
template <typename T>
void optionalFlag(CLI::App *cmd, const char *name, std::optional<T> &into, const char *help) {
  cmd->add_option_function<T>(
      name, [&into](const T &v) { into = v; }, help);
}

// Whether progress lines go to stderr: only to a terminal, and never with --quiet.
bool showProgress(bool quiet);
// How a command reports progress on stderr (verify/Progress.h): on a terminal a line rewritten in
// place; into a file or pipe only with --progress (`forced`), a line per report; never with
// --quiet.
ProgressMode progressMode(bool forced, bool quiet = false);
// The --progress flag, worded the same for every command.
void addProgressFlag(CLI::App *cmd, bool &forced);

// The directory holding the built-in guest images (<flavour>/kernel.elf): $FTSIM_GUEST_DIR;
// else, for the ftsim of a build tree, that tree's corpora/ output; else (an installed ftsim)
// ../share/ftsim/guest relative to the executable.
std::string guestDir();

// Points the Linux library at an installed ftsim's linux/ scripts (<datadir>/ftsim/linux); the
// ftsim of a build tree keeps the source tree's.
void useInstalledLinuxScripts();
// The scenarios shipped with ftsim: corpora/scenarios of the source tree for the ftsim of a build
// tree, ../share/ftsim/scenarios relative to an installed executable.
std::string scenarioDir();
// Resolves --scenario: a path as given; a bare NAME or NAME.toml that is not a file here names a
// scenario in scenarioDir().
std::string resolveScenarioPath(const std::string &file);
// Resolves --image: a built-in flavour name (the registry's Arch::guestFlavours: x86_64-fentry,
// x86_64-mcount, ppc32-mcount, ppc32-pfe) or a path to a linked ELF image. Empty `image` selects
// the architecture's default flavour. `scenario`: the name of the scenario whose code.image and
// arch these are (errors then name its keys, not --image and --arch); empty for the flags.
std::string resolveImagePath(const std::string &arch, const std::string &image,
                             const std::string &scenario = {});
// What a harness needs from the command line's environment: the scenario's guest image, resolved
// as above.
verify::HarnessEnv harnessEnv();
// Refuses, before any work, an output path that could not be written: FatalError naming the flag
// and the path when it is a directory or another non-regular file, is not writable, or lies in a
// missing or unwritable directory.
void checkWritable(const std::string &path, std::string_view flag);
// The default output file of `flag` when the user gave none: `stem`.json in the working
// directory, or `stem`-N.json for the first N that does not exist; never an existing file.
std::string freshOutputPath(const std::string &stem, std::string_view flag);
// Writes `text` to `path` (truncating); FatalError naming the path when it cannot.
void writeTextFile(const std::string &path, const std::string &text);

// The registry's executable ISAs, for --arch choices ("x86_64", "ppc32"), and the default ISA.
std::vector<std::string> executableArchNames();
std::string defaultArchName();
// The executable ISA `name`; FatalError naming the known ones otherwise.
const arch::Arch &executableArch(const std::string &name);

} // namespace ftsim::cli
