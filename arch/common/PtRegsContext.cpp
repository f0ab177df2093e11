#include "PtRegsContext.h"

#include "ftsim/arch/Error.h"

namespace ftsim::arch {

std::uint64_t PtRegsContext::reg(int ucRegId) const {
  if (int off = layout_.slotOf(ucRegId); off >= 0)
    return load(off);
  return cpu_.reg(ucRegId);
}

void PtRegsContext::setReg(int ucRegId, std::uint64_t value) {
  const int off = layout_.slotOf(ucRegId);
  if (off < 0)
    FTSIM_PANIC("pt_regs has no slot for unicorn register {}", ucRegId);
  store(off, value);
}

std::uint64_t PtRegsContext::load(int off) const {
  std::uint8_t b[8] = {};
  const unsigned n = arch_.wordSize();
  if (!cpu_.readMemory(regs_ + off, std::span(b, n)))
    FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
  return loadInteger(arch_.endian(), std::span<const std::uint8_t>(b, n));
}

void PtRegsContext::store(int off, std::uint64_t v) {
  std::uint8_t b[8];
  const unsigned n = arch_.wordSize();
  storeInteger(arch_.endian(), v, std::span(b, n));
  if (!cpu_.writeMemory(regs_ + off, std::span<const std::uint8_t>(b, n)))
    FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
}

} // namespace ftsim::arch
