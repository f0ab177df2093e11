// Interrupt context (sim/README.md, "Interrupt context"): a timer interrupt whose handler is guest
// code. The `Irq` event does what the hardware and the kernel's entry code do before the handler
// (save the interrupted registers, clear the interrupt-enable bit, call the handler on the task's
// stack); the ftsim_hc_irq_return stub, where the handler returns to, does what the exit path's
// iret / rfi does (restore them). Whatever the handler runs in between are ordinary events.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <cstring>

namespace ftsim::sim {

namespace {

// Below the interrupted frame, past the 128 bytes an x86-64 leaf may use without moving rsp (the
// red zone; the guest is built with -mno-red-zone, as the kernel is, so this is only a margin).
constexpr std::uint64_t kRedZone = 128;

} // namespace

bool Machine::Impl::enterInterrupt(unsigned cpu, EventRecord &rec) {
  CpuState &cs = state.cpus[cpu];
  TaskRecord &t = state.tasks[cs.current];
  const std::uint64_t word = arch.wordSize();
  const std::uint64_t interrupted = readReg(cpu, abi.spReg);
  std::uint64_t sp = (interrupted - kRedZone) & ~std::uint64_t{15};
  // x86: the return address on the stack, so that rsp+8 is 16-byte aligned at the handler's
  // entry; powerpc: an SVR4 frame header (back chain = the interrupted sp, then the LR save word
  // the handler's prologue writes) and the return address in LR.
  sp -= abi.linkReg < 0 ? word : 2 * word;
  const std::uint64_t value = abi.linkReg < 0 ? irqReturnStub : interrupted;
  std::uint8_t bytes[8] = {};
  arch::storeInteger(arch.endian(), value, std::span(bytes, word));
  std::uint8_t *stack = dataHost(sp, 2 * word);
  if (!stack) {
    guestFault(cpu, rec, cs.pc, "interrupt entry: the task's stack overflows");
    return false;
  }
  saveRegs(cpu, t.irqRegs);
  t.inIrq = true;
  std::memcpy(stack, bytes, word);
  writeReg(cpu, abi.spReg, sp);
  if (abi.linkReg >= 0)
    writeReg(cpu, abi.linkReg, irqReturnStub);
  writeReg(cpu, abi.irqFlagsReg, readReg(cpu, abi.irqFlagsReg) & ~abi.irqEnableBit);
  writeReg(cpu, abi.pcReg, timerHandler);
  cs.pc = timerHandler;
  rec.detail = timerHandler;
  rec.pcAfter = timerHandler;
  return true;
}

void Machine::Impl::returnFromInterrupt(unsigned cpu, EventRecord &rec, std::uint64_t trapAddr) {
  CpuState &cs = state.cpus[cpu];
  TaskRecord &t = state.tasks[cs.current];
  if (!t.inIrq) {
    guestFault(cpu, rec, trapAddr, "irq return outside a timer interrupt's handler");
    return;
  }
  loadRegs(cpu, t.irqRegs);
  t.inIrq = false;
  cs.pc = readReg(cpu, abi.pcReg);
  rec.outcome = StepOutcome::IrqReturn;
  rec.detail = cs.pc;
  rec.pcAfter = cs.pc;
  serialise(cpu); // iret / rfi
}

void Machine::setTimerHandler(std::uint64_t entry) {
  Impl &m = *impl_;
  if (entry && !m.textAt(entry))
    fatal("timer interrupt handler at {:#x} is not in text", entry);
  if (entry && !m.irqReturnStub)
    fatal("timer interrupt handler at {:#x}: bind the irq return stub (ftsim_hc_irq_return) first",
          entry);
  m.timerHandler = entry;
}

bool Machine::inInterrupt(unsigned cpu) const {
  const CpuState &cs = impl_->state.cpus.at(cpu);
  return cs.current >= 0 && impl_->state.tasks[cs.current].inIrq;
}

} // namespace ftsim::sim
