#pragma once
// A relocatable ELF object (ET_REL) read whole into memory through libelf and checked before use,
// so that the code walking it (RecordMcount.cpp) can index sections, symbols and relocations
// without re-validating: every inconsistency of the input is a FatalError naming the file, never a
// crash. Private to ftsim::arch; linked images are read by ElfFile.h instead.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/OneLine.h"

#include <gelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::arch {

class ElfRelocatable {
public:
  struct Symbol {
    GElf_Sym sym{};
    std::string name;    // a section symbol without a name takes its section's name
    std::size_t shndx{}; // st_shndx, resolved through SHT_SYMTAB_SHNDX when it is SHN_XINDEX
    unsigned bind() const { return GELF_ST_BIND(sym.st_info); }
    unsigned type() const { return GELF_ST_TYPE(sym.st_info); }
    // Defined in a real section (not undefined, absolute or common).
    bool inSection() const { return shndx != SHN_UNDEF && shndx < SHN_LORESERVE; }
  };
  struct Relocation {
    std::uint64_t offset;
    std::uint32_t type;
    std::size_t symbol;  // index into symbols()
    std::int64_t addend; // r_addend, or the implicit addend read from the target for SHT_REL
  };
  struct Section {
    GElf_Shdr shdr{};
    std::string name;
    Elf_Scn *scn = nullptr;
  };
  // Where an offset of a section falls: the function symbol containing it, else the nearest
  // preceding named symbol, else the section itself.
  struct Location {
    std::string symbol;
    std::uint64_t offset;
  };

  // Reads and checks the whole file. Throws FatalError naming `path`.
  explicit ElfRelocatable(std::string path);
  ~ElfRelocatable() = default;
  ElfRelocatable(const ElfRelocatable &) = delete;
  ElfRelocatable &operator=(const ElfRelocatable &) = delete;

  const std::string &path() const { return path_; }
  const Arch &arch() const { return *arch_; }
  Elf *elf() const { return elf_.get(); }
  const GElf_Ehdr &ehdr() const { return ehdr_; }
  const std::vector<std::uint8_t> &fileBytes() const { return bytes_; }

  const std::vector<Section> &sections() const { return sections_; }
  std::size_t shstrndx() const { return shstrndx_; }
  // Index of the SHT_SYMTAB section, if the object has one.
  std::optional<std::size_t> symtabIndex() const { return symtab_; }
  const std::vector<Symbol> &symbols() const { return symbols_; }

  // The section's data in memory representation (libelf has converted byte order). Throws
  // FatalError when libelf cannot read it.
  Elf_Data *data(std::size_t section) const;
  // The relocations of a SHT_REL or SHT_RELA section whose sh_link is the symbol table, with every
  // symbol index and offset checked against the symbol table and the target section.
  std::vector<Relocation> relocations(std::size_t relSection) const;
  Location locate(std::size_t section, std::uint64_t offset) const;

  // Throws FatalError "<path>: <message>", on one line whatever names the file holds.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) const {
    throw FatalError(
        oneLine(fmt::format("{}: {}", path_, fmt::format(format, std::forward<Args>(args)...))));
  }

private:
  void checkHeader();
  void readSections();
  void readSymbols();
  // The entry size the gABI fixes for a table section type; 0 for other types.
  std::size_t tableEntrySize(unsigned type) const;

  std::string path_;
  std::vector<std::uint8_t> bytes_;
  // Owned through a deleter so that a constructor that fails half way still ends it.
  struct ElfEnd {
    void operator()(Elf *elf) const { elf_end(elf); }
  };
  std::unique_ptr<Elf, ElfEnd> elf_;
  GElf_Ehdr ehdr_{};
  const Arch *arch_ = nullptr;
  std::vector<Section> sections_;
  std::size_t shstrndx_ = 0;
  std::optional<std::size_t> symtab_;
  std::vector<Symbol> symbols_;
  // Per section, the named function and label symbols sorted by (address, symbolRank, index).
  std::vector<std::vector<std::size_t>> bySection_;
};

} // namespace ftsim::arch
