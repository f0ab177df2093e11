#include "Ppc32Code.h"

#include <fmt/format.h>

namespace ftsim::arch::ppc32 {
namespace {

constexpr std::uint32_t kOpcodeMask = 0xfc000000u;
constexpr std::uint32_t kBranchOpcode = 18u << 26;
constexpr std::uint32_t kLisR12 = 0x3d800000;     // addis r12,0,hi
constexpr std::uint32_t kAddiR12R12 = 0x398c0000; // addi r12,r12,lo
constexpr std::uint32_t kMtctrR12 = 0x7d8903a6;   // mtctr r12
constexpr std::uint32_t kBctr = 0x4e800420;       // bctr

} // namespace

Bytes wordBytes(std::uint32_t word) {
  return {static_cast<std::uint8_t>(word >> 24), static_cast<std::uint8_t>(word >> 16),
          static_cast<std::uint8_t>(word >> 8), static_cast<std::uint8_t>(word)};
}

std::uint32_t wordOf(std::span<const std::uint8_t> bytes) {
  return static_cast<std::uint32_t>(bytes[0]) << 24 | static_cast<std::uint32_t>(bytes[1]) << 16 |
         static_cast<std::uint32_t>(bytes[2]) << 8 | static_cast<std::uint32_t>(bytes[3]);
}

bool isPatchClass(std::uint32_t word) {
  // Book II, "Concurrent Modification and Execution of Instructions": the patch class is the
  // I-form branch (b[l][a]) and the preferred no-op (ori 0,0,0). AA=1 absolute branches are I-form
  // too; ftrace never writes them but they are in the class.
  return word == kNop || (word & kOpcodeMask) == kBranchOpcode;
}

bool isBl(std::uint32_t word) { return (word & 0xfc000003u) == (kBranchOpcode | 1u); }

std::optional<std::uint64_t> branchTarget(std::uint64_t site, std::uint32_t word) {
  if ((word & kOpcodeMask) != kBranchOpcode)
    return std::nullopt;
  std::uint32_t li = word & 0x03fffffcu;
  if (li & 0x02000000u)
    li |= 0xfc000000u; // sign-extend the 26-bit offset
  const std::uint32_t base = (word & 2u) ? 0u : static_cast<std::uint32_t>(site);
  return static_cast<std::uint32_t>(base + li);
}

EncodeResult longBranchStub(std::uint64_t target) {
  if (target % 4 != 0 || target > 0xffffffffu)
    return {{},
            false,
            fmt::format("long-branch target {:#x} is not a word-aligned 32-bit address", target)};
  const auto t = static_cast<std::uint32_t>(target);
  // PPC_HA(): addi sign-extends its 16-bit immediate, so the high half absorbs the carry.
  const std::uint32_t ha = ((t + 0x8000u) >> 16) & 0xffffu;
  const std::uint32_t lo = t & 0xffffu;
  Bytes out;
  for (std::uint32_t w : {kLisR12 | ha, kAddiR12R12 | lo, kMtctrR12, kBctr}) {
    Bytes b = wordBytes(w);
    out.insert(out.end(), b.begin(), b.end());
  }
  return {std::move(out), true, {}};
}

std::optional<std::uint64_t> longBranchTarget(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kLongBranchStubSize)
    return std::nullopt;
  const std::uint32_t lis = wordOf(bytes.subspan(0, 4)), addi = wordOf(bytes.subspan(4, 4));
  if ((lis & 0xffff0000u) != kLisR12 || (addi & 0xffff0000u) != kAddiR12R12 ||
      wordOf(bytes.subspan(8, 4)) != kMtctrR12 || wordOf(bytes.subspan(12, 4)) != kBctr)
    return std::nullopt;
  const auto lo = static_cast<std::int32_t>(static_cast<std::int16_t>(addi & 0xffffu));
  return static_cast<std::uint32_t>((lis & 0xffffu) << 16) + static_cast<std::uint32_t>(lo);
}

std::vector<PatchRequest> tocSiteDisable(std::uint64_t site, std::uint32_t blWord,
                                         TocSiteDisable variant) {
  if (variant == TocSiteDisable::BranchOver)
    return {{site, wordBytes(blWord), wordBytes(kBranchOver8)}};
  return {{site, wordBytes(blWord), wordBytes(kNop)},
          {site + 4, wordBytes(kRestoreR30), wordBytes(kNop)}};
}

} // namespace ftsim::arch::ppc32
