// ftsim-recordmcount: the build-time tool that adds __mcount_loc to guest objects (corpora/), like
// the kernel's scripts/recordmcount. Thin: parses arguments, calls ftsim::arch, prints.
//
//   ftsim-recordmcount IN.o OUT.o      write OUT.o = IN.o plus __mcount_loc
//   ftsim-recordmcount --list IN.o...  print each object's sites in the slides' form
//
// Exit status: 0 on success, 2 on bad input or usage (one line on stderr).

#include "ftsim/arch/Error.h"
#include "ftsim/arch/RecordMcount.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage = "usage: ftsim-recordmcount IN.o OUT.o\n"
                               "       ftsim-recordmcount --list IN.o...\n";

int run(const std::vector<std::string> &args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.empty() && args[0] == "--list") {
    if (args.size() < 2)
      throw ftsim::FatalError("--list needs at least one object");
    for (std::size_t i = 1; i < args.size(); ++i) {
      const auto table = ftsim::arch::formatMcountTable(ftsim::arch::listMcountSites(args[i]));
      std::printf("%s:\n%s", args[i].c_str(), table.c_str());
    }
    return 0;
  }
  if (args.size() != 2)
    throw ftsim::FatalError("expected IN.o OUT.o (or --list IN.o...)");
  switch (ftsim::arch::recordMcount(args[0], args[1])) {
  case ftsim::arch::RecordOutcome::Added:
    break;
  case ftsim::arch::RecordOutcome::AlreadyRecorded:
    std::fprintf(stderr, "ftsim-recordmcount: %s: __mcount_loc already exists, copied unchanged\n",
                 args[0].c_str());
    break;
  case ftsim::arch::RecordOutcome::NoSites:
    break;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const ftsim::FatalError &e) {
    std::fprintf(stderr, "ftsim-recordmcount: %s\n", e.what());
    if (argc < 2)
      std::fputs(kUsage, stderr);
    return 2;
  }
}
