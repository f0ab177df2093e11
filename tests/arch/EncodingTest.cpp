// Golden encodings and decodings, read from corpora/encodings/ (data, not code).

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace ftsim;
using namespace ftsim::arch;

namespace {

std::vector<std::string> dataLines(const std::string &file) {
  std::ifstream in(std::string(FTSIM_CORPORA_DIR) + "/encodings/" + file);
  EXPECT_TRUE(in) << file;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      lines.push_back(line);
  return lines;
}

Bytes parseHex(std::istream &in) {
  Bytes out;
  for (std::string tok; in >> tok;)
    out.push_back(static_cast<std::uint8_t>(std::stoul(tok, nullptr, 16)));
  return out;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

} // namespace

TEST(Encoding, BranchesMatchGoldenData) {
  const auto lines = dataLines("branches.txt");
  ASSERT_GE(lines.size(), 10u);
  for (const auto &line : lines) {
    std::istringstream in(line);
    std::string archName, kind, siteText, targetText;
    in >> archName >> kind >> siteText >> targetText;
    const Arch &arch = archByName(archName);
    const std::uint64_t site = std::stoull(siteText, nullptr, 16);
    const std::uint64_t target = std::stoull(targetText, nullptr, 16);
    const EncodeResult r = kind == "call" ? arch.call(site, target) : arch.jump(site, target);
    std::string rest;
    std::getline(in, rest);
    if (trim(rest) == "error") {
      EXPECT_FALSE(r.ok) << line;
      EXPECT_TRUE(r.bytes.empty()) << line;
      EXPECT_FALSE(r.error.empty()) << line;
      continue;
    }
    std::istringstream hex(rest);
    EXPECT_TRUE(r.ok) << line << ": " << r.error;
    EXPECT_EQ(hexBytes(r.bytes), hexBytes(parseHex(hex))) << line;
    if (kind == "call") {
      EXPECT_EQ(arch.callTarget(site, r.bytes), target) << line;
    }
  }
}

TEST(Encoding, DecodingsMatchGoldenData) {
  const auto lines = dataLines("decode.txt");
  ASSERT_GE(lines.size(), 5u);
  for (const auto &line : lines) {
    const auto p1 = line.find('|'), p2 = line.find('|', p1 + 1);
    const Arch &arch = archByName(trim(line.substr(0, p1)));
    std::istringstream hex(line.substr(p1 + 1, p2 - p1 - 1));
    const Bytes bytes = parseHex(hex);
    EXPECT_EQ(describeBytes(arch, bytes, 0), trim(line.substr(p2 + 1))) << line;
  }
}

TEST(Encoding, NopAndTrapAreTheKernelsBytes) {
  EXPECT_EQ(hexBytes(archByName("x86_64").nop()), "0f 1f 44 00 00");
  EXPECT_EQ(hexBytes(archByName("x86_64").trap()), "cc");
  EXPECT_EQ(hexBytes(archByName("ppc32").nop()), "60 00 00 00");
  EXPECT_EQ(hexBytes(archByName("ppc32").trap()), "7f e0 00 08");
  EXPECT_EQ(archByName("ppc32").siteSize(), 4u);
  EXPECT_FALSE(archByName("ppc64").executable());
}

TEST(Encoding, UnknownArchIsAFatalErrorNamingIt) {
  try {
    archByName("mips");
    FAIL() << "expected FatalError";
  } catch (const FatalError &e) {
    EXPECT_NE(std::string(e.what()).find("'mips'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("x86_64"), std::string::npos);
  }
}

// loadInteger is one load and a byte swap: every size from 1 to 8 bytes, both byte orders, read
// back what storeInteger wrote and what the bytes spell.
TEST(ByteOrder, LoadIntegerReadsEverySizeInBothByteOrders) {
  const std::uint8_t bytes[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  for (std::size_t n = 1; n <= 8; ++n) {
    std::uint64_t little = 0, big = 0;
    for (std::size_t i = 0; i < n; ++i) {
      little |= std::uint64_t{bytes[i]} << (8 * i);
      big = big << 8 | bytes[i];
    }
    const std::span<const std::uint8_t> in(bytes, n);
    EXPECT_EQ(loadInteger(Endian::Little, in), little) << n;
    EXPECT_EQ(loadInteger(Endian::Big, in), big) << n;
    std::uint8_t out[8] = {};
    storeInteger(Endian::Big, big, std::span(out, n));
    EXPECT_TRUE(std::equal(out, out + n, bytes)) << n;
  }
  EXPECT_EQ(loadInteger(Endian::Big, {}), 0u);
}
