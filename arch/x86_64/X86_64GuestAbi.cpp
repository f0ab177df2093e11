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

bool irqFlagMayChange(const std::uint8_t *b) {
  // Past the legacy prefixes and a REX prefix (an instruction is at most 15 bytes).
  unsigned i = 0;
  while (i < 13) {
    const std::uint8_t p = b[i];
    const bool legacy = p == 0xf0 || p == 0xf2 || p == 0xf3 || p == 0x2e || p == 0x36 ||
                        p == 0x3e || p == 0x26 || p == 0x64 || p == 0x65 || p == 0x66 || p == 0x67;
    if (!legacy && (p & 0xf0) != 0x40)
      break;
    ++i;
  }
  switch (b[i]) {
  case 0xfa: // cli
  case 0xfb: // sti
  case 0x9d: // popf
  case 0xcf: // iret
  case 0xcc: // int3, int n, into, int1: through an interrupt gate
  case 0xcd:
  case 0xce:
  case 0xf1:
    return true;
  case 0x0f:
    // syscall (RFLAGS masked), sysret (RFLAGS from r11), sysenter, sysexit, rsm.
    return b[i + 1] == 0x05 || b[i + 1] == 0x07 || b[i + 1] == 0x34 || b[i + 1] == 0x35 ||
           b[i + 1] == 0xaa;
  default:
    return false;
  }
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
      irqFlagMayChange,
      UC_X86_REG_GS_BASE,
      {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX,    UC_X86_REG_RDX,     UC_X86_REG_RSI,
       UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP,    UC_X86_REG_R8,      UC_X86_REG_R9,
       UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12,    UC_X86_REG_R13,     UC_X86_REG_R14,
       UC_X86_REG_R15, UC_X86_REG_RIP, UC_X86_REG_EFLAGS, UC_X86_REG_GS_BASE, UC_X86_REG_FS_BASE},
  };
  return abi;
}

} // namespace ftsim::arch
