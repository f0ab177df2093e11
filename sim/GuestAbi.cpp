#include "GuestAbi.h"

#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

namespace ftsim::sim {

namespace {

bool x86Serialising(const std::uint8_t *b) {
  // Intel SDM vol. 3A 9.1.3 (cross-modifying code): a serialising instruction (cpuid) or an
  // exception return (iret) before executing modified code.
  if (b[0] == 0x0f && b[1] == 0xa2) // cpuid
    return true;
  if (b[0] == 0xcf) // iret
    return true;
  return b[0] == 0x48 && b[1] == 0xcf; // iretq
}

bool ppcSerialising(const std::uint8_t *b) {
  std::uint32_t word =
      (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  // isync and rfi are context synchronising (Power ISA book II 1.7, book III 1.5).
  return word == 0x4c00012c || word == 0x4c000064;
}

const GuestAbi kX86_64{
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
    x86Serialising,
};

const GuestAbi kPpc32{
    UC_PPC_REG_PC,
    UC_PPC_REG_1,
    UC_PPC_REG_3,
    UC_PPC_REG_3,
    UC_PPC_REG_LR,
    6,
    96,
    {0x00, 0x00, 0x00, 0x00},
    // book3s/32 MODULES_VADDR = PAGE_OFFSET - 256 MiB: more than 32 MiB from kernel text, so
    // calls from text into trampolines need long-branch stubs, as on real hardware.
    0xb0000000ull,
    0xd0000000ull,
    0x100000001ull,
    ppcSerialising,
};

} // namespace

const GuestAbi &guestAbi(const arch::Arch &arch) {
  if (arch.name() == "x86_64")
    return kX86_64;
  if (arch.name() == "ppc32")
    return kPpc32;
  fatal("architecture '{}' cannot be executed by the simulator (Unicorn 2.0.1 runs x86_64 and "
        "32-bit big-endian powerpc only)",
        arch.name());
}

} // namespace ftsim::sim
