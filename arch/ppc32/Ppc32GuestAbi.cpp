// How the simulator runs ppc32 guest code (GuestAbi.h).

#include "Ppc32Code.h"
#include "Ppc32Target.h"

#include <unicorn/unicorn.h>

namespace ftsim::arch {
namespace {

bool serialising(const std::uint8_t *b) {
  const std::uint32_t word = ppc32::wordOf(std::span(b, 4));
  // isync and rfi are context synchronising (Power ISA book II 1.7, book III 1.5).
  return word == 0x4c00012c || word == 0x4c000064;
}

// Reading the MSR costs Unicorn nothing: it is read after every step.
bool irqFlagMayChange(const std::uint8_t *) { return true; }

std::uint64_t returnAddress(const GuestAbi &abi, GuestContext &ctx) { return ctx.reg(abi.linkReg); }

} // namespace

const GuestAbi &ppc32GuestAbi() {
  static const GuestAbi abi{
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
      serialising,
      returnAddress,
      UC_PPC_REG_MSR,
      0x8000, // MSR[EE]
      irqFlagMayChange,
      UC_PPC_REG_2,
      {UC_PPC_REG_0,   UC_PPC_REG_1,  UC_PPC_REG_2,  UC_PPC_REG_3,  UC_PPC_REG_4,   UC_PPC_REG_5,
       UC_PPC_REG_6,   UC_PPC_REG_7,  UC_PPC_REG_8,  UC_PPC_REG_9,  UC_PPC_REG_10,  UC_PPC_REG_11,
       UC_PPC_REG_12,  UC_PPC_REG_13, UC_PPC_REG_14, UC_PPC_REG_15, UC_PPC_REG_16,  UC_PPC_REG_17,
       UC_PPC_REG_18,  UC_PPC_REG_19, UC_PPC_REG_20, UC_PPC_REG_21, UC_PPC_REG_22,  UC_PPC_REG_23,
       UC_PPC_REG_24,  UC_PPC_REG_25, UC_PPC_REG_26, UC_PPC_REG_27, UC_PPC_REG_28,  UC_PPC_REG_29,
       UC_PPC_REG_30,  UC_PPC_REG_31, UC_PPC_REG_PC, UC_PPC_REG_LR, UC_PPC_REG_CTR, UC_PPC_REG_CR,
       UC_PPC_REG_XER, UC_PPC_REG_MSR},
      // No trace-flag stepping. With MSR[SE] set, Unicorn 2.0.1 raises its trace interrupt (68)
      // after one instruction but leaves the pc one instruction further on (tried in bare
      // Unicorn: after `li r3,1` at 0x10000, pc 0x10008), so powerpc steps keep the count.
      -1,
      0,
      0,
      nullptr,
      nullptr,
  };
  return abi;
}

} // namespace ftsim::arch
