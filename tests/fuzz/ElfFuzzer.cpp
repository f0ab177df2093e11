// ftsim_fuzz_elf: the relocatable-ELF reader (arch/common/ElfRelocatable.cpp) and recordmcount's
// readers of it, as `ftsim mcount FILE.o` runs them: the call sites in the relocations and the
// table already recorded (__mcount_loc, __patchable_function_entries).

#include "FuzzSupport.h"

#include "ftsim/arch/RecordMcount.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static ftsim::fuzz::InputFile file("object.o");
  const std::string &path = file.assign(data, size);
  using namespace ftsim::arch;
  // listMcountSites() is findMcountSites(), then readMcountLoc() when there are no call sites.
  ftsim::fuzz::accepts([&] { (void)formatMcountTable(findMcountSites(path)); });
  ftsim::fuzz::accepts([&] { (void)formatMcountTable(readMcountLoc(path)); });
  return 0;
}
