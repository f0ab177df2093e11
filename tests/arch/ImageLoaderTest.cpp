// Loading linked images: the built-in ones load with their tables; malformed or truncated files are
// one FatalError naming the file, never a crash.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/RecordMcount.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace ftsim;

namespace {

std::vector<char> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST(ImageLoader, BuiltInImagesHaveTextDataSymbolsAndTheirMcountTable) {
  for (const char *flavour : {"x86_64-fentry", "x86_64-mcount", "ppc32-mcount"}) {
    const arch::Image image =
        arch::loadImage(std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/kernel.elf");
    EXPECT_EQ(image.textStart(), arch::kernelTextBase(*image.arch)) << flavour;
    EXPECT_GT(image.textEnd(), image.textStart());
    // The linked table holds exactly what recordmcount put in the objects (objects.txt lists
    // them), no entry lost or duplicated by the link.
    std::ifstream objects(std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/objects.txt");
    std::size_t recorded = 0;
    for (std::string base; std::getline(objects, base);)
      recorded += arch::readMcountLoc(base + ".rec.o").size();
    EXPECT_GT(recorded, 30u);
    EXPECT_EQ(image.mcountLocs.size(), recorded) << flavour;
    for (std::uint64_t site : image.mcountLocs)
      EXPECT_TRUE(site >= image.textStart() && site < image.textEnd()) << std::hex << site;
    ASSERT_NE(image.findSymbol("schedule"), nullptr);
    EXPECT_EQ(image.symbolAt(image.findSymbol("schedule")->addr + 1)->name, "schedule");
    EXPECT_NE(image.findSymbol("ftsim_hc_exit"), nullptr);
  }
}

TEST(ImageLoader, CorruptOrTruncatedImagesAreFatalErrorsNamingTheFile) {
  const std::string source = std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf";
  const std::vector<char> good = readAll(source);
  ASSERT_GT(good.size(), 4096u);
  const ftsim::test::TempDir dir;
  const std::string path = dir / "corrupt.elf";
  std::size_t rejected = 0, accepted = 0;
  // Truncations at many sizes.
  for (std::size_t size = 0; size < good.size(); size += size < 256 ? 1 : 97) {
    writeAll(path, std::vector<char>(good.begin(), good.begin() + static_cast<long>(size)));
    try {
      arch::loadImage(path);
      ++accepted;
    } catch (const FatalError &e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // Every byte of the ELF and program headers flipped in turn.
  for (std::size_t i = 0; i < 64 + 56 * 3; ++i) {
    std::vector<char> bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0xff);
    writeAll(path, bad);
    try {
      arch::loadImage(path);
      ++accepted;
    } catch (const FatalError &e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(rejected, 300u);
  EXPECT_THROW(arch::loadImage("/nonexistent/kernel.elf"), FatalError);
}

namespace {

// The image with the 8-byte little-endian field at `offset` of its ELF header set to `value`.
std::vector<char> withField64(std::vector<char> bytes, std::size_t offset, std::uint64_t value) {
  for (unsigned i = 0; i < 8; ++i)
    bytes[offset + i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

std::string loadError(const std::string &path) {
  try {
    arch::loadImage(path);
  } catch (const FatalError &e) {
    return e.what();
  }
  return "";
}

} // namespace

// A section header table past the end of the file, or shifted off its entries, used to read as
// garbage sections and boot an empty kernel ("No functions to be traced?") with exit status 0.
TEST(ImageLoader, AMovedSectionHeaderTableIsRejectedNotBootedEmpty) {
  const std::vector<char> good =
      readAll(std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf");
  std::uint64_t shoff = 0;
  for (unsigned i = 0; i < 8; ++i)
    shoff |= static_cast<std::uint64_t>(static_cast<unsigned char>(good[0x28 + i])) << (8 * i);
  ASSERT_GT(shoff, 0u);
  const ftsim::test::TempDir dir;
  const std::string path = dir / "shoff.elf";
  for (const std::uint64_t moved : {std::uint64_t(good.size() + 64), std::uint64_t(good.size() - 8),
                                    shoff + 8, shoff - 8, shoff + 24, shoff - 0x1000}) {
    writeAll(path, withField64(good, 0x28, moved));
    const std::string error = loadError(path);
    EXPECT_NE(error.find(path), std::string::npos) << "e_shoff " << moved << ": " << error;
  }
}

TEST(ImageLoader, OnlyRegularFilesAreRead) {
  EXPECT_NE(loadError("/dev/zero").find("/dev/zero: is a device, not a regular file"),
            std::string::npos)
      << loadError("/dev/zero");
  const std::string dir = std::filesystem::temp_directory_path();
  EXPECT_NE(loadError(dir).find("is a directory"), std::string::npos);
}

namespace {

// The x86_64-fentry image with its program headers or symbols edited in place.
struct EditedImage {
  std::vector<char> bytes = readAll(std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf");
  Elf64_Ehdr ehdr = read<Elf64_Ehdr>(0);

  template <typename T> T read(std::uint64_t at) const {
    T value;
    std::memcpy(&value, bytes.data() + at, sizeof value);
    return value;
  }
  template <typename T> void write(std::uint64_t at, const T &value) {
    std::memcpy(bytes.data() + at, &value, sizeof value);
  }
  std::uint64_t phdr(unsigned i) const { return ehdr.e_phoff + i * sizeof(Elf64_Phdr); }
  // The file offset of the named symbol's Elf64_Sym.
  std::uint64_t symbol(const std::string &name) const {
    for (unsigned i = 1; i < ehdr.e_shnum; ++i) {
      const auto sh = read<Elf64_Shdr>(ehdr.e_shoff + i * sizeof(Elf64_Shdr));
      if (sh.sh_type != SHT_SYMTAB)
        continue;
      const auto strtab = read<Elf64_Shdr>(ehdr.e_shoff + sh.sh_link * sizeof(Elf64_Shdr));
      for (std::uint64_t at = sh.sh_offset; at < sh.sh_offset + sh.sh_size; at += sizeof(Elf64_Sym))
        if (name == bytes.data() + strtab.sh_offset + read<Elf64_Sym>(at).st_name)
          return at;
    }
    return 0;
  }
  std::string loadError(const std::string &path) const {
    writeAll(path, bytes);
    return ::loadError(path);
  }
};

} // namespace

// Sizes in an image are allocated: each bounded by the file or by a fixed budget, never by what
// the file claims alone (found by review while fuzzing with tests/fuzz ftsim_fuzz_image).
TEST(ImageLoader, SizesInTheFileNeverAllocateUnboundedly) {
  const ftsim::test::TempDir dir;
  const std::string path = dir / "sizes.elf";
  // Two segments of 600 MiB each: 1 GiB at most together (each alone was accepted).
  EditedImage big;
  ASSERT_GE(big.ehdr.e_phnum, 2);
  for (unsigned i = 0; i < 2; ++i)
    big.write(big.phdr(i) + offsetof(Elf64_Phdr, p_memsz), std::uint64_t{600} << 20);
  EXPECT_NE(big.loadError(path).find("take more than 1024 MiB of memory together"),
            std::string::npos)
      << big.loadError(path);

  // __mcount_loc stretched 16 MiB into zero-filled memory: 2M records of zeros for boot.
  EditedImage bss;
  const auto data = bss.read<Elf64_Phdr>(bss.phdr(1));
  bss.write(bss.phdr(1) + offsetof(Elf64_Phdr, p_memsz), data.p_memsz + (16 << 20));
  const std::uint64_t start = bss.symbol("__start_mcount_loc"),
                      stop = bss.symbol("__stop_mcount_loc");
  ASSERT_TRUE(start && stop);
  auto sym = bss.read<Elf64_Sym>(stop);
  sym.st_value = bss.read<Elf64_Sym>(start).st_value + (16 << 20);
  bss.write(stop, sym);
  EXPECT_NE(bss.loadError(path).find("__mcount_loc table (0x1000000 bytes) is not in the file"),
            std::string::npos)
      << bss.loadError(path);
}
