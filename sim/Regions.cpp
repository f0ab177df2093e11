// Interrupt-off and non-preemptible regions (sim/README.md, "Regions"): guest-visible state of the
// running task — its interrupt-enable bit (x86 EFLAGS.IF, powerpc MSR[EE]) and the preempt count
// at the start of its thread area — which decides whether a CPU may be preempted (a timer
// interrupt: interrupts on and count 0) and whether it takes a pending IPI (interrupts on).

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::sim {

std::uint8_t *Machine::Impl::threadAreaHost(int task) {
  const std::uint64_t addr = state.tasks[task].info.threadArea;
  if (std::uint8_t *host = dataHost(addr, 4))
    return host;
  FTSIM_PANIC("thread area {:#x} is not mapped", addr);
}

std::uint32_t Machine::Impl::readPreemptCountFirst(int task) {
  if (threadHost.size() <= static_cast<std::size_t>(task))
    threadHost.resize(task + 1, nullptr);
  std::uint8_t *&host = threadHost[task];
  if (!host)
    host = threadAreaHost(task);
  return static_cast<std::uint32_t>(arch::loadInteger(endian, std::span(host, 4)));
}

void Machine::Impl::writePreemptCount(int task, std::uint32_t count) {
  arch::storeInteger(endian, count, std::span(threadAreaHost(task), 4));
}

void Machine::Impl::refreshRegions(unsigned cpu) {
  CpuState &cs = state.cpus[cpu];
  if (cs.current < 0) {
    cs.irqsOn = true;
    cs.preemptCount = 0;
    return;
  }
  cs.irqsOn = (readReg(cpu, abi.irqFlagsReg) & abi.irqEnableBit) != 0;
  cs.preemptCount = readPreemptCount(cs.current);
}

void Machine::Impl::markRegionChange(const CpuState &cs, EventRecord &rec) {
  rec.regionChange = true;
  rec.irqsOff = !cs.irqsOn;
  rec.preemptCount = static_cast<std::uint8_t>(std::min<std::uint32_t>(cs.preemptCount, 255));
}

bool Machine::preemptible(unsigned cpu) const { return impl_->state.cpus.at(cpu).preemptible(); }

bool Machine::interruptsEnabled(unsigned cpu) const {
  return impl_->state.cpus.at(cpu).takesInterrupts();
}

std::uint32_t Machine::preemptCount(unsigned cpu) const {
  return impl_->state.cpus.at(cpu).preemptCount;
}

} // namespace ftsim::sim
