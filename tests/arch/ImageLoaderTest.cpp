// Loading linked images: the built-in ones load with their tables; malformed or truncated files are
// one FatalError naming the file, never a crash.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/RecordMcount.h"

#include <gtest/gtest.h>

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
  const std::string path = std::filesystem::temp_directory_path() / "ftsim-image-corrupt.elf";
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
  std::filesystem::remove(path);
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
  const std::string path = std::filesystem::temp_directory_path() / "ftsim-image-shoff.elf";
  for (const std::uint64_t moved : {std::uint64_t(good.size() + 64), std::uint64_t(good.size() - 8),
                                    shoff + 8, shoff - 8, shoff + 24, shoff - 0x1000}) {
    writeAll(path, withField64(good, 0x28, moved));
    const std::string error = loadError(path);
    EXPECT_NE(error.find(path), std::string::npos) << "e_shoff " << moved << ": " << error;
  }
  std::filesystem::remove(path);
}

TEST(ImageLoader, OnlyRegularFilesAreRead) {
  EXPECT_NE(loadError("/dev/zero").find("/dev/zero: is a device, not a regular file"),
            std::string::npos)
      << loadError("/dev/zero");
  const std::string dir = std::filesystem::temp_directory_path();
  EXPECT_NE(loadError(dir).find("is a directory"), std::string::npos);
}
