// Loading a linked guest image (ET_EXEC) with libelf. Every field read from the file is checked
// against the file's size before use: a malformed or truncated image is a FatalError naming the
// file, never a crash.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/InputFile.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace ftsim::arch {
namespace {

// What the loadable segments may take in memory, together: each is allocated and zero-filled.
constexpr std::uint64_t kMaxImageSize = 1ull << 30;

struct ElfCloser {
  void operator()(Elf *e) const { elf_end(e); }
};

std::uint64_t readWord(const Arch &arch, const std::uint8_t *p) {
  return loadInteger(arch.endian(), std::span(p, arch.wordSize()));
}

// The file in memory and libelf's view of it.
struct ElfFile {
  std::string path;
  std::string bytes;
  std::unique_ptr<Elf, ElfCloser> elf;
};

// The file as an ELF executable of a registered ISA (the image's arch).
const Arch &openElf(ElfFile &f) {
  const std::string &path = f.path;
  f.bytes = readInputFile(path, "ELF image", kMaxElfFileBytes);
  if (elf_version(EV_CURRENT) == EV_NONE)
    FTSIM_PANIC("libelf initialisation failed: {}", elf_errmsg(-1));
  if (f.bytes.size() < EI_NIDENT || std::memcmp(f.bytes.data(), ELFMAG, SELFMAG) != 0)
    fatal("{}: not an ELF file", path);
  f.elf.reset(elf_memory(f.bytes.data(), f.bytes.size()));
  if (!f.elf || elf_kind(f.elf.get()) != ELF_K_ELF)
    fatal("{}: not an ELF file ({})", path, elf_errmsg(-1));
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(f.elf.get(), &ehdr))
    fatal("{}: truncated or malformed ELF header ({})", path, elf_errmsg(-1));
  const int elfClass = gelf_getclass(f.elf.get());
  const Arch *arch = archByElf(ehdr.e_machine, static_cast<unsigned>(elfClass));
  if (!arch)
    fatal("{}: unsupported machine {} (class {}); ftsim images are x86_64 or ppc32", path,
          ehdr.e_machine, elfClass);
  if (ehdr.e_type != ET_EXEC)
    fatal("{}: not a linked executable image (e_type {}); link objects first", path, ehdr.e_type);
  return *arch;
}

// The section header table and every section with bytes in the file lie inside the file, do not
// overlap, and have resolvable names; the image has a symbol table. A shifted or truncated table
// would otherwise read as garbage sections and boot an image with nothing in it.
void checkSections(const ElfFile &f) {
  const std::string &path = f.path;
  GElf_Ehdr ehdr;
  gelf_getehdr(f.elf.get(), &ehdr);
  std::size_t shnum = 0, shstrndx = 0;
  if (elf_getshdrnum(f.elf.get(), &shnum) != 0 || shnum == 0 || ehdr.e_shoff == 0)
    fatal("{}: no section header table", path);
  const bool is64 = gelf_getclass(f.elf.get()) == ELFCLASS64;
  const std::uint64_t entry = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
  const std::uint64_t header = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (ehdr.e_shentsize != entry)
    fatal("{}: section header entries of {} bytes (expected {})", path, ehdr.e_shentsize, entry);
  if (ehdr.e_shoff > f.bytes.size() || shnum > (f.bytes.size() - ehdr.e_shoff) / entry)
    fatal("{}: section header table extends past the end of the file (truncated?)", path);
  if (elf_getshdrstrndx(f.elf.get(), &shstrndx) != 0 || shstrndx == SHN_UNDEF || shstrndx >= shnum)
    fatal("{}: no valid section name table", path);
  struct Extent {
    std::uint64_t begin, end;
    std::size_t index;
  };
  std::vector<Extent> extents;
  bool symtab = false;
  for (std::size_t i = 1; i < shnum; ++i) {
    Elf_Scn *scn = elf_getscn(f.elf.get(), i);
    GElf_Shdr sh;
    if (!scn || !gelf_getshdr(scn, &sh))
      fatal("{}: section header {} is malformed ({})", path, i, elf_errmsg(-1));
    if (!elf_strptr(f.elf.get(), shstrndx, sh.sh_name))
      fatal("{}: section {} has a bad name offset", path, i);
    if (sh.sh_link >= shnum)
      fatal("{}: section {} links to section {} of {}", path, i, sh.sh_link, shnum);
    symtab |= sh.sh_type == SHT_SYMTAB;
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL || sh.sh_size == 0)
      continue;
    if (sh.sh_offset > f.bytes.size() || sh.sh_size > f.bytes.size() - sh.sh_offset)
      fatal("{}: section {} extends past the end of the file (truncated?)", path, i);
    if (sh.sh_offset < header)
      fatal("{}: section {} overlaps the ELF header", path, i);
    extents.push_back({sh.sh_offset, sh.sh_offset + sh.sh_size, i});
  }
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < extents.size(); ++i)
    if (extents[i - 1].end > extents[i].begin)
      fatal("{}: sections {} and {} overlap in the file", path, extents[i - 1].index,
            extents[i].index);
  if (!symtab)
    fatal("{}: no symbol table (a stripped image cannot be traced)", path);
}

// The PT_LOAD segments, sorted by address and not overlapping.
void loadSegments(const ElfFile &f, Image &image) {
  const std::string &path = f.path;
  std::size_t phnum = 0;
  if (elf_getphdrnum(f.elf.get(), &phnum) != 0)
    fatal("{}: malformed program header table ({})", path, elf_errmsg(-1));
  std::uint64_t memory = 0;
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(f.elf.get(), static_cast<int>(i), &ph))
      fatal("{}: program header {} is truncated ({})", path, i, elf_errmsg(-1));
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
      continue;
    if (ph.p_filesz > ph.p_memsz || ph.p_memsz > kMaxImageSize)
      fatal("{}: segment {} has impossible sizes (filesz {:#x}, memsz {:#x})", path, i, ph.p_filesz,
            ph.p_memsz);
    memory += ph.p_memsz;
    if (memory > kMaxImageSize)
      fatal("{}: loadable segments take more than {} MiB of memory together", path,
            kMaxImageSize >> 20);
    if (ph.p_offset > f.bytes.size() || ph.p_filesz > f.bytes.size() - ph.p_offset)
      fatal("{}: segment {} extends past the end of the file (truncated?)", path, i);
    ImageSegment seg;
    seg.addr = ph.p_vaddr;
    seg.executable = (ph.p_flags & PF_X) != 0;
    seg.writable = (ph.p_flags & PF_W) != 0;
    seg.name = seg.executable ? "text" : seg.writable ? "data" : "rodata";
    seg.bytes.assign(ph.p_memsz, 0);
    std::copy_n(f.bytes.data() + ph.p_offset, ph.p_filesz, seg.bytes.begin());
    image.segments.push_back(std::move(seg));
  }
  if (image.segments.empty())
    fatal("{}: no loadable segments", path);
  std::sort(image.segments.begin(), image.segments.end(),
            [](const ImageSegment &a, const ImageSegment &b) { return a.addr < b.addr; });
  for (std::size_t i = 1; i < image.segments.size(); ++i) {
    const auto &prev = image.segments[i - 1];
    if (prev.addr + prev.bytes.size() > image.segments[i].addr)
      fatal("{}: loadable segments overlap at {:#x}", path, image.segments[i].addr);
  }
}

// The named, defined symbols of one SHT_SYMTAB section.
void loadSymbolTable(const ElfFile &f, Elf_Scn *scn, const GElf_Shdr &sh, Image &image) {
  const std::string &path = f.path;
  if (sh.sh_entsize == 0 || sh.sh_offset > f.bytes.size() ||
      sh.sh_size > f.bytes.size() - sh.sh_offset)
    fatal("{}: symbol table extends past the end of the file (truncated?)", path);
  Elf_Data *data = elf_getdata(scn, nullptr);
  if (!data)
    fatal("{}: unreadable symbol table ({})", path, elf_errmsg(-1));
  const std::size_t count = sh.sh_size / sh.sh_entsize;
  for (std::size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym))
      fatal("{}: symbol {} is malformed ({})", path, i, elf_errmsg(-1));
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || sym.st_shndx == SHN_UNDEF)
      continue;
    const char *name = elf_strptr(f.elf.get(), sh.sh_link, sym.st_name);
    if (!name)
      fatal("{}: symbol {} has a bad name offset", path, i);
    if (*name == '\0')
      continue;
    ImageSymbol s;
    s.name = name;
    s.addr = sym.st_value;
    s.size = sym.st_size;
    s.function = type == STT_FUNC;
    s.weak = GELF_ST_BIND(sym.st_info) == STB_WEAK;
    s.local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
    image.symbols.push_back(std::move(s));
  }
}

// Symbols from .symtab, sorted by address then name.
void loadSymbols(const ElfFile &f, Image &image) {
  Elf_Scn *scn = nullptr;
  while ((scn = elf_nextscn(f.elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      fatal("{}: malformed section header ({})", f.path, elf_errmsg(-1));
    if (sh.sh_type == SHT_SYMTAB)
      loadSymbolTable(f, scn, sh, image);
  }
  std::sort(image.symbols.begin(), image.symbols.end(),
            [](const ImageSymbol &a, const ImageSymbol &b) {
              return a.addr != b.addr ? a.addr < b.addr : a.name < b.name;
            });
}

// Whether [addr, addr+size) lies in the part of a loadable segment read from the file.
bool inFileBytes(const ElfFile &f, std::uint64_t addr, std::uint64_t size) {
  std::size_t phnum = 0;
  elf_getphdrnum(f.elf.get(), &phnum);
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(f.elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD &&
        addr >= ph.p_vaddr && addr - ph.p_vaddr <= ph.p_filesz &&
        size <= ph.p_filesz - (addr - ph.p_vaddr))
      return true;
  }
  return false;
}

// The __mcount_loc table, delimited by the linker script's symbols (include/asm-generic/
// vmlinux.lds.h MCOUNT_REC()). It is data the linker wrote, so it lies in the file: a table in
// zero-filled memory (.bss) would only make boot allocate a record per zero word.
void loadMcountLocs(const ElfFile &f, Image &image) {
  const std::string &path = f.path;
  const Arch &arch = *image.arch;
  const ImageSymbol *start = image.findSymbol("__start_mcount_loc");
  const ImageSymbol *stop = image.findSymbol("__stop_mcount_loc");
  if (start && stop) {
    const unsigned word = arch.wordSize();
    if (stop->addr < start->addr || (stop->addr - start->addr) % word != 0)
      fatal("{}: __start_mcount_loc..__stop_mcount_loc is not a table of {}-byte entries", path,
            word);
    const ImageSegment *seg = image.segmentAt(start->addr, stop->addr - start->addr);
    if (!seg)
      fatal("{}: __mcount_loc table lies outside the loadable segments", path);
    if (!inFileBytes(f, start->addr, stop->addr - start->addr))
      fatal("{}: __mcount_loc table ({:#x} bytes) is not in the file's bytes of its segment", path,
            stop->addr - start->addr);
    for (std::uint64_t a = start->addr; a < stop->addr; a += word)
      image.mcountLocs.push_back(readWord(arch, seg->bytes.data() + (a - seg->addr)));
  } else if (start || stop) {
    fatal("{}: has only one of __start_mcount_loc / __stop_mcount_loc", path);
  } else {
    fatal("{}: no __mcount_loc table (__start_mcount_loc/__stop_mcount_loc): link the objects "
          "with an mcount table as vmlinux.lds does",
          path);
  }
}

// The profiling hook is the one the sites call: an image may define several (the x86 runtime has
// both __fentry__ and mcount), and only the compiler's choice tells which one boot must expect.
void findMcountHook(Image &image) {
  const Arch &arch = *image.arch;
  for (std::uint64_t site : image.mcountLocs) {
    std::uint8_t bytes[8] = {};
    if (site == 0 || !image.read(site, std::span(bytes, arch.siteSize())))
      continue;
    const auto target = arch.callTarget(site, std::span(bytes, arch.siteSize()));
    const ImageSymbol *hook = target ? image.symbolAt(*target) : nullptr;
    if (hook && hook->addr == *target && arch.isMcountSymbol(hook->name))
      image.mcountAddr = *target;
    break;
  }
}

} // namespace

Image loadImage(const std::string &path) {
  ElfFile f{path, {}, nullptr};
  Image image;
  image.arch = &openElf(f);
  image.name = path;
  checkSections(f);
  loadSegments(f, image);
  loadSymbols(f, image);
  loadMcountLocs(f, image);
  findMcountHook(image);
  return image;
}

} // namespace ftsim::arch
