// recordmcount over relocatable objects with libelf, after Linux scripts/recordmcount.{c,h}.
//
// Differences from the kernel's tool, on purpose:
//  - Every executable section is scanned (SHF_EXECINSTR), as gcc -mrecord-mcount records every
//    profiled function; recordmcount.c keeps a list of section names (is_mcounted_section_name())
//    so that e.g. .noinstr.text is never traced. Which sections to trace is the model's filter.
//  - A site is a relocation of a call type (Arch::isMcountCallReloc) against a hook; the kernel
//    takes any relocation against the first hook symbol it meets (get_mcountsym()).
//  - The base of an entry is a section symbol or a local symbol, never a global or weak one, and a
//    section symbol is added when there is none; recordmcount.c find_secsym_ndx() also accepts a
//    global and gives up ("Cannot find symbol for section") when only weak ones exist.
//  - The output is a new file written by libelf, not the input patched in place.

#include "ftsim/arch/RecordMcount.h"

#include "ElfRelocatable.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

namespace ftsim::arch {

namespace {

constexpr std::string_view kMcountLoc = "__mcount_loc";
// What section alignments may add to a written object (one 2 MiB-aligned section and then some).
constexpr std::uint64_t kMaxPadding = std::uint64_t{4} << 20;
constexpr std::string_view kPatchableEntries = "__patchable_function_entries";
// Both new section names share one string: "__mcount_loc" is the suffix of ".rela__mcount_loc", as
// in recordmcount.h append_func().
constexpr std::string_view kRelaMcountLoc = ".rela__mcount_loc";
constexpr std::string_view kRelMcountLoc = ".rel__mcount_loc";

bool isRelocationSection(const GElf_Shdr &shdr) {
  return shdr.sh_type == SHT_REL || shdr.sh_type == SHT_RELA;
}

struct SectionOffset {
  std::size_t section;
  std::uint64_t offset;
  auto operator<=>(const SectionOffset &) const = default;
};

// The call sites in the relocations, sorted by section index then offset.
std::vector<SectionOffset> callSites(const ElfRelocatable &obj) {
  const Arch &arch = obj.arch();
  const auto &sections = obj.sections();
  std::vector<SectionOffset> sites;
  for (std::size_t r = 1; r < sections.size(); ++r) {
    const GElf_Shdr &rel = sections[r].shdr;
    if (!isRelocationSection(rel))
      continue;
    const GElf_Shdr &target = sections[rel.sh_info].shdr;
    // recordmcount.h __has_rel_mcount(): only relocations that apply to code.
    if (target.sh_type != SHT_PROGBITS || !(target.sh_flags & SHF_EXECINSTR))
      continue;
    for (const auto &reloc : obj.relocations(r)) {
      if (!arch.isMcountCallReloc(reloc.type) ||
          !arch.isMcountSymbol(obj.symbols()[reloc.symbol].name))
        continue;
      // x86 relocates the rel32 after the e8 opcode (recordmcount.c: mcount_adjust_64 = -1).
      if (reloc.offset < arch.relocOffsetToSite())
        obj.fail("{}: call to {} at offset {:#x} has no room for its opcode",
                 sections[rel.sh_info].name, obj.symbols()[reloc.symbol].name, reloc.offset);
      sites.push_back({rel.sh_info, reloc.offset - arch.relocOffsetToSite()});
    }
  }
  std::sort(sites.begin(), sites.end());
  sites.erase(std::unique(sites.begin(), sites.end()), sites.end());
  return sites;
}

// The symbol an entry for a site in `section` is relocated against (recordmcount.c
// find_secsym_ndx()): the section symbol, else a local symbol defined in the section. Never a weak
// symbol: another object's definition may override it at link time, and the entry would then point
// into that other function. Nor a global one: a reader of the table would not expect it to move
// with a symbol. No value: a section symbol has to be added.
struct Base {
  std::optional<std::size_t> symbol;
  std::uint64_t value = 0;
};

Base chooseBase(const ElfRelocatable &obj, std::size_t section) {
  const auto &symbols = obj.symbols();
  for (std::size_t i = 1; i < symbols.size(); ++i)
    if (symbols[i].type() == STT_SECTION && symbols[i].shndx == section &&
        symbols[i].bind() == STB_LOCAL)
      return {i, symbols[i].sym.st_value};
  for (std::size_t i = 1; i < symbols.size(); ++i) {
    const auto &s = symbols[i];
    if (s.bind() == STB_LOCAL && s.shndx == section &&
        (s.type() == STT_FUNC || s.type() == STT_NOTYPE || s.type() == STT_OBJECT))
      return {i, s.sym.st_value};
  }
  return {};
}

McountSite describeSite(const ElfRelocatable &obj, SectionOffset site, std::string baseSymbol,
                        std::int64_t addend) {
  const auto where = obj.locate(site.section, site.offset);
  return {obj.sections()[site.section].name,
          site.offset,
          where.symbol,
          where.offset,
          std::move(baseSymbol),
          addend};
}

std::uint64_t readWord(const ElfRelocatable &obj, const GElf_Shdr &shdr, std::uint64_t offset) {
  const unsigned size = obj.arch().wordSize();
  if (offset > shdr.sh_size || shdr.sh_size - offset < size)
    obj.fail("word at offset {:#x} is outside its section", offset);
  const std::uint8_t *p = obj.fileBytes().data() + shdr.sh_offset + offset;
  std::uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) {
    const unsigned byte = obj.arch().endian() == Endian::Big ? i : size - 1 - i;
    v = (v << 8) | p[byte];
  }
  return v;
}

std::vector<McountSite> recordedSites(const ElfRelocatable &obj) {
  const auto &sections = obj.sections();
  const unsigned word = obj.arch().wordSize();
  std::vector<McountSite> out;
  for (std::size_t t = 1; t < sections.size(); ++t) {
    const auto &table = sections[t];
    if (table.name != kMcountLoc && table.name != kPatchableEntries)
      continue;
    if (table.shdr.sh_type != SHT_PROGBITS || table.shdr.sh_size % word != 0)
      obj.fail("{} (section {}) is not a PROGBITS table of {}-byte words", table.name, t, word);
    std::map<std::uint64_t, ElfRelocatable::Relocation> byOffset;
    bool rela = true;
    for (std::size_t r = 1; r < sections.size(); ++r) {
      if (!isRelocationSection(sections[r].shdr) || sections[r].shdr.sh_info != t)
        continue;
      rela = sections[r].shdr.sh_type == SHT_RELA;
      for (const auto &reloc : obj.relocations(r))
        byOffset.emplace(reloc.offset, reloc);
    }
    for (std::uint64_t at = 0; at < table.shdr.sh_size; at += word) {
      auto it = byOffset.find(at);
      if (it == byOffset.end())
        obj.fail("{}: entry at offset {:#x} has no relocation", table.name, at);
      const auto &reloc = it->second;
      if (reloc.type != obj.arch().mcountLocRelocType())
        obj.fail("{}: entry at offset {:#x} has relocation type {}, not the absolute word type {}",
                 table.name, at, reloc.type, obj.arch().mcountLocRelocType());
      const auto &sym = obj.symbols()[reloc.symbol];
      if (!sym.inSection())
        obj.fail("{}: entry at offset {:#x} refers to {}, which is not defined in a section",
                 table.name, at, sym.name.empty() ? "symbol 0" : sym.name);
      // SHT_REL keeps the addend in the word itself (recordmcount.h sift_rel_mcount()).
      const std::int64_t addend =
          rela ? reloc.addend : static_cast<std::int64_t>(readWord(obj, table.shdr, at));
      const std::uint64_t offset = sym.sym.st_value + static_cast<std::uint64_t>(addend);
      if (offset >= sections[sym.shndx].shdr.sh_size)
        obj.fail("{}: entry at offset {:#x} points outside {} ({} + {:#x})", table.name, at,
                 sections[sym.shndx].name, sym.name, addend);
      out.push_back(describeSite(obj, {sym.shndx, offset}, sym.name, addend));
    }
  }
  return out;
}

bool hasMcountLoc(const ElfRelocatable &obj) {
  return std::any_of(obj.sections().begin(), obj.sections().end(),
                     [](const auto &s) { return s.name == kMcountLoc; });
}

// An output file under construction: written to a temporary name, renamed on commit, removed on
// any failure so that a build never sees half an object.
class OutputFile {
public:
  explicit OutputFile(const std::string &path)
      : path_(path), temp_(fmt::format("{}.tmp{}", path, ::getpid())) {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      fatal("{}: cannot create: {}", temp_, std::strerror(errno));
  }
  ~OutputFile() {
    if (elf_)
      elf_end(elf_);
    if (fd_ >= 0)
      ::close(fd_);
    if (!committed_)
      ::unlink(temp_.c_str());
  }
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  int fd() const { return fd_; }
  void adopt(Elf *elf) { elf_ = elf; }

  void writeAll(const std::vector<std::uint8_t> &bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        fatal("{}: write failed: {}", path_, std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }

  void commit() {
    if (elf_) {
      elf_end(elf_);
      elf_ = nullptr;
    }
    if (::close(fd_) != 0) {
      fd_ = -1;
      fatal("{}: write failed: {}", path_, std::strerror(errno));
    }
    fd_ = -1;
    if (std::rename(temp_.c_str(), path_.c_str()) != 0)
      fatal("{}: cannot rename {} into place: {}", path_, temp_, std::strerror(errno));
    committed_ = true;
  }

private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
  Elf *elf_ = nullptr;
  bool committed_ = false;
};

void copyUnchanged(const ElfRelocatable &obj, const std::string &outPath) {
  OutputFile out(outPath);
  out.writeAll(obj.fileBytes());
  out.commit();
}

// Writes `obj` plus __mcount_loc to `outPath`. Existing sections keep their indices (the new ones
// are appended), so only symbol indices move: new local section symbols go at the end of the
// locals (ELF gABI: locals precede globals, sh_info is the first global), every global moves up by
// their number, and every reference to a symbol index (relocations, SHT_GROUP signatures) is
// renumbered.
class McountLocWriter {
public:
  McountLocWriter(const ElfRelocatable &obj, const std::vector<SectionOffset> &sites,
                  const std::string &outPath)
      : obj_(obj), arch_(obj.arch()), sections_(obj.sections()), sites_(sites), outPath_(outPath),
        symtab_(*obj.symtabIndex()), firstGlobal_(sections_[symtab_].shdr.sh_info) {
    planSymbols();
  }

  void write() {
    OutputFile &out = out_.emplace(outPath_);
    elf_ = elf_begin(out.fd(), ELF_C_WRITE, nullptr);
    if (!elf_)
      obj_.fail("libelf cannot start writing {}: {}", outPath_, elf_errmsg(-1));
    out.adopt(elf_);
    const int elfClass = arch_.elfClass() == ELFCLASS64 ? ELFCLASS64 : ELFCLASS32;
    check(gelf_newehdr(elf_, elfClass) != nullptr, "the ELF header");
    GElf_Ehdr ehdr = obj_.ehdr();
    check(gelf_update_ehdr(elf_, &ehdr) != 0, "the ELF header");
    symSize_ = gelf_fsize(elf_, ELF_T_SYM, 1, EV_CURRENT);
    relaSize_ = gelf_fsize(elf_, ELF_T_RELA, 1, EV_CURRENT);
    relSize_ = gelf_fsize(elf_, ELF_T_REL, 1, EV_CURRENT);
    for (std::size_t i = 1; i < sections_.size(); ++i)
      copySection(i);
    writeTable();
    check(elf_update(elf_, ELF_C_WRITE) >= 0, "the object");
    out.commit();
  }

private:
  // The base of each section's entries, and the sections that need a new section symbol.
  void planSymbols() {
    for (const auto &site : sites_)
      if (!bases_.contains(site.section)) {
        bases_[site.section] = chooseBase(obj_, site.section);
        if (!bases_[site.section].symbol)
          addedSectionSymbols_.push_back(site.section);
      }
    added_ = addedSectionSymbols_.size();
    // libelf lays the output out anew, each section at a multiple of its sh_addralign: the
    // alignments bound the padding it may write. A kernel object's add up to a few pages.
    std::uint64_t alignments = 0;
    for (std::size_t i = 1; i < sections_.size(); ++i)
      alignments += std::min<std::uint64_t>(sections_[i].shdr.sh_addralign, kMaxPadding + 1);
    if (alignments > kMaxPadding)
      obj_.fail("section alignments add up to more than {} MiB of padding in the written object",
                kMaxPadding >> 20);
    if (sections_.size() + 2 >= SHN_LORESERVE)
      obj_.fail("{} sections: extended section numbering is not supported", sections_.size());
    for (std::size_t i = 1; i < sections_.size() && added_ > 0; ++i) {
      // Other tables of symbol indices that would need renumbering; gcc and gas emit neither.
      if (sections_[i].shdr.sh_type == SHT_SYMTAB_SHNDX || sections_[i].shdr.sh_type == 0x6fff4c03)
        obj_.fail("section {} ({}) holds symbol indices that cannot be renumbered yet", i,
                  sections_[i].name);
    }
  }

  std::size_t renumber(std::size_t index) const {
    return index < firstGlobal_ ? index : index + added_;
  }

  // libelf refuses to write some inconsistencies the reader tolerated; they are the input's.
  void check(bool ok, std::string_view what) const {
    if (!ok)
      obj_.fail("cannot write {} to {}: {}", what, outPath_, elf_errmsg(-1));
  }

  // Buffers handed to libelf must live until elf_update(); deque never moves its elements.
  Elf_Data *newData(Elf_Scn *scn, Elf_Type type, std::size_t size, std::size_t align) {
    Elf_Data *d = elf_newdata(scn);
    check(d != nullptr, "section data");
    buffers_.emplace_back(size, 0);
    d->d_buf = buffers_.back().data();
    d->d_size = size;
    d->d_type = type;
    d->d_align = align;
    d->d_off = 0;
    d->d_version = EV_CURRENT;
    return d;
  }

  void copySection(std::size_t i) {
    const auto &in = sections_[i];
    Elf_Scn *scn = elf_newscn(elf_);
    check(scn != nullptr, "a section");
    GElf_Shdr shdr = in.shdr;
    if (i == symtab_) {
      writeSymbols(scn);
      shdr.sh_info = static_cast<GElf_Word>(firstGlobal_ + added_);
    } else if (added_ > 0 && isRelocationSection(in.shdr) && in.shdr.sh_link == symtab_) {
      writeRenumberedRelocations(i, scn);
    } else if (i == obj_.shstrndx()) {
      writeSectionNames(i, scn);
    } else {
      if (in.shdr.sh_type == SHT_GROUP && in.shdr.sh_link == symtab_)
        shdr.sh_info = static_cast<GElf_Word>(renumber(in.shdr.sh_info));
      // Unchanged contents: point at the input's buffers, which outlive elf_update().
      for (Elf_Data *src = elf_getdata(in.scn, nullptr); src; src = elf_getdata(in.scn, src)) {
        Elf_Data *d = elf_newdata(scn);
        check(d != nullptr, "section data");
        *d = *src;
      }
    }
    check(gelf_update_shdr(scn, &shdr) != 0, "a section header");
  }

  void writeSymbols(Elf_Scn *scn) {
    const std::size_t symbolCount = obj_.symbols().size();
    Elf_Data *src = obj_.data(symtab_);
    Elf_Data *d = newData(scn, ELF_T_SYM, (symbolCount + added_) * symSize_, src->d_align);
    for (std::size_t s = 0; s < symbolCount; ++s) {
      GElf_Sym sym = obj_.symbols()[s].sym;
      check(gelf_update_sym(d, static_cast<int>(renumber(s)), &sym) != 0, "a symbol");
    }
    for (std::size_t k = 0; k < added_; ++k) {
      GElf_Sym sym{};
      sym.st_info = GELF_ST_INFO(STB_LOCAL, STT_SECTION);
      sym.st_shndx = static_cast<GElf_Section>(addedSectionSymbols_[k]);
      check(gelf_update_sym(d, static_cast<int>(firstGlobal_ + k), &sym) != 0, "a symbol");
    }
  }

  void writeRenumberedRelocations(std::size_t i, Elf_Scn *scn) {
    const bool rela = sections_[i].shdr.sh_type == SHT_RELA;
    Elf_Data *src = obj_.data(i);
    const std::size_t count = src ? src->d_size / (rela ? relaSize_ : relSize_) : 0;
    Elf_Data *d = newData(scn, rela ? ELF_T_RELA : ELF_T_REL, src ? src->d_size : 0,
                          src ? src->d_align : arch_.wordSize());
    for (std::size_t k = 0; k < count; ++k) {
      const int n = static_cast<int>(k);
      if (rela) {
        GElf_Rela r;
        check(gelf_getrela(src, n, &r) != nullptr, "a relocation");
        r.r_info = GELF_R_INFO(renumber(GELF_R_SYM(r.r_info)), GELF_R_TYPE(r.r_info));
        check(gelf_update_rela(d, n, &r) != 0, "a relocation");
      } else {
        GElf_Rel r;
        check(gelf_getrel(src, n, &r) != nullptr, "a relocation");
        r.r_info = GELF_R_INFO(renumber(GELF_R_SYM(r.r_info)), GELF_R_TYPE(r.r_info));
        check(gelf_update_rel(d, n, &r) != 0, "a relocation");
      }
    }
  }

  // .shstrtab with the relocation section's name appended (its suffix names the table).
  void writeSectionNames(std::size_t i, Elf_Scn *scn) {
    Elf_Data *src = obj_.data(i);
    shstrtabSize_ = src ? src->d_size : 0;
    const std::string_view name = arch_.usesRela() ? kRelaMcountLoc : kRelMcountLoc;
    Elf_Data *d = newData(scn, ELF_T_BYTE, shstrtabSize_ + name.size() + 1, 1);
    if (shstrtabSize_)
      std::memcpy(d->d_buf, src->d_buf, shstrtabSize_);
    std::memcpy(static_cast<char *>(d->d_buf) + shstrtabSize_, name.data(), name.size());
  }

  // The symbol an entry of `section` is relative to, as renumbered in the output.
  std::size_t entrySymbol(std::size_t section) const {
    const Base &base = bases_.at(section);
    if (base.symbol)
      return renumber(*base.symbol);
    const auto at = std::find(addedSectionSymbols_.begin(), addedSectionSymbols_.end(), section);
    return firstGlobal_ + static_cast<std::size_t>(at - addedSectionSymbols_.begin());
  }

  // __mcount_loc: one word per site, relocated by an absolute word relocation. With RELA the word
  // is 0 and the addend is in the relocation; with REL the word holds the addend
  // (recordmcount.h sift_rel_mcount()).
  void writeTable() {
    const unsigned word = arch_.wordSize();
    const std::size_t tableIndex = sections_.size();
    Elf_Scn *table = elf_newscn(elf_);
    check(table != nullptr, "__mcount_loc");
    Elf_Data *tableData = newData(table, ELF_T_BYTE, sites_.size() * word, word);
    GElf_Shdr tableHdr{};
    const std::size_t relNameLength = arch_.usesRela() ? 5 : 4; // ".rela" or ".rel"
    tableHdr.sh_name = static_cast<GElf_Word>(shstrtabSize_ + relNameLength);
    tableHdr.sh_type = SHT_PROGBITS;
    tableHdr.sh_flags = SHF_ALLOC;
    tableHdr.sh_addralign = word;
    tableHdr.sh_entsize = word;
    check(gelf_update_shdr(table, &tableHdr) != 0, "__mcount_loc");

    Elf_Scn *relocs = elf_newscn(elf_);
    check(relocs != nullptr, "the relocations of __mcount_loc");
    Elf_Data *relocData = newData(relocs, arch_.usesRela() ? ELF_T_RELA : ELF_T_REL,
                                  sites_.size() * (arch_.usesRela() ? relaSize_ : relSize_), word);
    for (std::size_t k = 0; k < sites_.size(); ++k)
      writeEntry(k, tableData, relocData);
    GElf_Shdr relocHdr{};
    relocHdr.sh_name = static_cast<GElf_Word>(shstrtabSize_);
    relocHdr.sh_type = arch_.usesRela() ? SHT_RELA : SHT_REL;
    relocHdr.sh_flags = SHF_INFO_LINK; // sh_info is a section index, as gas marks it
    relocHdr.sh_link = static_cast<GElf_Word>(symtab_);
    relocHdr.sh_info = static_cast<GElf_Word>(tableIndex);
    relocHdr.sh_addralign = word;
    relocHdr.sh_entsize = arch_.usesRela() ? relaSize_ : relSize_;
    check(gelf_update_shdr(relocs, &relocHdr) != 0, "the relocations of __mcount_loc");
  }

  // Entry k of __mcount_loc and its relocation.
  void writeEntry(std::size_t k, Elf_Data *tableData, Elf_Data *relocData) {
    const unsigned word = arch_.wordSize();
    const auto &site = sites_[k];
    const std::uint64_t offset = k * word;
    const std::int64_t addend =
        static_cast<std::int64_t>(site.offset - bases_.at(site.section).value);
    const GElf_Xword info = GELF_R_INFO(entrySymbol(site.section), arch_.mcountLocRelocType());
    if (arch_.usesRela()) {
      GElf_Rela r{offset, info, addend};
      check(gelf_update_rela(relocData, static_cast<int>(k), &r) != 0, "a relocation");
      return;
    }
    GElf_Rel r{offset, info};
    check(gelf_update_rel(relocData, static_cast<int>(k), &r) != 0, "a relocation");
    // File byte order, since the table is written as ELF_T_BYTE.
    auto *bytes = static_cast<std::uint8_t *>(tableData->d_buf) + offset;
    for (unsigned b = 0; b < word; ++b) {
      const unsigned shift = 8 * (arch_.endian() == Endian::Big ? word - 1 - b : b);
      bytes[b] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(addend) >> shift);
    }
  }

  const ElfRelocatable &obj_;
  const Arch &arch_;
  const std::vector<ElfRelocatable::Section> &sections_;
  const std::vector<SectionOffset> &sites_;
  const std::string &outPath_;
  const std::size_t symtab_;
  const std::size_t firstGlobal_;
  std::map<std::size_t, Base> bases_;
  std::vector<std::size_t> addedSectionSymbols_; // sections that get a new section symbol
  std::size_t added_ = 0;
  std::optional<OutputFile> out_;
  Elf *elf_ = nullptr;
  std::deque<std::vector<std::uint8_t>> buffers_;
  std::size_t symSize_ = 0, relaSize_ = 0, relSize_ = 0;
  std::size_t shstrtabSize_ = 0;
};

} // namespace

std::vector<McountSite> findMcountSites(const std::string &objectPath) {
  const ElfRelocatable obj(objectPath);
  std::map<std::size_t, Base> bases;
  std::vector<McountSite> out;
  for (const auto &site : callSites(obj)) {
    if (!bases.contains(site.section))
      bases[site.section] = chooseBase(obj, site.section);
    const Base &base = bases[site.section];
    // Without a usable symbol, recordMcount adds the section symbol: name the section.
    std::string baseName =
        base.symbol ? obj.symbols()[*base.symbol].name : obj.sections()[site.section].name;
    out.push_back(describeSite(obj, site, std::move(baseName),
                               static_cast<std::int64_t>(site.offset - base.value)));
  }
  return out;
}

std::vector<McountSite> readMcountLoc(const std::string &objectPath) {
  const ElfRelocatable obj(objectPath);
  return recordedSites(obj);
}

std::vector<McountSite> listMcountSites(const std::string &objectPath) {
  auto sites = findMcountSites(objectPath);
  if (sites.empty())
    return readMcountLoc(objectPath);
  return sites;
}

RecordOutcome recordMcount(const std::string &inPath, const std::string &outPath) {
  const ElfRelocatable obj(inPath);
  // recordmcount.h __has_rel_mcount(): "__mcount_loc already exists" (gcc -mrecord-mcount, or an
  // earlier run). Copying keeps the tool idempotent.
  if (hasMcountLoc(obj)) {
    copyUnchanged(obj, outPath);
    return RecordOutcome::AlreadyRecorded;
  }
  // A __patchable_function_entries table the input already has must be one the reader accepts:
  // the written object keeps it, and an object whose tables do not read back is no output.
  recordedSites(obj);
  const auto sites = callSites(obj);
  if (sites.empty()) {
    copyUnchanged(obj, outPath);
    return RecordOutcome::NoSites;
  }
  McountLocWriter(obj, sites, outPath).write();
  return RecordOutcome::Added;
}

std::string formatMcountTable(const std::vector<McountSite> &sites) {
  std::string out;
  for (const auto &site : sites)
    out += fmt::format("&{} + {:#x}\n", site.function, site.functionOffset);
  return out;
}

} // namespace ftsim::arch
