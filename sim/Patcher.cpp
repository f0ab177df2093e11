// The patcher: engine code (straight-line C++ against MachinePort) as a stackful coroutine on the
// calling thread (Fiber.h). Exactly one of run() and the body executes at any time, so the
// schedule alone decides everything.
//
// Each visible action parks the patcher in a PatcherState and yields:
//   Store / Publish    -> an enabled event; run() resumes the patcher right after executing it;
//   WaitIpis / WaitRcuTasks / WaitEachCpu -> no event of its own; run() resumes the patcher as
//                         soon as, after some event, the condition holds (waitOver()).

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::sim {

std::string_view Machine::Impl::patcherStateName(PatcherState s) {
  switch (s) {
  case PatcherState::None:
    return "none";
  case PatcherState::Store:
    return "store";
  case PatcherState::Publish:
    return "publish";
  case PatcherState::WaitIpis:
    return "syncCores";
  case PatcherState::WaitRcuTasks:
    return "synchronizeRcuTasks";
  case PatcherState::WaitEachCpu:
    return "scheduleOnEachCpu";
  case PatcherState::WaitSpin:
    return "spin";
  }
  FTSIM_PANIC("bad PatcherState {}", static_cast<int>(s));
}

bool Machine::Impl::inPatcher() const { return patcher.alive && patcher.fiber->inside(); }

bool Machine::Impl::readData(std::uint64_t addr, std::span<std::uint8_t> out) const {
  for (const DataRegion &r : data)
    if (addr - r.base < r.size && addr + out.size() - r.base <= r.size) {
      std::copy_n(r.memory.get() + (addr - r.base), out.size(), out.begin());
      return true;
    }
  return false;
}

void Machine::Impl::startPatcher(std::function<void(arch::MachinePort &)> body) {
  if (patcher.alive)
    fatal("a patcher is already running");
  if (!patcher.fiber)
    patcher.fiber = std::make_unique<Fiber>();
  patcher.alive = true;
  patcher.abort = false;
  patcher.error = nullptr;
  patcher.state = PatcherState::None;
  patcher.fiber->start([this, body = std::move(body)] {
    try {
      body(self);
    } catch (const PatcherAborted &) {
    } catch (...) {
      patcher.error = std::current_exception();
    }
    patcher.alive = false;
    patcher.state = PatcherState::None;
  });
  afterPatcherRan();
}

// Main side: let the patcher run until it parks again or finishes.
void Machine::Impl::resumePatcher() {
  patcher.fiber->resume();
  afterPatcherRan();
}

// Main side, once the patcher has parked or finished: a finished body's exception is rethrown.
void Machine::Impl::afterPatcherRan() {
  if (!patcher.alive && patcher.error) {
    std::exception_ptr e = patcher.error;
    patcher.error = nullptr;
    std::rethrow_exception(e);
  }
}

// Patcher side: park until main resumes it. An abort unwinds the body from here.
void Machine::Impl::yieldToMain() {
  patcher.fiber->suspend();
  if (patcher.abort)
    throw PatcherAborted();
}

bool Machine::Impl::waitOver() const {
  switch (patcher.state) {
  case PatcherState::WaitIpis:
    return std::none_of(state.cpus.begin(), state.cpus.end(),
                        [](const CpuState &c) { return c.ipiPending; });
  case PatcherState::WaitRcuTasks:
    // RCU-tasks (kernel/rcu/tasks.h): every task that existed at the start has since passed a
    // voluntary context switch, user mode or idle, or is off-CPU after a voluntary switch, or is
    // gone. A preempted task holds the grace period: it may be stopped inside a trampoline.
    // Idle tasks are not waited for (rcu_tasks_pertask() skips is_idle_task(), Linux 6.1 and 6.12):
    // that is why ftrace also calls synchronize_rcu_tasks_rude().
    for (const TaskRecord &t : state.tasks) {
      if (t.info.idle)
        continue;
      if (t.info.state != TaskState::Runnable || t.lastQuiescent > patcher.graceStart)
        continue;
      if (t.voluntarilyOff && state.cpus[t.info.cpu].current != t.info.id)
        continue;
      return false;
    }
    return true;
  case PatcherState::WaitEachCpu:
    // schedule_on_each_cpu(): a work item runs on every CPU once that CPU schedules (or is idle).
    for (unsigned c = 0; c < config.cpus; ++c)
      if (c != config.patcherCpu && state.cpus[c].current >= 0 &&
          state.cpus[c].switches == patcher.switchesAtStart[c])
        return false;
    return true;
  case PatcherState::WaitSpin: {
    std::vector<std::uint8_t> now(patcher.spinValue.size());
    return !readData(patcher.spinAddr, now) || now != patcher.spinValue;
  }
  default:
    return false;
  }
}

bool Machine::Impl::resumeWaitingPatcherNow() {
  bool ran = false;
  for (; patcher.alive && waitOver(); ran = true)
    resumePatcher();
  return ran;
}

// Unwind a parked patcher: it throws PatcherAborted from where it waits, its stack's objects are
// destroyed, and the fiber is idle again.
void Machine::Impl::abortPatcher() {
  patcher.abort = true;
  while (patcher.alive)
    patcher.fiber->resume();
  patcher.abort = false;
  patcher.error = nullptr;
  patcher.state = PatcherState::None;
}

// --- Machine: the patcher's interface ------------------------------------------------------------

void Machine::startPatcher(std::function<void(arch::MachinePort &)> body) {
  impl_->startPatcher(std::move(body));
}

PatcherState Machine::patcherState() const {
  return impl_->patcher.alive ? impl_->patcher.state : PatcherState::None;
}

bool Machine::readText(std::uint64_t addr, std::span<std::uint8_t> out) {
  TextRegion *r = impl_->textRange(addr, out.size());
  if (!r)
    return false;
  std::copy_n(r->canonical.get() + (addr - r->base), out.size(), out.begin());
  return true;
}

bool Machine::writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  Impl &m = *impl_;
  if (!m.textRange(addr, bytes.size()))
    return false;
  if (!m.inPatcher()) {
    pokeText(addr, bytes);
    return true;
  }
  for (const StorePiece &p :
       splitStores(m.config.storeModel, addr, static_cast<std::uint32_t>(bytes.size()))) {
    m.patcher.storeAddr = addr + p.offset;
    m.patcher.storeBytes.assign(bytes.begin() + p.offset, bytes.begin() + p.offset + p.size);
    m.patcher.state = PatcherState::Store;
    m.yieldToMain();
  }
  return true;
}

void Machine::syncCores() {
  Impl &m = *impl_;
  if (!m.inPatcher()) {
    for (unsigned c = 0; c < m.config.cpus; ++c)
      m.serialise(c);
    return;
  }
  m.serialise(m.config.patcherCpu); // on_each_cpu() runs do_sync_core locally too
  bool any = false;
  for (unsigned c = 0; c < m.config.cpus; ++c)
    if (c != m.config.patcherCpu) {
      CpuState &cs = m.state.cpus[c];
      if (m.config.deferSyncInUser && cs.inUser) {
        cs.syncDeferred = true; // no IPI, no wait: it syncs at its next kernel entry
        continue;
      }
      cs.ipiPending = true;
      any = true;
    }
  if (!any)
    return;
  m.patcher.state = PatcherState::WaitIpis;
  m.yieldToMain();
}

std::uint64_t Machine::allocText(std::size_t size, std::uint64_t) {
  // Trampolines live in the module area (see MachineConfig). `nearAddress` is not honoured: on
  // powerpc the area is out of direct-branch reach of kernel text on purpose, as in Linux, and the
  // caller must use long-branch stubs. Memory is never reused, so freed memory stays watched.
  Impl &m = *impl_;
  if (size == 0)
    return 0;
  const std::uint64_t at = m.state.moduleNext;
  const std::uint64_t end = m.config.moduleBase + m.config.moduleSize;
  const std::uint64_t rounded = (size + kLineSize - 1) / kLineSize * kLineSize;
  if (rounded > end - at)
    return 0;
  m.state.moduleNext = at + rounded;
  m.logNote(EventKind::Alloc, at, size);
  return at;
}

void Machine::freeText(std::uint64_t addr, std::size_t size) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, size);
  if (!r || addr < m.config.moduleBase || addr + size > m.state.moduleNext)
    FTSIM_PANIC("freeText {:#x}+{} is not allocated trampoline memory", addr, size);
  arch::Bytes poison(size);
  for (std::size_t i = 0; i < size; ++i)
    poison[i] = m.abi.poison[(addr + i - m.config.moduleBase) % m.abi.poison.size()];
  pokeText(addr, poison);
  for (std::size_t i = 0; i < size; ++i)
    r->flags.get()[addr - r->base + i] |= kFreedByte;
  r->touch(addr - r->base, size);
  m.logNote(EventKind::Free, addr, size);
}

void Machine::synchronizeRcuTasks() {
  Impl &m = *impl_;
  if (!m.inPatcher())
    return;
  m.patcher.graceStart = m.state.eventCount;
  m.patcher.state = PatcherState::WaitRcuTasks;
  m.yieldToMain();
}

void Machine::scheduleOnEachCpu() {
  Impl &m = *impl_;
  if (!m.inPatcher())
    return;
  m.patcher.switchesAtStart.clear();
  for (const CpuState &c : m.state.cpus)
    m.patcher.switchesAtStart.push_back(c.switches);
  m.patcher.state = PatcherState::WaitEachCpu;
  m.yieldToMain();
}

// One publication: publishWhile() with a bound of one, which never asks `again`.
void Machine::publish(std::string_view what, const std::function<void()> &write) {
  publishWhile(what, write, {}, 1);
}

void Machine::publishWhile(std::string_view what, const std::function<void()> &write,
                           const std::function<bool()> &again, std::uint64_t most) {
  Impl &m = *impl_;
  if (most == 0)
    return;
  if (!m.inPatcher()) {
    // As in a patcher: `again` is asked after each publication but the last allowed.
    for (std::uint64_t n = 1;; ++n) {
      write();
      if (n == most || !again())
        return;
    }
  }
  m.patcher.publishWhat.assign(what);
  m.patcher.publishWrite = &write;
  m.patcher.publishDataSize = 0;
  m.patcher.publishAgain = &again;
  m.patcher.publishesLeft = most;
  m.patcher.state = PatcherState::Publish;
  // Cleared however this returns: an aborted patcher unwinds from yieldToMain(), and `again` dies.
  struct Clear {
    PatcherRuntime &p;
    ~Clear() { p.publishAgain = nullptr; }
  } clear{m.patcher};
  m.yieldToMain();
}

void Machine::publishAccess(std::string_view what, std::uint64_t addr, std::uint32_t size,
                            bool write) {
  Impl &m = *impl_;
  if (!m.inPatcher())
    return;
  static const std::function<void()> nothing = [] {};
  m.patcher.publishWhat.assign(what);
  m.patcher.publishWrite = &nothing;
  m.patcher.publishDataAddr = addr;
  m.patcher.publishDataSize = static_cast<std::uint8_t>(std::min<std::uint32_t>(size, 255));
  m.patcher.publishDataWrite = write;
  m.patcher.state = PatcherState::Publish;
  m.yieldToMain();
  m.patcher.publishDataSize = 0;
}

void Machine::spinUntilChanged(std::uint64_t addr, std::uint32_t size) {
  Impl &m = *impl_;
  if (!m.inPatcher())
    return;
  m.patcher.spinAddr = addr;
  m.patcher.spinValue.assign(size, 0);
  if (!m.readData(addr, m.patcher.spinValue))
    FTSIM_PANIC("spinUntilChanged on unmapped data {:#x}+{}", addr, size);
  m.patcher.state = PatcherState::WaitSpin;
  m.yieldToMain();
}

std::vector<HostMemory> Machine::hostMemory() const {
  std::vector<HostMemory> out;
  for (const TextRegion &r : impl_->text)
    out.push_back({r.base, r.size, r.canonical.get(), true});
  for (const DataRegion &r : impl_->data)
    out.push_back({r.base, r.size, r.memory.get(), false});
  return out;
}

void Machine::setInterruptsEnabled(unsigned cpu, bool enabled) {
  if (cpu >= impl_->config.cpus)
    FTSIM_PANIC("setInterruptsEnabled: no CPU {}", cpu);
  impl_->state.cpus[cpu].irqsOff = !enabled;
}

void Machine::setTrapHandler(arch::TrapHandler handler) { impl_->trapHandler = std::move(handler); }

void Machine::setHypercall(std::uint64_t stubAddress, arch::Hypercall callback) {
  if (!impl_->textAt(stubAddress))
    fatal("hypercall stub at {:#x} is not in text", stubAddress);
  impl_->hypercalls[stubAddress] = std::move(callback);
}

} // namespace ftsim::sim
