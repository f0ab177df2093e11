#pragma once
// struct pt_regs on the guest stack (saved by ftrace_regs_caller) seen as a GuestContext, for the
// targets' FtraceTrampolines::ptRegs: pc()/setPc() are regs->ip, sp() the saved stack pointer,
// reg() a saved register (the cpu's own for a register pt_regs has no slot for). Slots are words of
// the Arch's size and byte order.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"

#include <cstdint>
#include <span>

namespace ftsim::arch {

struct PtRegsLayout {
  int pc = 0; // offset of the instruction pointer's slot
  int sp = 0; // offset of the stack pointer's slot
  // Offset of a Unicorn register's slot, -1 when pt_regs has none.
  int (*slotOf)(int ucRegId) = nullptr;
};

class PtRegsContext final : public GuestContext {
public:
  PtRegsContext(const Arch &arch, const PtRegsLayout &layout, GuestContext &cpu, std::uint64_t regs)
      : arch_(arch), layout_(layout), cpu_(cpu), regs_(regs) {}
  unsigned cpu() const override { return cpu_.cpu(); }
  int task() const override { return cpu_.task(); }
  std::uint64_t pc() const override { return load(layout_.pc); }
  void setPc(std::uint64_t pc) override { store(layout_.pc, pc); }
  std::uint64_t sp() const override { return load(layout_.sp); }
  void setSp(std::uint64_t sp) override { store(layout_.sp, sp); }
  std::uint64_t reg(int ucRegId) const override;
  void setReg(int ucRegId, std::uint64_t value) override;
  bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const override {
    return cpu_.readMemory(addr, out);
  }
  bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    return cpu_.writeMemory(addr, bytes);
  }

private:
  std::uint64_t load(int off) const;
  void store(int off, std::uint64_t v);

  const Arch &arch_;
  PtRegsLayout layout_;
  GuestContext &cpu_;
  std::uint64_t regs_;
};

} // namespace ftsim::arch
