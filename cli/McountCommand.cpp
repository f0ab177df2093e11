// ftsim mcount FILE.o...: the __mcount_loc table our recordmcount would emit, in the slides'
// form, one line per site (`&schedule + 0x4`); for a -fpatchable-function-entry object, its
// __patchable_function_entries (the table such kernels boot from).

#include "Commands.h"

#include "ftsim/arch/RecordMcount.h"

#include <fmt/format.h>

#include <memory>

namespace ftsim::cli {

void addMcountCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "mcount", "List the mcount/fentry call sites of relocatable objects, as recordmcount "
                "finds them in the relocation tables");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "Relocatable ELF objects (x86-64, ppc32, ppc64)")->required();
  cmd->callback([files, &result] {
    for (const auto &file : *files) {
      const auto sites = arch::listMcountSites(file);
      if (files->size() > 1)
        fmt::print("{}:\n", file);
      fmt::print("{}", arch::formatMcountTable(sites));
      if (sites.empty())
        fmt::print(stderr,
                   "ftsim: {}: no profiling call sites (no call to mcount/__fentry__/_mcount, no "
                   "__mcount_loc, no __patchable_function_entries): built without -pg?\n",
                   file);
    }
    result.exitCode = 0;
  });
}

} // namespace ftsim::cli
