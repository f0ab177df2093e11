// How the simulator runs x86-64 guest code (GuestAbi.h).

#include "X86_64Target.h"

#include <unicorn/unicorn.h>

namespace ftsim::arch {
namespace {

bool serialising(const std::uint8_t *b) {
  // Intel SDM vol. 3A 9.1.3 (cross-modifying code): a serialising instruction (cpuid) or an
  // exception return (iret) before executing modified code.
  if (b[0] == 0x0f && b[1] == 0xa2) // cpuid
    return true;
  if (b[0] == 0xcf) // iret
    return true;
  return b[0] == 0x48 && b[1] == 0xcf; // iretq
}

std::uint64_t returnAddress(const GuestAbi &, GuestContext &ctx) {
  std::uint8_t b[8];
  std::uint64_t ret = 0;
  if (ctx.readMemory(ctx.sp(), b))
    for (unsigned i = 0; i < 8; ++i)
      ret |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  return ret;
}

} // namespace

const GuestAbi &x86_64GuestAbi() {
  static const GuestAbi abi{
      UC_X86_REG_RIP,
      UC_X86_REG_RSP,
      UC_X86_REG_RDI,
      UC_X86_REG_RAX,
      -1,
      3,
      -1,
      {0x0f, 0x0b},
      0xffffffffa0000000ull,
      0xffffffffc0000000ull,
      0x8000000000000001ull,
      serialising,
      returnAddress,
      UC_X86_REG_EFLAGS,
      0x200, // EFLAGS.IF
      UC_X86_REG_GS_BASE,
      {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX,    UC_X86_REG_RDX,     UC_X86_REG_RSI,
       UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP,    UC_X86_REG_R8,      UC_X86_REG_R9,
       UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12,    UC_X86_REG_R13,     UC_X86_REG_R14,
       UC_X86_REG_R15, UC_X86_REG_RIP, UC_X86_REG_EFLAGS, UC_X86_REG_GS_BASE, UC_X86_REG_FS_BASE},
  };
  return abi;
}

} // namespace ftsim::arch
