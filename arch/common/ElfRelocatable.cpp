#include "ElfRelocatable.h"

#include "ftsim/arch/InputFile.h"

#include <algorithm>
#include <cstring>

namespace ftsim::arch {

namespace {

void initLibelf() {
  static const bool initialised = elf_version(EV_CURRENT) != EV_NONE;
  if (!initialised)
    FTSIM_PANIC("libelf refuses EV_CURRENT: {}", elf_errmsg(-1));
}

std::string elfTypeName(unsigned type) {
  switch (type) {
  case ET_NONE:
    return "ET_NONE";
  case ET_EXEC:
    return "ET_EXEC, an executable";
  case ET_DYN:
    return "ET_DYN, a shared object or PIE";
  case ET_CORE:
    return "ET_CORE, a core dump";
  default:
    return fmt::format("e_type {:#x}", type);
  }
}

// Prefer, among symbols at one address, the one a reader of the kernel would name: a function over
// a label, a global over a weak over a static one.
int symbolRank(const ElfRelocatable::Symbol &s) {
  int rank = s.type() == STT_FUNC ? 0 : 4;
  switch (s.bind()) {
  case STB_GLOBAL:
    return rank;
  case STB_WEAK:
    return rank + 1;
  default:
    return rank + 2;
  }
}

} // namespace

ElfRelocatable::ElfRelocatable(std::string path) : path_(std::move(path)) {
  initLibelf();
  const std::string content = readInputFile(path_, "ELF object", kMaxElfFileBytes);
  bytes_.assign(content.begin(), content.end());
  checkHeader();
  readSections();
  readSymbols();
}

void ElfRelocatable::checkHeader() {
  const std::size_t size = bytes_.size();
  if (size == 0)
    fail("empty file, not an ELF object");
  if (size < SELFMAG || std::memcmp(bytes_.data(), ELFMAG, SELFMAG) != 0)
    fail("not an ELF file (bad magic)");
  if (size < EI_NIDENT)
    fail("truncated ELF header ({} bytes)", size);
  const unsigned elfClass = bytes_[EI_CLASS];
  if (elfClass != ELFCLASS32 && elfClass != ELFCLASS64)
    fail("invalid ELF class {}", elfClass);
  const unsigned byteOrder = bytes_[EI_DATA];
  if (byteOrder != ELFDATA2LSB && byteOrder != ELFDATA2MSB)
    fail("invalid ELF byte order {}", byteOrder);
  const bool is64 = elfClass == ELFCLASS64;
  const std::size_t ehdrSize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (size < ehdrSize)
    fail("truncated ELF header ({} of {} bytes)", size, ehdrSize);

  // Check the section header table against the file size from the raw header, before libelf sees
  // it: libelf only says "invalid ELF file", and the user deserves to know which part is wrong.
  auto field = [&](std::size_t offset, unsigned width) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) {
      const unsigned byte = byteOrder == ELFDATA2LSB ? width - 1 - i : i;
      v = (v << 8) | bytes_[offset + byte];
    }
    return v;
  };
  const std::uint64_t shoff = is64 ? field(0x28, 8) : field(0x20, 4);
  const std::uint64_t shentsize = is64 ? field(0x3a, 2) : field(0x2e, 2);
  const std::uint64_t shnumField = is64 ? field(0x3c, 2) : field(0x30, 2);
  const std::size_t shdrSize = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
  if (shoff == 0)
    fail("no section header table");
  if (shentsize != shdrSize)
    fail("bad e_shentsize {} (expected {})", shentsize, shdrSize);
  // e_shnum == 0 with a table means the count is in section 0's sh_size (ELF gABI); at least that
  // first header must be there.
  const std::uint64_t minEntries = std::max<std::uint64_t>(shnumField, 1);
  if (shoff > size || (size - shoff) / shdrSize < minEntries)
    fail("section header table (offset {:#x}, {} entries) extends past the end of the file ({} "
         "bytes)",
         shoff, minEntries, size);

  elf_.reset(elf_memory(reinterpret_cast<char *>(bytes_.data()), size));
  if (!elf_ || elf_kind(elf_.get()) != ELF_K_ELF)
    fail("not a valid ELF file: {}", elf_errmsg(-1));
  if (!gelf_getehdr(elf_.get(), &ehdr_))
    fail("bad ELF header: {}", elf_errmsg(-1));
  if (ehdr_.e_type != ET_REL)
    fail("not a relocatable object ({}); recordmcount works on .o files",
         elfTypeName(ehdr_.e_type));

  arch_ = archByElf(ehdr_.e_machine, elfClass);
  if (!arch_) {
    for (const Arch *a : allArchs())
      if (a->elfMachine() == ehdr_.e_machine)
        fail("wrong ELF class for the machine: ELFCLASS{} but {} objects are ELFCLASS{}",
             is64 ? 64 : 32, a->name(), a->elfClass() == ELFCLASS64 ? 64 : 32);
    std::string known;
    for (const Arch *a : allArchs())
      known += fmt::format("{}{}", known.empty() ? "" : ", ", a->name());
    fail("unsupported machine (e_machine {}); supported: {}", ehdr_.e_machine, known);
  }
  const unsigned wanted = arch_->endian() == Endian::Big ? ELFDATA2MSB : ELFDATA2LSB;
  if (byteOrder != wanted)
    fail("wrong byte order for {}: {}-endian", arch_->name(),
         byteOrder == ELFDATA2MSB ? "big" : "little");
}

std::size_t ElfRelocatable::tableEntrySize(unsigned type) const {
  switch (type) {
  case SHT_SYMTAB:
    return gelf_fsize(elf_.get(), ELF_T_SYM, 1, EV_CURRENT);
  case SHT_RELA:
    return gelf_fsize(elf_.get(), ELF_T_RELA, 1, EV_CURRENT);
  case SHT_REL:
    return gelf_fsize(elf_.get(), ELF_T_REL, 1, EV_CURRENT);
  case SHT_GROUP:
  case SHT_SYMTAB_SHNDX:
    return sizeof(Elf32_Word);
  default:
    return 0;
  }
}

void ElfRelocatable::readSections() {
  std::size_t count = 0;
  if (elf_getshdrnum(elf_.get(), &count) != 0)
    fail("cannot read the section count: {}", elf_errmsg(-1));
  if (elf_getshdrstrndx(elf_.get(), &shstrndx_) != 0)
    fail("cannot read the section name table index: {}", elf_errmsg(-1));
  if (shstrndx_ == SHN_UNDEF || shstrndx_ >= count)
    fail("section name table index {} out of range ({} sections)", shstrndx_, count);

  sections_.resize(count);
  const std::size_t size = bytes_.size();
  for (std::size_t i = 0; i < count; ++i) {
    Section &s = sections_[i];
    s.scn = elf_getscn(elf_.get(), i);
    if (!s.scn || !gelf_getshdr(s.scn, &s.shdr))
      fail("cannot read section header {}: {}", i, elf_errmsg(-1));
    if (i == 0)
      continue;
    if (s.shdr.sh_type != SHT_NOBITS &&
        (s.shdr.sh_offset > size || size - s.shdr.sh_offset < s.shdr.sh_size))
      fail("section {} (offset {:#x}, size {:#x}) extends past the end of the file ({} bytes)", i,
           s.shdr.sh_offset, s.shdr.sh_size, size);
    // The gABI requires a power of two; libelf would refuse to write the object back.
    if (s.shdr.sh_addralign > 1 && (s.shdr.sh_addralign & (s.shdr.sh_addralign - 1)) != 0)
      fail("section {}: sh_addralign {} is not a power of two", i, s.shdr.sh_addralign);
    if (const std::size_t entsize = tableEntrySize(s.shdr.sh_type);
        entsize != 0 && (s.shdr.sh_entsize != entsize || s.shdr.sh_size % entsize != 0))
      fail("section {}: sh_entsize {} or sh_size {:#x} does not fit {}-byte entries", i,
           s.shdr.sh_entsize, s.shdr.sh_size, entsize);
    // gABI: a string table's first byte (index 0, the empty name) and last byte are NUL. A table
    // whose byte 0 is not would name every symbol with st_name 0, the section symbols
    // recordMcount adds among them.
    if (s.shdr.sh_type == SHT_STRTAB && s.shdr.sh_size != 0 &&
        (bytes_[s.shdr.sh_offset] != 0 || bytes_[s.shdr.sh_offset + s.shdr.sh_size - 1] != 0))
      fail("section {}: a string table must begin and end with a NUL byte", i);
    const bool linksSection = s.shdr.sh_type == SHT_REL || s.shdr.sh_type == SHT_RELA ||
                              s.shdr.sh_type == SHT_SYMTAB || s.shdr.sh_type == SHT_GROUP ||
                              s.shdr.sh_type == SHT_SYMTAB_SHNDX;
    if (linksSection && s.shdr.sh_link >= count)
      fail("section {}: sh_link {} out of range ({} sections)", i, s.shdr.sh_link, count);
    if ((s.shdr.sh_type == SHT_REL || s.shdr.sh_type == SHT_RELA) &&
        (s.shdr.sh_info == 0 || s.shdr.sh_info >= count))
      fail("relocation section {}: target section {} out of range ({} sections)", i, s.shdr.sh_info,
           count);
  }
  if (sections_[shstrndx_].shdr.sh_type != SHT_STRTAB)
    fail("section name table (section {}) is not SHT_STRTAB", shstrndx_);
  for (std::size_t i = 1; i < count; ++i) {
    const char *name = elf_strptr(elf_.get(), shstrndx_, sections_[i].shdr.sh_name);
    if (!name)
      fail("section {}: name offset {:#x} outside the section name table", i,
           sections_[i].shdr.sh_name);
    sections_[i].name = name;
  }
}

void ElfRelocatable::readSymbols() {
  bySection_.assign(sections_.size(), {});
  std::optional<std::size_t> shndxTable;
  for (std::size_t i = 1; i < sections_.size(); ++i) {
    if (sections_[i].shdr.sh_type == SHT_SYMTAB) {
      if (symtab_)
        fail("more than one symbol table (sections {} and {})", *symtab_, i);
      symtab_ = i;
    }
  }
  if (!symtab_)
    return;
  for (std::size_t i = 1; i < sections_.size(); ++i)
    if (sections_[i].shdr.sh_type == SHT_SYMTAB_SHNDX && sections_[i].shdr.sh_link == *symtab_)
      shndxTable = i;

  const GElf_Shdr &symhdr = sections_[*symtab_].shdr;
  const std::size_t entsize = gelf_fsize(elf_.get(), ELF_T_SYM, 1, EV_CURRENT);
  if (symhdr.sh_entsize != entsize)
    fail("symbol table: sh_entsize {} (expected {})", symhdr.sh_entsize, entsize);
  if (sections_[symhdr.sh_link].shdr.sh_type != SHT_STRTAB)
    fail("symbol table: string table (section {}) is not SHT_STRTAB", symhdr.sh_link);
  Elf_Data *syms = data(*symtab_);
  Elf_Data *xndx = shndxTable ? data(*shndxTable) : nullptr;
  const std::size_t count = syms ? syms->d_size / entsize : 0;
  if (symhdr.sh_info > count)
    fail("symbol table: first global {} past the last symbol {}", symhdr.sh_info, count);

  symbols_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    Symbol &s = symbols_[i];
    Elf32_Word extended = 0;
    if (!gelf_getsymshndx(syms, xndx, static_cast<int>(i), &s.sym, &extended))
      fail("cannot read symbol {}: {}", i, elf_errmsg(-1));
    s.shndx = s.sym.st_shndx == SHN_XINDEX ? extended : s.sym.st_shndx;
    if (s.inSection() && s.shndx >= sections_.size())
      fail("symbol {}: section index {} out of range ({} sections)", i, s.shndx, sections_.size());
    const char *name = elf_strptr(elf_.get(), symhdr.sh_link, s.sym.st_name);
    if (!name)
      fail("symbol {}: name offset {:#x} outside the string table", i, s.sym.st_name);
    s.name = name;
    if (s.name.empty() && s.type() == STT_SECTION && s.inSection())
      s.name = sections_[s.shndx].name;
  }

  // Per-section index by address, so that locate() is a binary search: the guest generator builds
  // objects with tens of thousands of functions.
  for (std::size_t i = 1; i < count; ++i) {
    const Symbol &s = symbols_[i];
    if (s.inSection() && !s.name.empty() && (s.type() == STT_FUNC || s.type() == STT_NOTYPE))
      bySection_[s.shndx].push_back(i);
  }
  for (auto &list : bySection_)
    std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      const Symbol &x = symbols_[a], &y = symbols_[b];
      if (x.sym.st_value != y.sym.st_value)
        return x.sym.st_value < y.sym.st_value;
      if (symbolRank(x) != symbolRank(y))
        return symbolRank(x) < symbolRank(y);
      return a < b;
    });
}

Elf_Data *ElfRelocatable::data(std::size_t section) const {
  Elf_Data *d = elf_getdata(sections_.at(section).scn, nullptr);
  if (!d && sections_[section].shdr.sh_size != 0)
    fail("cannot read section {} ({}): {}", section, sections_[section].name, elf_errmsg(-1));
  return d;
}

std::vector<ElfRelocatable::Relocation> ElfRelocatable::relocations(std::size_t relSection) const {
  const Section &rs = sections_.at(relSection);
  const bool rela = rs.shdr.sh_type == SHT_RELA;
  FTSIM_ASSERT(rela || rs.shdr.sh_type == SHT_REL);
  if (!symtab_ || rs.shdr.sh_link != *symtab_)
    fail("relocation section {} ({}) does not refer to the symbol table", relSection, rs.name);
  const std::size_t entsize = gelf_fsize(elf_.get(), rela ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);
  if (rs.shdr.sh_entsize != entsize)
    fail("relocation section {} ({}): sh_entsize {} (expected {})", relSection, rs.name,
         rs.shdr.sh_entsize, entsize);
  const GElf_Shdr &target = sections_[rs.shdr.sh_info].shdr;
  Elf_Data *d = data(relSection);
  const std::size_t count = d ? d->d_size / entsize : 0;

  std::vector<Relocation> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    Relocation r{};
    GElf_Xword info = 0;
    if (rela) {
      GElf_Rela e;
      if (!gelf_getrela(d, static_cast<int>(i), &e))
        fail("{}: cannot read relocation {}: {}", rs.name, i, elf_errmsg(-1));
      r.offset = e.r_offset;
      r.addend = e.r_addend;
      info = e.r_info;
    } else {
      GElf_Rel e;
      if (!gelf_getrel(d, static_cast<int>(i), &e))
        fail("{}: cannot read relocation {}: {}", rs.name, i, elf_errmsg(-1));
      r.offset = e.r_offset;
      info = e.r_info;
    }
    r.type = static_cast<std::uint32_t>(GELF_R_TYPE(info));
    r.symbol = GELF_R_SYM(info);
    if (r.symbol >= symbols_.size())
      fail("{}: relocation {} refers to symbol {} but there are {}", rs.name, i, r.symbol,
           symbols_.size());
    if (r.offset >= target.sh_size)
      fail("{}: relocation {} at offset {:#x} is outside its section ({:#x} bytes)", rs.name, i,
           r.offset, target.sh_size);
    out.push_back(r);
  }
  return out;
}

ElfRelocatable::Location ElfRelocatable::locate(std::size_t section, std::uint64_t offset) const {
  const std::vector<std::size_t> &list = bySection_.at(section);
  auto end =
      std::upper_bound(list.begin(), list.end(), offset, [&](std::uint64_t off, std::size_t i) {
        return off < symbols_[i].sym.st_value;
      });
  if (end == list.begin())
    return {sections_[section].name, offset};
  // Walk back from the last symbol at or below `offset`. Within one address the list is sorted best
  // rank first, so walking back the last covering function seen is the best named. Functions do
  // not overlap, so the first sized function that does not cover `offset` ends the search.
  std::optional<std::size_t> covering;
  for (auto it = end; it != list.begin();) {
    const Symbol &s = symbols_[*--it];
    if (covering && s.sym.st_value != symbols_[*covering].sym.st_value)
      break;
    if (s.type() == STT_FUNC && offset < s.sym.st_value + s.sym.st_size)
      covering = *it;
    else if (!covering && s.type() == STT_FUNC && s.sym.st_size != 0)
      break;
  }
  // Otherwise (code without sized function symbols, e.g. assembly) the nearest preceding symbol.
  const std::uint64_t nearest = symbols_[*std::prev(end)].sym.st_value;
  const std::size_t chosen =
      covering ? *covering
               : *std::lower_bound(list.begin(), end, nearest, [&](std::size_t i, std::uint64_t v) {
                   return symbols_[i].sym.st_value < v;
                 });
  const Symbol &s = symbols_[chosen];
  return {s.name, offset - s.sym.st_value};
}

} // namespace ftsim::arch
