// Traps, hypercalls, guest faults and findings, and the GuestContext a hypercall or trap handler
// sees: the machine acts on what the hooks recorded after uc_emu_start returns.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ftsim::sim {

void Machine::Impl::addFinding(FindingKind kind, const EventRecord &rec, std::uint64_t pc,
                               std::uint64_t addr, arch::Bytes bytes, std::string message) {
  Finding f;
  f.kind = kind;
  f.event = rec.index;
  f.cpu = rec.cpu;
  f.task = rec.task;
  f.pc = pc;
  f.addr = addr;
  if (!bytes.empty())
    f.decoded = arch::describeBytes(arch, bytes, kind == FindingKind::TornFetch ? addr : pc);
  f.bytes = std::move(bytes);
  f.message = std::move(message);
  state.findings.push_back(std::move(f));
}

// The bytes `cpu` fetches at `pc`: its view for text, memory otherwise (at most maxInsn).
arch::Bytes Machine::Impl::fetchedBytes(unsigned cpu, std::uint64_t pc, std::size_t max) const {
  arch::Bytes out;
  if (const TextRegion *r = textAt(pc)) {
    std::size_t n = std::min<std::uint64_t>(max, r->base + r->size - pc);
    const std::uint8_t *v = r->views[cpu].get() + (pc - r->base);
    out.assign(v, v + n);
    return out;
  }
  for (const DataRegion &r : data)
    if (pc - r.base < r.size) {
      std::size_t n = std::min<std::uint64_t>(max, r.base + r.size - pc);
      out.assign(r.memory.get() + (pc - r.base), r.memory.get() + (pc - r.base) + n);
    }
  return out;
}

// The first instruction `cpu` fetches at `pc` (all maxInsn bytes when they do not decode).
arch::Bytes Machine::Impl::firstInstruction(unsigned cpu, std::uint64_t pc) const {
  arch::Bytes bytes = fetchedBytes(cpu, pc, maxInsn);
  auto insns = arch.disassemble(bytes, pc);
  if (!insns.empty())
    bytes.resize(insns.front().size);
  return bytes;
}

// Site and trampoline checks of a fetch at `pc` (only for bytes flagged kSiteByte/kFreedByte).
void Machine::Impl::checkWatchedFetch(unsigned cpu, EventRecord &rec, TextRegion &r,
                                      std::uint64_t pc, std::uint8_t flags) {
  if (flags & kFreedByte)
    addFinding(FindingKind::TrampolineLifetime, rec, pc, pc, firstInstruction(cpu, pc),
               fmt::format("fetch from freed trampoline memory at {:#x}", pc));
  if (!(flags & kSiteByte))
    return;
  auto it = state.sites.upper_bound(pc);
  FTSIM_ASSERT(it != state.sites.begin());
  const Site &site = std::prev(it)->second;
  const std::uint8_t *view = r.views[cpu].get() + (site.addr - r.base);
  rec.fetchAddr = site.addr;
  rec.fetchSize = static_cast<std::uint8_t>(site.size);
  setRecordBytes(rec, view, site.size);
  if (site.allowed.empty())
    return;
  arch::Bytes seen(view, view + site.size);
  arch::Bytes trap = arch.trap();
  bool ok = pc == site.addr &&
            (std::find(site.allowed.begin(), site.allowed.end(), seen) != site.allowed.end() ||
             std::equal(trap.begin(), trap.end(), seen.begin()));
  if (!ok)
    addFinding(FindingKind::TornFetch, rec, pc, site.addr, seen,
               pc == site.addr
                   ? fmt::format("site {:#x} fetched in a state that is none of its {} allowed "
                                 "states",
                                 site.addr, site.allowed.size())
                   : fmt::format("fetch at {:#x}, inside site {:#x}+{}", pc, site.addr, site.size));
}

void Machine::Impl::guestFault(unsigned cpu, EventRecord &rec, std::uint64_t pc,
                               std::string message) {
  arch::Bytes bytes = firstInstruction(cpu, pc);
  addFinding(FindingKind::GuestFault, rec, pc, cpus[cpu].memFaultAddr, std::move(bytes),
             std::move(message));
  rec.outcome = StepOutcome::Fault;
  stopTask(cpu, TaskState::Faulted);
}

std::string Machine::Impl::faultMessage(uc_err err, const CpuRuntime &cpu) const {
  switch (err) {
  case UC_ERR_READ_UNMAPPED:
    return fmt::format("read of unmapped memory at {:#x}", cpu.memFaultAddr);
  case UC_ERR_WRITE_UNMAPPED:
    return fmt::format("write to unmapped memory at {:#x}", cpu.memFaultAddr);
  case UC_ERR_FETCH_UNMAPPED:
    return fmt::format("fetch from unmapped memory at {:#x}", cpu.memFaultAddr);
  case UC_ERR_WRITE_PROT:
    return fmt::format("write to read-only memory (text) at {:#x}", cpu.memFaultAddr);
  case UC_ERR_READ_PROT:
    return fmt::format("read of protected memory at {:#x}", cpu.memFaultAddr);
  case UC_ERR_FETCH_PROT:
    return fmt::format("fetch from non-executable memory at {:#x}", cpu.memFaultAddr);
  case UC_ERR_INSN_INVALID:
    return "invalid instruction";
  default:
    return fmt::format("emulation error: {}", uc_strerror(err));
  }
}

void Machine::Impl::handleTrap(unsigned cpu, EventRecord &rec, std::uint64_t pcAfter,
                               std::int64_t intno) {
  CpuState &cs = state.cpus[cpu];
  if (intno != abi.trapIntno) {
    std::uint64_t at = intno == abi.illegalIntno ? pcAfter - 4 : pcAfter;
    guestFault(cpu, rec, at,
               intno == abi.illegalIntno ? std::string("invalid instruction")
                                         : fmt::format("unexpected interrupt {}", intno));
    return;
  }
  const std::uint64_t trapAddr = pcAfter - arch.trap().size();
  rec.detail = trapAddr;
  TaskRecord &task = state.tasks[cs.current];
  const std::uint64_t now = rec.index + 1;
  if (auto it = builtinHypercalls.find(trapAddr); it != builtinHypercalls.end()) {
    // Return to the stub's return instruction (pc already points at it).
    switch (it->second) {
    case GuestHypercall::Schedule:
    case GuestHypercall::Idle:
      // schedule() in a non-preemptible region is a bug ("BUG: scheduling while atomic"); the
      // idle loop calls it with its own count of 1.
      if (cs.preemptCount > (task.info.idle ? 1u : 0u) || !cs.irqsOn) {
        guestFault(cpu, rec, trapAddr,
                   fmt::format("scheduling while atomic: preempt_count {}, interrupts {}",
                               cs.preemptCount, cs.irqsOn ? "on" : "off"));
        return;
      }
      rec.outcome =
          it->second == GuestHypercall::Schedule ? StepOutcome::Schedule : StepOutcome::Idle;
      task.lastQuiescent = now;
      task.voluntarilyOff = true;
      switchTo(cpu, nextTask(cpu));
      return;
    case GuestHypercall::User:
      rec.outcome = StepOutcome::User;
      task.lastQuiescent = now;
      return;
    case GuestHypercall::UserEnter:
      rec.outcome = StepOutcome::UserEnter;
      task.lastQuiescent = now;
      cs.inUser = true;
      return;
    case GuestHypercall::KernelEntry:
      // The catch-up at kernel entry (the series' CR3 write, a serialising instruction) runs
      // before anything after this stub; what the entry path executed before it ran unsynced.
      rec.outcome = StepOutcome::KernelEntry;
      task.lastQuiescent = now;
      cs.inUser = false;
      if (cs.syncDeferred) {
        cs.syncDeferred = false;
        serialise(cpu);
        rec.detail = 1;
      }
      return;
    case GuestHypercall::IrqReturn:
      returnFromInterrupt(cpu, rec, trapAddr);
      return;
    case GuestHypercall::Exit:
      rec.outcome = StepOutcome::Exit;
      task.info.result = readReg(cpu, abi.resultReg);
      rec.detail = task.info.result;
      task.lastQuiescent = now;
      stopTask(cpu, TaskState::Exited);
      return;
    }
  }
  rec.sharedRead = true;
  if (auto it = hypercalls.find(trapAddr); it != hypercalls.end()) {
    rec.outcome = StepOutcome::Hypercall;
    CpuGuestContext ctx(*this, cpu);
    it->second(ctx);
    cs.pc = readReg(cpu, abi.pcReg);
    return;
  }
  if (trapHandler) {
    CpuGuestContext ctx(*this, cpu);
    const arch::TrapVerdict verdict = trapHandler(ctx, trapAddr);
    if (verdict == arch::TrapVerdict::Handled) {
      rec.outcome = StepOutcome::TrapHandled;
      cs.pc = readReg(cpu, abi.pcReg);
      serialise(cpu); // the handler returns with iret / rfi
      return;
    }
    if (verdict == arch::TrapVerdict::Died) {
      const std::uint64_t at = readReg(cpu, abi.pcReg);
      guestFault(
          cpu, rec, at,
          fmt::format("trap at {:#x} declined by the kernel's own handler: the kernel dies", at));
      return;
    }
    if (verdict == arch::TrapVerdict::Entered) {
      rec.outcome =
          StepOutcome::Hypercall; // a host action that read shared state, no serialisation
      cs.pc = readReg(cpu, abi.pcReg);
      return;
    }
  }
  guestFault(cpu, rec, trapAddr,
             fmt::format("unexpected trap at {:#x} ({})", trapAddr,
                         trapHandler ? "the trap handler says it is not its own"
                                     : "no trap handler installed"));
}

unsigned CpuGuestContext::cpu() const { return cpu_; }
int CpuGuestContext::task() const { return m_.state.cpus[cpu_].current; }
std::uint64_t CpuGuestContext::pc() const { return m_.readReg(cpu_, m_.abi.pcReg); }
void CpuGuestContext::setPc(std::uint64_t pc) { m_.writeReg(cpu_, m_.abi.pcReg, pc); }
std::uint64_t CpuGuestContext::sp() const { return m_.readReg(cpu_, m_.abi.spReg); }
void CpuGuestContext::setSp(std::uint64_t sp) { m_.writeReg(cpu_, m_.abi.spReg, sp); }
std::uint64_t CpuGuestContext::reg(int id) const { return m_.readReg(cpu_, id); }
void CpuGuestContext::setReg(int id, std::uint64_t v) { m_.writeReg(cpu_, id, v); }

bool CpuGuestContext::readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const {
  return uc_mem_read(m_.cpus[cpu_].uc, addr, out.data(), out.size()) == UC_ERR_OK;
}

bool CpuGuestContext::writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  std::uint8_t *host = m_.dataHost(addr, bytes.size());
  if (!host)
    return false; // unmapped, or text (handlers never write text)
  std::memcpy(host, bytes.data(), bytes.size());
  return true;
}

} // namespace ftsim::sim
