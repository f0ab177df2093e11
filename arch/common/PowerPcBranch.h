#pragma once
// I-form branches shared by ppc32 and ppc64 (Power ISA v3.1, Book I, 2.4 "Branch Instructions"):
//   b/bl target: opcode 18, LI (24 bits, word offset, sign-extended), AA=0, LK=0/1.
// Reach: -0x2000000 .. +0x1fffffc bytes from the branch (+-32 MiB). Beyond that a long-branch stub
// is needed (arch/powerpc/kernel/module_32.c, dyn_arch_ftrace.mod).

#include "ftsim/arch/Arch.h"

#include <fmt/format.h>

namespace ftsim::arch::powerpc {

constexpr std::uint32_t kNop = 0x60000000;       // ori 0,0,0
constexpr std::uint32_t kTrap = 0x7fe00008;      // tw 31,0,0 (trap)
constexpr std::uint32_t kMflrR0 = 0x7c0802a6;    // mflr r0
constexpr std::uint32_t kStwR0_4R1 = 0x90010004; // stw r0,4(r1)
constexpr std::uint32_t kBranchOpcode = 18u << 26;
constexpr std::uint32_t kLink = 1;
constexpr std::int64_t kBranchMin = -0x2000000;
constexpr std::int64_t kBranchMax = 0x1fffffc;

inline Bytes wordBytes(std::uint32_t word) {
  return {static_cast<std::uint8_t>(word >> 24), static_cast<std::uint8_t>(word >> 16),
          static_cast<std::uint8_t>(word >> 8), static_cast<std::uint8_t>(word)};
}

inline std::uint32_t wordOf(std::span<const std::uint8_t> bytes) {
  return static_cast<std::uint32_t>(bytes[0]) << 24 | static_cast<std::uint32_t>(bytes[1]) << 16 |
         static_cast<std::uint32_t>(bytes[2]) << 8 | static_cast<std::uint32_t>(bytes[3]);
}

inline EncodeResult branch(std::uint64_t site, std::uint64_t target, bool link,
                           unsigned addressBits) {
  const std::uint64_t mask = addressBits == 64 ? ~0ull : (1ull << addressBits) - 1;
  // Offsets wrap at the address width: on ppc32 a branch from 0xfffffff0 to 0x10 is +0x20.
  std::int64_t delta = static_cast<std::int64_t>((target - site) & mask);
  if (addressBits < 64 && delta >= static_cast<std::int64_t>(1ull << (addressBits - 1)))
    delta -= static_cast<std::int64_t>(1ull << addressBits);
  if (delta % 4 != 0)
    return {{}, false, fmt::format("branch target 0x{:x} is not word aligned", target)};
  if (delta < kBranchMin || delta > kBranchMax)
    return {{},
            false,
            fmt::format("branch from 0x{:x} to 0x{:x} is {:+#x} bytes, outside the +-32 MiB reach "
                        "of the 24-bit LI field; a long-branch stub is needed",
                        site, target, delta)};
  const std::uint32_t li = static_cast<std::uint32_t>(delta) & 0x03fffffcu;
  return {wordBytes(kBranchOpcode | li | (link ? kLink : 0)), true, {}};
}

inline std::optional<std::uint64_t> blTarget(std::uint64_t site, std::span<const std::uint8_t> b,
                                             unsigned addressBits) {
  if (b.size() < 4)
    return std::nullopt;
  const std::uint32_t word = wordOf(b);
  if ((word & 0xfc000003u) != (kBranchOpcode | kLink))
    return std::nullopt;
  std::int64_t delta = word & 0x03fffffcu;
  if (delta & 0x02000000)
    delta -= 0x04000000;
  const std::uint64_t mask = addressBits == 64 ? ~0ull : (1ull << addressBits) - 1;
  return (site + static_cast<std::uint64_t>(delta)) & mask;
}

} // namespace ftsim::arch::powerpc
