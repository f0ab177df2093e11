// ftsim_fuzz_recordmcount: recordmcount's writer (arch/common/RecordMcount.cpp) as the build-time
// tool ftsim-recordmcount runs it. Whatever it writes must read back: the output's call sites are
// the input's, and its __mcount_loc table lists exactly them.

#include "FuzzSupport.h"

#include "ftsim/arch/RecordMcount.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace {

using namespace ftsim::arch;

std::string outputPath() {
  std::string dir = (std::filesystem::temp_directory_path() / "ftsim-fuzz-XXXXXX").string();
  if (!::mkdtemp(dir.data()))
    ftsim::fuzz::finding("mkdtemp failed");
  static const std::string kept = dir;
  std::atexit([] { std::filesystem::remove_all(kept); });
  return dir + "/out.o";
}

bool sameSites(const std::vector<McountSite> &a, const std::vector<McountSite> &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].section != b[i].section || a[i].offset != b[i].offset)
      return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static ftsim::fuzz::InputFile file("input.o");
  static const std::string out = outputPath();
  const std::string &in = file.assign(data, size);
  RecordOutcome outcome{};
  if (!ftsim::fuzz::accepts([&] { outcome = recordMcount(in, out); }))
    return 0;
  if (outcome != RecordOutcome::Added)
    return 0;
  // The input was read whole by recordMcount: these do not throw on it.
  const std::vector<McountSite> sites = findMcountSites(in);
  std::vector<McountSite> again, table;
  if (!ftsim::fuzz::accepts([&] {
        again = findMcountSites(out);
        table = readMcountLoc(out);
      }))
    ftsim::fuzz::finding("recordmcount wrote an object its own reader rejects");
  if (again != sites)
    ftsim::fuzz::finding("the written object's call sites differ from the input's");
  if (!sameSites(table, sites))
    ftsim::fuzz::finding("the written __mcount_loc does not list the call sites");
  return 0;
}
