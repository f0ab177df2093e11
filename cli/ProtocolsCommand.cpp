// ftsim protocols [--arch A]: the patch protocols and what distinguishes each from today's.

#include "Commands.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/model/LinuxProfile.h"
#include "ftsim/verify/scenario/ProtocolFile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ftsim::cli {

void addProtocolsCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand("protocols", "List the patch protocols of each architecture");
  auto archName = std::make_shared<std::string>();
  cmd->add_option("--arch", *archName, "x86_64 or ppc32 (default: both)");
  auto fileOf = std::make_shared<std::string>();
  cmd->add_option("--file", *fileOf,
                  "print protocol NAME as a protocol file (for --protocol-file) and nothing else");
  cmd->callback([archName, fileOf, &result] {
    if (!fileOf->empty()) {
      fmt::print("{}", verify::builtinProtocolFileText(*fileOf, *archName));
      result.exitCode = 0;
      return;
    }
    std::vector<const arch::Arch *> archs;
    if (archName->empty())
      archs = arch::executableArchs();
    else
      archs.push_back(&arch::archByName(*archName));
    for (const arch::Arch *a : archs) {
      if (arch::protocolsFor(*a).empty())
        fatal("--arch {} has no patch protocols: ftsim handles {} statically (recordmcount, "
              "encodings); the protocols are those of {}",
              a->name(), a->name(), fmt::join(executableArchNames(), ", "));
    }
    // Each protocol with the Linux profiles whose protocol it is (none: a mutant, a model
    // hypothesis or a teaching strawman).
    for (const arch::Arch *a : archs)
      for (const auto &p : arch::protocolsFor(*a)) {
        std::string profiles;
        for (const model::LinuxProfile &lp : model::linuxProfiles())
          if (model::profileProtocol(lp, a->name()) == p.name)
            profiles += (profiles.empty() ? "" : ", ") + std::string(lp.name);
        fmt::print("{:<7} {:<21} [linux {}] {}\n", a->name(), p.name,
                   profiles.empty() ? "-" : profiles,
                   p.difference.empty() ? "today's protocol" : p.difference);
      }
    fmt::print("\nLinux profiles (--linux; default {}):\n", model::defaultLinuxProfile().name);
    for (const model::LinuxProfile &lp : model::linuxProfiles())
      fmt::print("  {}\n", model::describeProfile(lp));
    fmt::print("  {}\n", model::stillMixed());
    result.exitCode = 0;
  });
}

} // namespace ftsim::cli
