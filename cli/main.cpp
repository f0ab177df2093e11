// ftsim: verify live kernel code patching (ftrace) on a simulated multi-core machine.

#include "Commands.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <cstdio>

int main(int argc, char **argv) {
  CLI::App app{"ftsim: a deterministic multi-core simulator and verification suite for live kernel "
               "code patching in the style of Linux ftrace"};
  app.name("ftsim");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(FTSIM_VERSION));
  ftsim::cli::useInstalledLinuxScripts();
  ftsim::cli::CommandResult result;
  ftsim::cli::addMcountCommand(app, result);
  ftsim::cli::addProtocolsCommand(app, result);
  ftsim::cli::addProveCommand(app, result);
  ftsim::cli::addCheckCommand(app, result);
  ftsim::cli::addReplayCommand(app, result);
  ftsim::cli::addMutantsCommand(app, result);
  ftsim::cli::addBootCommand(app, result);
  ftsim::cli::addDemoCommand(app, result);
  ftsim::cli::addFlagsCommand(app, result);
  ftsim::cli::addTraceCommand(app, result);
  ftsim::cli::addFuzzCommand(app, result);
  ftsim::cli::addReproCommand(app, result);
  ftsim::cli::addMergeCommand(app, result);
  ftsim::cli::addConformanceCommand(app, result);
  // CLI11 reads an unsigned value with strtoull, which wraps "-3" to 2^64-3: every unsigned
  // option of every command refuses a sign instead.
  const CLI::Validator unsignedValue(
      [](std::string &value) {
        return value.find('-') == std::string::npos
                   ? std::string()
                   : "'" + value + "' is negative; expected a non-negative integer";
      },
      "", "unsigned");
  for (CLI::App *sub : app.get_subcommands({}))
    for (CLI::Option *option : sub->get_options())
      if (option->get_type_name() == "UINT")
        option->check(unsignedValue);
  std::string known;
  bool isCommand = false;
  for (const CLI::App *sub : app.get_subcommands({})) {
    known += (known.empty() ? "" : ", ") + sub->get_name();
    isCommand |= argc > 1 && sub->get_name() == argv[1];
  }
  if (argc > 1 && argv[1][0] != '-' && !isCommand) {
    std::fprintf(stderr, "ftsim: unknown command '%s' (commands: %s)\n", argv[1], known.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "ftsim: %s (see ftsim --help)\n", e.what());
    return 2;
  } catch (const ftsim::FatalError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ftsim: %s\n", e.what());
    return 2;
  }
  return result.exitCode;
}
