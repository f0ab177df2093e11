// ftsim: verify live kernel code patching (ftrace) on a simulated multi-core machine.

#include "Commands.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

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
  // CLI11 2.1 reads an integer with strtoull or strtoll in base 0: "-3" wraps to 2^64-3 in an
  // unsigned option, "010" is octal 8 and "0x10" hex 16, and a number beyond 64 bits saturates,
  // all without a word. Every integer option of every command takes plain decimal instead (a
  // narrower option's own range CLI11 checks itself).
  const auto integerValue = [](bool isSigned) {
    return CLI::Validator(
        [isSigned](std::string &value) -> std::string {
          const bool negative = !value.empty() && value.front() == '-';
          if (negative && !isSigned)
            return "'" + value + "' is negative; expected a non-negative integer";
          const std::string digits = value.substr(negative ? 1 : 0);
          if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
            return "'" + value + "' is not a decimal integer";
          if (digits.size() > 1 && digits.front() == '0')
            return "'" + value + "' starts with 0, which would read as octal; write it without";
          errno = 0;
          if (isSigned)
            (void)std::strtoll(value.c_str(), nullptr, 10);
          else
            (void)std::strtoull(value.c_str(), nullptr, 10);
          if (errno == ERANGE)
            return "'" + value + "' is out of range (64 bits)";
          return {};
        },
        "", isSigned ? "decimal" : "unsigned decimal");
  };
  // And a number of seconds is finite: CLI11's range check lets NaN through (every comparison with
  // it is false), and `fuzz --seconds nan` ran until it found something.
  const CLI::Validator finiteValue(
      [](std::string &value) -> std::string {
        return std::isfinite(std::strtod(value.c_str(), nullptr))
                   ? std::string()
                   : "'" + value + "' is not a finite number";
      },
      "", "finite");
  for (CLI::App *sub : app.get_subcommands({}))
    for (CLI::Option *option : sub->get_options()) {
      const std::string type = option->get_type_name();
      if (type.starts_with("UINT"))
        option->check(integerValue(false));
      else if (type.starts_with("INT"))
        option->check(integerValue(true));
      else if (type.starts_with("FLOAT"))
        option->check(finiteValue);
    }
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
