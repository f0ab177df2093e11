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

// The instructions that write the MSR: mtmsr, mtmsrd, wrtee, wrteei (primary opcode 31) and the
// interrupt returns rfi, rfid, rfci, rfmci, hrfid (19). An interrupt a step raises (sc, tw) or a
// fault the machine sees for itself. Besides the interrupt-enable bit, MSR[SE]: the machine sets
// the trace flag again after any of these.
bool irqFlagMayChange(const std::uint8_t *b) {
  const std::uint32_t word = ppc32::wordOf(std::span(b, 4));
  const std::uint32_t xo = (word >> 1) & 0x3ff;
  switch (word >> 26) {
  case 31:
    return xo == 146 || xo == 178 || xo == 131 || xo == 163;
  case 19:
    return xo == 50 || xo == 18 || xo == 51 || xo == 38 || xo == 274;
  default:
    return false;
  }
}

std::uint64_t returnAddress(const GuestAbi &abi, GuestContext &ctx) { return ctx.reg(abi.linkReg); }

// No powerpc instruction raises the trace interrupt itself.
bool raisesTraceIntno(const std::uint8_t *) { return false; }

// mfmsr rD (X-form, primary opcode 31, extended 83) copies the MSR into rD.
void hideTraceFlag(const std::uint8_t *b, GuestContext &ctx, std::uint64_t bit) {
  const std::uint32_t word = ppc32::wordOf(std::span(b, 4));
  if ((word & 0xfc0007feu) != 0x7c0000a6u)
    return;
  const int rd = UC_PPC_REG_0 + static_cast<int>((word >> 21) & 31);
  ctx.setReg(rd, ctx.reg(rd) & ~bit);
}

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
      // Steps by MSR[SE] (the trace interrupt, 68, after one instruction). Unicorn 2.0.1 leaves the
      // pc one instruction past the next after it (bare Unicorn: after `li r3,1` at 0x10000, pc
      // 0x10008; after `b` to 0x1000c, 0x10010), which the machine's calibration measures.
      UC_PPC_REG_MSR,
      0x400, // MSR[SE]
      68,
      raisesTraceIntno,
      hideTraceFlag,
      {0x38, 0x63, 0x00, 0x01}, // addi r3,r3,1
      nullptr,
      nullptr,
  };
  return abi;
}

} // namespace ftsim::arch
