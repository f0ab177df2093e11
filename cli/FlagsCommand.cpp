// ftsim flags VALUE...: decode dyn_ftrace.flags words in the current kernel's layout and in the
// Rostedt's slides' 3.x layout, side by side.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/model/RecordFlags.h"

#include <fmt/format.h>

#include <exception>
#include <memory>

namespace ftsim::cli {

void addFlagsCommand(CLI::App &app, CommandResult &result) {
  auto *cmd = app.add_subcommand(
      "flags", "Decode dyn_ftrace.flags values in the 3.x layout of the slides and today's");
  auto values = std::make_shared<std::vector<std::string>>();
  cmd->add_option("values", *values, "flags words, e.g. 0x20000001 0xa0000001 0xe0000001")
      ->required();
  cmd->callback([values, &result] {
    for (const std::string &text : *values) {
      std::size_t used = 0;
      unsigned long long v = 0;
      try {
        v = std::stoull(text, &used, 0);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used != text.size() || v > 0xffffffffull)
        fatal("flags value '{}' is not a 32-bit number", text);
      const auto flags = static_cast<std::uint32_t>(v);
      for (auto layout : {model::FlagsLayout::Legacy3x, model::FlagsLayout::Current}) {
        const model::DecodedRecordFlags d = model::decodeRecordFlags(flags, layout);
        fmt::print("{:<8} {}\n", layout == model::FlagsLayout::Legacy3x ? "3.x" : "current",
                   d.summary());
        for (const auto &note : d.notes)
          fmt::print("         note: {}\n", note);
      }
    }
    result.exitCode = 0;
  });
}

} // namespace ftsim::cli
