// recordmcount (arch/common/RecordMcount.cpp) against independent oracles: gcc's own
// -mrecord-mcount table, binutils' relocation listing (readelf), the linker, and the linked image.
// Inputs: corpora/recordmcount/*.c built by tests/arch/CMakeLists.txt, and the guest kernel
// objects of every flavour built by corpora/CMakeLists.txt.

#include "ftsim/arch/RecordMcount.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace ftsim;
using namespace ftsim::arch;
namespace fs = std::filesystem;

namespace {

const std::string kInputs = FTSIM_RECORDMCOUNT_INPUTS;

std::string input(const std::string &name) { return kInputs + "/" + name; }

// The binutils prefix ("/usr/bin/x86_64-linux-gnu-") for an object's ISA, from its name.
std::string binutils(const std::string &object) {
  if (object.find("x86_64") != std::string::npos)
    return FTSIM_BINUTILS_X86_64;
  if (object.find("ppc64") != std::string::npos)
    return FTSIM_BINUTILS_PPC64;
  return FTSIM_BINUTILS_PPC32;
}

struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult runCommand(const std::string &command) {
  CommandResult r;
  FILE *pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return r;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    r.out.append(buffer, n);
  r.status = ::pclose(pipe);
  return r;
}

std::vector<std::uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const std::string &path, const std::vector<std::uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

using ftsim::test::TempDir;

// The guest kernel objects of one corpora flavour (paths without ".o").
std::vector<std::string> guestObjects(const std::string &flavour) {
  std::ifstream in(std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/objects.txt");
  EXPECT_TRUE(in) << "corpora flavour " << flavour << " not built";
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      out.push_back(line);
  EXPECT_FALSE(out.empty()) << flavour;
  return out;
}

// Every object whose sites are calls to a hook: ours and the guest kernel's.
std::vector<std::string> callSiteObjects() {
  std::vector<std::string> out = {input("x86_64-fentry.o"), input("x86_64-mcount.o"),
                                  input("ppc32-mcount.o"), input("ppc64-elfv2.o")};
  for (const char *flavour : {"x86_64-fentry", "x86_64-mcount", "ppc32-mcount", "ppc64-elfv2"})
    for (const auto &base : guestObjects(flavour))
      out.push_back(base + ".o");
  return out;
}

using Resolved = std::vector<std::pair<std::string, std::uint64_t>>; // (section, offset), sorted

Resolved resolved(const std::vector<McountSite> &sites) {
  Resolved out;
  for (const auto &s : sites)
    out.emplace_back(s.section, s.offset);
  std::sort(out.begin(), out.end());
  return out;
}

struct ReadelfReloc {
  std::string section; // the section the relocations apply to
  std::uint64_t offset;
  std::string type;
  std::string symbol;
  std::int64_t addend;
};

// `readelf -rW`, parsed: binutils' view of the relocations, independent of libelf.
std::vector<ReadelfReloc> readelfRelocations(const std::string &object) {
  const auto r = runCommand(binutils(object) + "readelf -rW '" + object + "'");
  EXPECT_EQ(r.status, 0) << r.out;
  std::vector<ReadelfReloc> out;
  std::istringstream in(r.out);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Relocation section '", 0) == 0) {
      section = line.substr(20, line.find('\'', 20) - 20);
      section = section.substr(section.rfind(".rela", 0) == 0 ? 5 : 4);
      continue;
    }
    std::istringstream fields(line);
    std::string offset, info, type, value, symbol, sign, addend;
    if (!(fields >> offset >> info >> type) || type.rfind("R_", 0) != 0)
      continue;
    fields >> value >> symbol >> sign >> addend;
    std::int64_t a = addend.empty() ? 0 : std::stoll(addend, nullptr, 16);
    out.push_back({section, std::stoull(offset, nullptr, 16), type, symbol, sign == "-" ? -a : a});
  }
  return out;
}

// The call sites binutils shows: hook-call relocations, minus the x86 opcode byte.
Resolved readelfCallSites(const std::string &object) {
  Resolved out;
  for (const auto &r : readelfRelocations(object)) {
    const bool hook = r.symbol == "__fentry__" || r.symbol == "mcount" || r.symbol == "_mcount";
    if (!hook)
      continue;
    if (r.type == "R_X86_64_PLT32" || r.type == "R_X86_64_PC32")
      out.emplace_back(r.section, r.offset - 1);
    else if (r.type == "R_PPC_REL24" || r.type == "R_PPC64_REL24")
      out.emplace_back(r.section, r.offset);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct ReadelfSymbol {
  std::string type, bind;
};

// `readelf -sW`: name -> every (type, binding) it has; and whether all locals come first.
std::multimap<std::string, ReadelfSymbol> readelfSymbols(const std::string &object,
                                                         bool *localsFirst = nullptr) {
  const auto r = runCommand(binutils(object) + "readelf -sW '" + object + "'");
  EXPECT_EQ(r.status, 0) << r.out;
  std::multimap<std::string, ReadelfSymbol> out;
  bool seenNonLocal = false, ordered = true;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx) || num.back() != ':' ||
        !std::isdigit(static_cast<unsigned char>(num[0])))
      continue;
    if (ndx == "[<localentry>:") // ppc64 ELFv2: "[<localentry>: 8]" before the index
      fields >> ndx >> ndx;
    fields >> name;
    ordered = ordered && !(seenNonLocal && bind == "LOCAL");
    seenNonLocal = seenNonLocal || bind != "LOCAL";
    out.insert({name, {type, bind}});
  }
  if (localsFirst)
    *localsFirst = ordered;
  return out;
}

// sites.c: each function's section, and that every kind of function is present.
const std::map<std::string, std::string> kSitesFunctions = {
    {"helper", ".text"},
    {"schedule", ".text"},
    {"arch_hook", ".text"},
    {"weak_empty", ".text"},
    {"_cond_resched", ".text"},
    {"setup_once", ".init.text"},
    {"report_bug", ".text.unlikely"},
    {"yield", ".text.sched"},
    {"weak_only", ".text.weak_only"},
    {"static_only", ".text.static_only"},
};

} // namespace

TEST(RecordMcount, FindsWhatGccRecordMcountRecordsOnX86) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {input("x86_64-fentry.o"), input("x86_64-fentry.ref.o")},
      {input("x86_64-mcount.o"), input("x86_64-mcount.ref.o")}};
  for (const char *flavour : {"x86_64-fentry", "x86_64-mcount"})
    for (const auto &base : guestObjects(flavour))
      pairs.emplace_back(base + ".o", base + ".ref.o");
  for (const auto &[object, reference] : pairs) {
    const auto ours = findMcountSites(object);
    const auto gcc = readMcountLoc(reference);
    EXPECT_FALSE(ours.empty()) << object;
    EXPECT_EQ(resolved(ours), resolved(gcc)) << object;
    EXPECT_TRUE(readMcountLoc(object).empty()) << object << " already has a table";
  }
}

TEST(RecordMcount, FindsExactlyTheHookRelocationsBinutilsLists) {
  for (const auto &object : callSiteObjects()) {
    const auto sites = findMcountSites(object);
    EXPECT_FALSE(sites.empty()) << object;
    EXPECT_EQ(resolved(sites), readelfCallSites(object)) << object;
  }
}

TEST(RecordMcount, ReadsPatchableFunctionEntriesAsBinutilsListsThem) {
  std::vector<std::string> objects = {input("ppc32-pfe.o")};
  for (const auto &base : guestObjects("ppc32-pfe"))
    objects.push_back(base + ".o");
  for (const auto &object : objects) {
    EXPECT_TRUE(findMcountSites(object).empty()) << object << ": no -pg, no hook calls";
    const auto sites = readMcountLoc(object);
    ASSERT_FALSE(sites.empty()) << object;
    EXPECT_EQ(listMcountSites(object), sites) << object;
    Resolved expected;
    for (const auto &r : readelfRelocations(object))
      if (r.section == "__patchable_function_entries") {
        EXPECT_EQ(r.type, "R_PPC_ADDR32") << object;
        expected.emplace_back(r.symbol, static_cast<std::uint64_t>(r.addend)); // section symbols
      }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(resolved(sites), expected) << object;
    // -fpatchable-function-entry=2: the two nops open every function.
    std::set<std::string> functions;
    for (const auto &[name, sym] : readelfSymbols(object))
      if (sym.type == "FUNC")
        functions.insert(name);
    std::set<std::string> recorded;
    for (const auto &s : sites) {
      EXPECT_EQ(s.functionOffset, 0u) << object << " " << s.function;
      recorded.insert(s.function);
    }
    EXPECT_EQ(recorded, functions) << object;
  }
}

TEST(RecordMcount, HandlesWeakStaticInitAndColdFunctionsOnEveryIsa) {
  for (const char *name :
       {"x86_64-fentry.o", "x86_64-mcount.o", "ppc32-mcount.o", "ppc64-elfv2.o", "ppc32-pfe.o"}) {
    std::map<std::string, std::string> found;
    for (const auto &s : listMcountSites(input(name))) {
      EXPECT_TRUE(found.emplace(s.function, s.section).second) << name << ": " << s.function;
      // The .cold fragment of _cond_resched has no profiling call of its own.
      EXPECT_EQ(s.function.find(".cold"), std::string::npos) << name;
    }
    EXPECT_EQ(found, kSitesFunctions) << name;
  }
}

TEST(RecordMcount, SiteOffsetsFollowTheCallingConvention) {
  // fentry: the call is the function's first instruction. mcount: after `push %rbp; mov %rsp,%rbp`
  // at least (the slides' "&schedule + 0x4"). ppc32: after `mflr r0; stw r0,4(r1)`.
  for (const auto &base : guestObjects("x86_64-fentry"))
    for (const auto &s : findMcountSites(base + ".o"))
      EXPECT_EQ(s.functionOffset, 0u) << base << " " << s.function;
  for (const auto &base : guestObjects("x86_64-mcount"))
    for (const auto &s : findMcountSites(base + ".o"))
      EXPECT_GE(s.functionOffset, 4u) << base << " " << s.function;
  for (const auto &base : guestObjects("ppc32-mcount"))
    for (const auto &s : findMcountSites(base + ".o"))
      EXPECT_EQ(s.functionOffset, 8u) << base << " " << s.function;
}

TEST(RecordMcount, RecordedTableResolvesToTheFoundSites) {
  TempDir dir;
  std::vector<std::string> guestRecorded;
  for (const char *flavour : {"x86_64-fentry", "x86_64-mcount", "ppc32-mcount", "ppc64-elfv2"})
    for (const auto &base : guestObjects(flavour))
      guestRecorded.push_back(base);
  int n = 0;
  for (const auto &object : callSiteObjects()) {
    const std::string out = dir / ("out" + std::to_string(n++) + ".o");
    ASSERT_EQ(recordMcount(object, out), RecordOutcome::Added) << object;
    const auto sites = findMcountSites(object);
    // Same sites, same bases, same addends as predicted; and the code's own relocations still find
    // the same calls after the symbol table was renumbered.
    EXPECT_EQ(readMcountLoc(out), sites) << object;
    EXPECT_EQ(findMcountSites(out), sites) << object;
  }
  // The build-time tool's output in the corpora (ftsim-recordmcount).
  for (const auto &base : guestRecorded)
    EXPECT_EQ(readMcountLoc(base + ".rec.o"), findMcountSites(base + ".o")) << base;
}

TEST(RecordMcount, BasesAreLocalNeverWeakAndSectionSymbolsAreAdded) {
  TempDir dir;
  for (const char *name :
       {"x86_64-fentry.o", "x86_64-mcount.o", "ppc32-mcount.o", "ppc64-elfv2.o"}) {
    const std::string out = dir / name;
    ASSERT_EQ(recordMcount(input(name), out), RecordOutcome::Added);
    bool localsFirst = false;
    const auto symbols = readelfSymbols(out, &localsFirst);
    EXPECT_TRUE(localsFirst) << name << ": a local symbol after a global";
    for (const auto &s : readMcountLoc(out)) {
      const auto [first, last] = symbols.equal_range(s.baseSymbol);
      ASSERT_NE(first, last) << name << ": no symbol " << s.baseSymbol;
      for (auto it = first; it != last; ++it)
        EXPECT_EQ(it->second.bind, "LOCAL")
            << name << ": " << s.function << " based on " << s.baseSymbol;
      if (s.function == "weak_only") { // its section's only symbol is weak
        EXPECT_EQ(s.baseSymbol, ".text.weak_only") << name;
      }
      // Its section's only symbol is local, unless unwind tables or debug information made gas
      // emit the section symbol.
      if (s.function == "static_only") {
        EXPECT_EQ(s.baseSymbol,
                  std::string(name) == "x86_64-fentry.o" ? "static_only" : ".text.static_only")
            << name;
      }
    }
  }
  // Without unwind tables gas emitted no section symbol for .init.text: one was added.
  const auto before = readelfSymbols(input("x86_64-fentry.o"));
  const auto after = readelfSymbols(dir / "x86_64-fentry.o");
  EXPECT_EQ(before.count(".init.text"), 0u);
  ASSERT_EQ(after.count(".init.text"), 1u);
  EXPECT_EQ(after.find(".init.text")->second.type, "SECTION");
}

TEST(RecordMcount, OutputIsAcceptedByReadelfObjdumpAndLd) {
  TempDir dir;
  int n = 0;
  for (const auto &object : callSiteObjects()) {
    const std::string out = dir / ("out" + std::to_string(n) + ".o");
    const std::string relinked = dir / ("relinked" + std::to_string(n++) + ".o");
    ASSERT_EQ(recordMcount(object, out), RecordOutcome::Added) << object;
    const std::string tools = binutils(object);
    for (const std::string &command : {tools + "readelf -aW '" + out + "' >/dev/null",
                                       tools + "objdump -dr '" + out + "' >/dev/null",
                                       tools + "ld -r '" + out + "' -o '" + relinked + "'"}) {
      const auto r = runCommand(command);
      EXPECT_EQ(r.status, 0) << command << "\n" << r.out;
      EXPECT_EQ(r.out, "") << command; // no warnings either
    }
    EXPECT_EQ(readMcountLoc(relinked).size(), findMcountSites(object).size()) << object;
  }
}

// Links sites.c (recorded) with strong.c, whose strong definitions override sites.c's weak
// arch_hook and weak_only, and checks every table entry of the linked image still addresses a call
// to the hook. A table based on the weak symbols would point into the (uninstrumented) overrides.
TEST(RecordMcount, LinkedTableAddressesHookCallsDespiteWeakOverrides) {
  TempDir dir;
  struct Case {
    const char *object, *strong, *hook, *base;
  };
  for (const Case &c :
       {Case{"x86_64-fentry.o", "x86_64-strong.o", "__fentry__", "0xffffffff81000000"},
        Case{"x86_64-mcount.o", "x86_64-strong.o", "mcount", "0xffffffff81000000"},
        Case{"ppc32-mcount.o", "ppc32-strong.o", "_mcount", "0xc0000000"}}) {
    SCOPED_TRACE(c.object);
    const std::string recorded = dir / c.object;
    const std::string image = dir / (std::string(c.object) + ".elf");
    const std::string script = dir / "link.lds";
    std::ofstream(script) << "SECTIONS {\n  . = " << c.base << ";\n"
                          << "  .text : { *(.text .text.* .init.text) }\n"
                          << "  . = ALIGN(4096);\n  . = ALIGN(8);\n"
                          << "  __mcount_loc : { __start_mcount_loc = .; KEEP(*(__mcount_loc)) "
                             "__stop_mcount_loc = .; }\n"
                          << "  .data : { *(.data .data.* .sdata .sbss .bss .bss.* COMMON) }\n"
                          << "  /DISCARD/ : { *(.note.*) *(.comment) *(.eh_frame) }\n}\n";
    ASSERT_EQ(recordMcount(input(c.object), recorded), RecordOutcome::Added);
    const auto link =
        runCommand(binutils(c.object) + "ld -static -nostdlib -e schedule -T '" + script +
                   "' -o '" + image + "' '" + recorded + "' '" + input(c.strong) + "'");
    ASSERT_EQ(link.status, 0) << link.out;

    const Image img = loadImage(image);
    const auto *hook = img.findSymbol(c.hook);
    const auto *strongWeakOnly = img.findSymbol("weak_only");
    const auto *strongHook = img.findSymbol("arch_hook");
    ASSERT_TRUE(hook && strongWeakOnly && strongHook);
    EXPECT_EQ(img.mcountLocs.size(), findMcountSites(input(c.object)).size());
    for (std::uint64_t loc : img.mcountLocs) {
      std::vector<std::uint8_t> bytes(img.arch->siteSize());
      ASSERT_TRUE(img.read(loc, bytes)) << std::hex << loc;
      EXPECT_EQ(img.arch->callTarget(loc, bytes), hook->addr)
          << std::hex << loc << ": " << hexBytes(bytes);
      for (const auto *strong : {strongWeakOnly, strongHook})
        EXPECT_FALSE(loc >= strong->addr && loc < strong->addr + strong->size)
            << std::hex << loc << " inside the override " << strong->name;
    }
  }
}

TEST(RecordMcount, DeterministicIdempotentAndCopiesWhatItDoesNotChange) {
  TempDir dir;
  const std::string object = input("x86_64-fentry.o");
  ASSERT_EQ(recordMcount(object, dir / "a.o"), RecordOutcome::Added);
  ASSERT_EQ(recordMcount(object, dir / "b.o"), RecordOutcome::Added);
  EXPECT_EQ(readBytes(dir / "a.o"), readBytes(dir / "b.o"));
  EXPECT_EQ(recordMcount(dir / "a.o", dir / "c.o"), RecordOutcome::AlreadyRecorded);
  EXPECT_EQ(readBytes(dir / "a.o"), readBytes(dir / "c.o"));
  EXPECT_EQ(recordMcount(input("x86_64-fentry.ref.o"), dir / "d.o"),
            RecordOutcome::AlreadyRecorded);
  EXPECT_EQ(readBytes(input("x86_64-fentry.ref.o")), readBytes(dir / "d.o"));
  for (const char *name : {"ppc32-pfe.o", "x86_64-strong.o", "ppc32-strong.o"}) {
    EXPECT_EQ(recordMcount(input(name), dir / "e.o"), RecordOutcome::NoSites) << name;
    EXPECT_EQ(readBytes(input(name)), readBytes(dir / "e.o")) << name;
  }
  // Recording in place works (the output is renamed over the input).
  fs::copy_file(object, dir / "inplace.o");
  EXPECT_EQ(recordMcount(dir / "inplace.o", dir / "inplace.o"), RecordOutcome::Added);
  EXPECT_EQ(readBytes(dir / "inplace.o"), readBytes(dir / "a.o"));
}

TEST(RecordMcount, FormatsTheSlidesTable) {
  std::vector<McountSite> sites(2);
  sites[0].function = "schedule";
  sites[0].functionOffset = 4;
  sites[1].function = "preempt_schedule_irq";
  sites[1].functionOffset = 0x1c;
  EXPECT_EQ(formatMcountTable(sites), "&schedule + 0x4\n&preempt_schedule_irq + 0x1c\n");
  const std::string table = formatMcountTable(findMcountSites(input("x86_64-fentry.o")));
  EXPECT_NE(table.find("&setup_once + 0x0\n"), std::string::npos) << table;
  EXPECT_NE(table.find("&static_only + 0x0\n"), std::string::npos) << table;
}

// --- Bad input: one FatalError naming the file, never a crash, never a partial output. ----------

namespace {

// Runs every entry point on `path`; returns the messages of the FatalErrors (empty: accepted).
std::vector<std::string> tryAll(const std::string &path, const std::string &out) {
  std::vector<std::string> errors;
  auto attempt = [&](auto &&call) {
    try {
      call();
    } catch (const FatalError &e) {
      errors.push_back(e.what());
    }
  };
  attempt([&] { findMcountSites(path); });
  attempt([&] { readMcountLoc(path); });
  attempt([&] { listMcountSites(path); });
  attempt([&] { recordMcount(path, out); });
  return errors;
}

void expectRejected(const std::string &path, const std::string &out, const std::string &problem) {
  const auto errors = tryAll(path, out);
  EXPECT_EQ(errors.size(), 4u) << path << " was accepted";
  for (const auto &e : errors) {
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(problem), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(out)) << "partial output left for " << path;
}

} // namespace

TEST(RecordMcountBadInput, NamesTheFileAndTheProblem) {
  TempDir dir;
  const std::string out = dir / "out.o";
  const auto good = readBytes(input("x86_64-fentry.o"));
  ASSERT_GT(good.size(), 64u);

  writeBytes(dir / "empty.o", {});
  expectRejected(dir / "empty.o", out, "empty file");
  writeBytes(dir / "garbage.o", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  expectRejected(dir / "garbage.o", out, "not an ELF file");
  writeBytes(dir / "short.o", {good.begin(), good.begin() + 40});
  expectRejected(dir / "short.o", out, "truncated ELF header");
  writeBytes(dir / "cut.o", {good.begin(), good.end() - 1});
  expectRejected(dir / "cut.o", out, "section header table");
  expectRejected(dir / "missing.o", out, "cannot open");
  expectRejected(dir.operator/(""), out, "directory");

  auto shoff = good; // e_shoff of an ELF64 header is at 0x28
  shoff[0x28 + 6] = 0x7f;
  writeBytes(dir / "shoff.o", shoff);
  expectRejected(dir / "shoff.o", out, "section header table");

  auto exec = good; // e_type
  exec[0x10] = ET_EXEC;
  writeBytes(dir / "exec.o", exec);
  expectRejected(dir / "exec.o", out, "not a relocatable object");

  auto aarch64 = good; // e_machine, little-endian
  aarch64[0x12] = 183;
  writeBytes(dir / "aarch64.o", aarch64);
  expectRejected(dir / "aarch64.o", out, "unsupported machine");

  // Found by tests/fuzz (ftsim_fuzz_recordmcount): with byte 0 of .strtab not NUL, the section
  // symbol recordMcount adds (st_name 0) read back with that string as its name.
  auto strtab = good;
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, strtab.data(), sizeof ehdr);
  for (unsigned i = 0; i < ehdr.e_shnum; ++i) {
    Elf64_Shdr shdr;
    std::memcpy(&shdr, strtab.data() + ehdr.e_shoff + i * sizeof shdr, sizeof shdr);
    if (shdr.sh_type == SHT_STRTAB && i != ehdr.e_shstrndx)
      strtab[shdr.sh_offset] = 'i';
  }
  writeBytes(dir / "strtab.o", strtab);
  expectRejected(dir / "strtab.o", out, "string table must begin and end with a NUL byte");

  // Found by tests/fuzz (ftsim_fuzz_recordmcount): libelf pads the output to each section's
  // sh_addralign, so an alignment of 2^26 wrote a 64 MiB object (2^40: a terabyte).
  auto aligned = good;
  const std::uint64_t align = std::uint64_t{1} << 26;
  std::memcpy(aligned.data() + ehdr.e_shoff + 1 * sizeof(Elf64_Shdr) + 0x30, &align, 8);
  writeBytes(dir / "aligned.o", aligned);
  EXPECT_NO_THROW(findMcountSites(dir / "aligned.o"));
  EXPECT_THROW(recordMcount(dir / "aligned.o", out), FatalError);
  EXPECT_FALSE(fs::exists(out));

  // Found by tests/fuzz (ftsim_fuzz_recordmcount): a message naming a section quoted its name as
  // the file spells it, newline included. Here .text is ".te\nt" and its calls have no opcode.
  auto named = good;
  auto header = [&](unsigned i) { return named.data() + ehdr.e_shoff + i * sizeof(Elf64_Shdr); };
  Elf64_Shdr names, rela;
  std::memcpy(&names, header(ehdr.e_shstrndx), sizeof names);
  for (unsigned i = 1; i < ehdr.e_shnum; ++i) {
    std::memcpy(&rela, header(i), sizeof rela);
    if (rela.sh_type != SHT_RELA || std::string(reinterpret_cast<const char *>(
                                        &named[names.sh_offset + rela.sh_name])) != ".rela.text")
      continue;
    Elf64_Shdr text;
    std::memcpy(&text, header(rela.sh_info), sizeof text);
    named[names.sh_offset + text.sh_name + 3] = '\n';
    for (std::uint64_t at = 0; at < rela.sh_size; at += sizeof(Elf64_Rela))
      std::memset(named.data() + rela.sh_offset + at, 0, 8); // r_offset
  }
  writeBytes(dir / "named.o", named);
  EXPECT_NE(tryAll(dir / "named.o", out).at(0).find(".te\\nt: call to __fentry__ at offset 0x0"),
            std::string::npos);

  // Found by tests/fuzz (ftsim_fuzz_recordmcount): an input whose __patchable_function_entries is
  // not a table of words was recorded, and the written object (which keeps it) did not read back.
  writeBytes(dir / "three.bin", {1, 2, 3});
  const std::string patchable = dir / "patchable.o";
  const auto added = runCommand(
      binutils(input("x86_64-fentry.o")) + "objcopy --add-section __patchable_function_entries='" +
      std::string(dir / "three.bin") + "' '" + input("x86_64-fentry.o") + "' '" + patchable + "'");
  ASSERT_EQ(added.status, 0) << added.out;
  EXPECT_THROW(recordMcount(patchable, out), FatalError);
  EXPECT_FALSE(fs::exists(out));

  auto ppc = readBytes(input("ppc32-mcount.o")); // ELFCLASS32, big-endian e_machine at 0x12
  ppc[0x12] = 0;
  ppc[0x13] = EM_X86_64;
  writeBytes(dir / "class.o", ppc);
  expectRejected(dir / "class.o", out, "wrong ELF class");
}

// A scratch directory in memory when possible: these tests write thousands of small files, and
// unlinking them on a disk mounted with `discard` costs milliseconds each.
fs::path scratchBase() {
  std::error_code ec;
  return fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
}

TEST(RecordMcountBadInput, EveryTruncationIsRejected) {
  TempDir dir(scratchBase());
  for (const char *name : {"x86_64-fentry.o", "ppc32-mcount.o", "ppc64-elfv2.o"}) {
    const auto good = readBytes(input(name));
    const std::string path = dir / name;
    for (std::size_t size = 0; size < good.size(); size += (size < 128 ? 1 : 37)) {
      writeBytes(path, {good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)});
      const auto errors = tryAll(path, dir / "out.o");
      EXPECT_EQ(errors.size(), 4u) << name << " truncated to " << size << " was accepted";
      for (const auto &e : errors)
        EXPECT_NE(e.find(path), std::string::npos) << e;
    }
  }
}

// Every byte of the headers and tables flipped in turn: each result is either accepted or one
// FatalError naming the file (under -DFTSIM_SANITIZE=ON this also proves no memory error).
TEST(RecordMcountBadInput, FlippedBytesNeverCrash) {
  TempDir dir(scratchBase());
  for (const char *name : {"x86_64-fentry.o", "ppc32-mcount.o"}) {
    const auto good = readBytes(input(name));
    const std::string path = dir / name;
    std::size_t rejected = 0;
    for (std::size_t at = 0; at < good.size(); ++at) {
      auto bad = good;
      bad[at] ^= 0xff;
      writeBytes(path, bad);
      const auto errors = tryAll(path, dir / "out.o");
      rejected += errors.empty() ? 0 : 1;
      for (const auto &e : errors)
        EXPECT_NE(e.find(path), std::string::npos) << "byte " << at << ": " << e;
    }
    EXPECT_GT(rejected, 0u) << name;
  }
}
