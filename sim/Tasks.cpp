// Registers, tasks and task switching: each task has its own stack and a Unicorn context image
// while it is off its CPU.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <bit>
#include <cstring>

namespace ftsim::sim {

std::uint64_t Machine::Impl::readReg(unsigned cpu, int id) const {
  std::uint64_t v = 0;
  check(uc_reg_read(cpus[cpu].uc, id, &v), "uc_reg_read");
  return guestValue(id, v);
}

void Machine::Impl::writeReg(unsigned cpu, int id, std::uint64_t v) {
  check(uc_reg_write(cpus[cpu].uc, id, &v), "uc_reg_write");
  if (id == abi.traceFlagReg)
    cpus[cpu].traceFlagKnown = false;
}

void Machine::Impl::setTraceFlag(unsigned cpu, bool on) {
  CpuRuntime &rt = cpus[cpu];
  std::uint64_t v = 0;
  check(uc_reg_read(rt.uc, abi.traceFlagReg, &v), "uc_reg_read");
  v = on ? v | abi.traceFlagBit : v & ~abi.traceFlagBit;
  check(uc_reg_write(rt.uc, abi.traceFlagReg, &v), "uc_reg_write");
  rt.traceFlag = on;
  rt.traceFlagKnown = true;
}

// Saved in place (savedContext): a fresh image takes its header from the CPU's scratch context.
void Machine::Impl::saveRegs(unsigned cpu, std::vector<std::uint8_t> &out) {
  if (out.size() != contextSize) {
    const auto *header = reinterpret_cast<const std::uint8_t *>(cpus[cpu].scratch);
    out.assign(header, header + contextSize);
  }
  check(uc_context_save(cpus[cpu].uc, savedContext(out)), "uc_context_save");
}

void Machine::Impl::loadRegs(unsigned cpu, const std::vector<std::uint8_t> &in) {
  FTSIM_ASSERT(in.size() == contextSize);
  check(uc_context_restore(cpus[cpu].uc, savedContext(in)), "uc_context_restore");
  cpus[cpu].traceFlagKnown = false;
}

// The next runnable task of `cpu` after the current one in run-queue order, the current one if
// it is the only runnable task, -1 if none.
int Machine::Impl::nextTask(unsigned cpu) const {
  const CpuState &cs = state.cpus[cpu];
  const auto &rq = cs.runqueue;
  std::size_t start = 0;
  for (std::size_t i = 0; i < rq.size(); ++i)
    if (rq[i] == cs.current)
      start = i + 1;
  for (std::size_t k = 0; k < rq.size(); ++k) {
    int t = rq[(start + k) % rq.size()];
    if (t != cs.current && state.tasks[t].info.state == TaskState::Runnable)
      return t;
  }
  if (cs.current >= 0 && state.tasks[cs.current].info.state == TaskState::Runnable)
    return cs.current;
  return -1;
}

void Machine::Impl::switchTo(unsigned cpu, int next) {
  CpuState &cs = state.cpus[cpu];
  ++cs.switches;
  if (next == cs.current)
    return;
  if (cs.current >= 0)
    saveRegs(cpu, state.tasks[cs.current].regs);
  cs.current = next;
  if (next >= 0) {
    loadRegs(cpu, state.tasks[next].regs);
    state.tasks[next].voluntarilyOff = false;
    cs.pc = readReg(cpu, abi.pcReg);
  }
  refreshRegions(cpu);
}

void Machine::Impl::stopTask(unsigned cpu, TaskState why) {
  CpuState &cs = state.cpus[cpu];
  TaskRecord &t = state.tasks[cs.current];
  t.info.state = why;
  --cs.runnable;
  switchTo(cpu, nextTask(cpu));
}

int Machine::addTask(const TaskSpec &spec) {
  Impl &m = *impl_;
  if (!m.exitStub)
    fatal("task '{}': bind the exit hypercall stub (ftsim_hc_exit) before adding tasks", spec.name);
  if (spec.cpu >= m.config.cpus)
    fatal("task '{}': CPU {} does not exist", spec.name, spec.cpu);
  if (m.state.tasks.size() >= m.config.maxTasks)
    fatal("task '{}': at most {} tasks", spec.name, m.config.maxTasks);
  const int id = static_cast<int>(m.state.tasks.size());
  // Each stack is its own mapping with an unmapped guard page below it.
  const std::uint64_t stride = m.config.stackSize + kPage;
  const std::uint64_t bottom = m.config.stackBase + id * stride + kPage;
  const std::uint64_t top = bottom + m.config.stackSize;
  bool mapped = false;
  for (const DataRegion &r : m.data)
    mapped |= r.base == bottom;
  if (!mapped)
    m.addDataRegion(bottom, m.config.stackSize, {});
  TaskRecord t;
  t.info.id = id;
  t.info.name = spec.name;
  t.info.cpu = spec.cpu;
  t.info.stackTop = top;
  t.info.idle = spec.idle;
  t.info.threadArea = bottom;
  CpuState &cs = m.state.cpus[spec.cpu];
  std::vector<std::uint8_t> saved;
  if (cs.current >= 0)
    m.saveRegs(spec.cpu, saved);
  const std::uint64_t word = m.arch.wordSize();
  std::uint64_t sp = 0;
  arch::Bytes frame(word * 2, 0);
  if (m.abi.linkReg < 0) {
    sp = top - 2 * word; // the return address, then one slot: rsp+8 is 16-byte aligned at entry
    for (unsigned i = 0; i < word; ++i)
      frame[i] = static_cast<std::uint8_t>(m.exitStub >> (8 * i));
  } else {
    sp = top - 4 * word; // a zero back chain and an LR save word (SVR4 ABI frame header)
    m.writeReg(spec.cpu, m.abi.linkReg, m.exitStub);
  }
  for (const DataRegion &r : m.data)
    if (r.base == bottom)
      std::memcpy(r.memory.get() + (sp - bottom), frame.data(), frame.size());
  m.writeReg(spec.cpu, m.abi.spReg, sp);
  m.writeReg(spec.cpu, m.abi.argReg, spec.arg);
  m.writeReg(spec.cpu, m.abi.pcReg, spec.entry);
  // Interrupts on; the thread register at the thread area, whose preempt count is 1 for an idle
  // task (Linux's idle loop runs with preemption disabled), else 0.
  m.writeReg(spec.cpu, m.abi.irqFlagsReg,
             m.readReg(spec.cpu, m.abi.irqFlagsReg) | m.abi.irqEnableBit);
  m.writeReg(spec.cpu, m.abi.threadReg, bottom);
  m.saveRegs(spec.cpu, t.regs);
  m.state.tasks.push_back(std::move(t));
  m.writePreemptCount(id, spec.idle ? 1 : 0);
  cs.runqueue.push_back(id);
  ++cs.runnable;
  if (cs.current >= 0) {
    m.loadRegs(spec.cpu, saved);
  } else {
    cs.current = id;
    m.state.tasks[id].voluntarilyOff = false;
    cs.pc = spec.entry;
    m.refreshRegions(spec.cpu);
  }
  return id;
}

} // namespace ftsim::sim
