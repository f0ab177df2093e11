#pragma once
// recordmcount: the table of profiling call sites of a relocatable object (Linux
// scripts/recordmcount.c). Built guest objects get a `__mcount_loc` section that the linker script
// gathers between __start_mcount_loc and __stop_mcount_loc; boot reads it to build dyn_ftrace
// records. Callers: the build-time tool `ftsim-recordmcount` (corpora/), `ftsim mcount`, tests.
//
// Every function here takes an ELF ET_REL file of a registered ISA (x86_64, ppc32, ppc64) and
// throws FatalError with one line naming the file and the problem for anything else: not ELF,
// truncated, section table past the end, wrong class for the machine, unsupported machine, not
// ET_REL, inconsistent tables.

#include <cstdint>
#include <string>
#include <vector>

namespace ftsim::arch {

// One profiling call site (or, for -fpatchable-function-entry objects, one patchable entry).
struct McountSite {
  std::string section;              // section holding the site: ".text", ".init.text", ...
  std::uint64_t offset = 0;         // first byte of the call instruction within `section`
  std::string function;             // containing function symbol (the section name if none)
  std::uint64_t functionOffset = 0; // offset of the site from `function`'s start
  // How the site is (or would be) recorded: the relocation's symbol and addend. For a section
  // symbol, baseSymbol is the section's name.
  std::string baseSymbol;
  std::int64_t addend = 0;

  friend bool operator==(const McountSite &, const McountSite &) = default;
};

// The sites found in the relocations: every relocation of a mcount-call type (Arch::
// isMcountCallReloc) against a profiling hook (Arch::isMcountSymbol) in a relocation section whose
// target is executable (SHF_EXECINSTR), whatever its name (.text, .init.text, .text.unlikely,
// .text.*) and whatever the binding of the containing function (global, static, weak). Sorted by
// section index, then offset. baseSymbol/addend are what recordMcount would write.
std::vector<McountSite> findMcountSites(const std::string &objectPath);

// The table already recorded in the object: every `__mcount_loc` section (gcc -mrecord-mcount, or
// recordMcount) and every `__patchable_function_entries` section (gcc
// -fpatchable-function-entry), each entry resolved through its relocation. In table order. Empty
// when the object has neither.
std::vector<McountSite> readMcountLoc(const std::string &objectPath);

// findMcountSites, or readMcountLoc when the object has no profiling calls (e.g. a
// -fpatchable-function-entry object): what `ftsim mcount` lists.
std::vector<McountSite> listMcountSites(const std::string &objectPath);

enum class RecordOutcome {
  Added,           // outPath has a new __mcount_loc and its relocation section
  AlreadyRecorded, // the input has __mcount_loc already: outPath is an exact copy
  NoSites,         // the input calls no profiling hook: outPath is an exact copy
};

// Writes to outPath a copy of inPath with a `__mcount_loc` section (SHF_ALLOC, word-aligned, one
// word per site) and its relocation section (`.rela__mcount_loc`, one absolute word relocation per
// site), as recordmcount.c's append_func() does. Each entry is based on a symbol the linker cannot
// redirect: the site's section symbol or a local symbol in that section, never a weak or global
// one; a section symbol is added when the section has none. Deterministic: the same input gives
// the same output bytes, and recording an output again gives it back unchanged. The output is
// written to a temporary file and renamed, so a failure never leaves a partial outPath.
RecordOutcome recordMcount(const std::string &inPath, const std::string &outPath);

// The slides' form, one line per site: "&schedule + 0x4".
std::string formatMcountTable(const std::vector<McountSite> &sites);

} // namespace ftsim::arch
