// The run loop: the enabled events, the scheduler's decisions, and executing one event.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace ftsim::sim {

std::uint32_t Machine::Impl::decide(Scheduler &scheduler, const DecisionPoint &point) {
  std::uint32_t choice = scheduler.decide(self, point);
  if (choice >= point.options)
    FTSIM_PANIC("scheduler answered {} to a decision with {} options", choice, point.options);
  if (config.keepLog)
    state.decisions.push_back({point.kind, choice, point.options});
  return choice;
}

// --- Enabled events ------------------------------------------------------------------------------

bool Machine::Impl::patcherHoldsCpu(unsigned cpu) const {
  if (cpu != config.patcherCpu)
    return false;
  PatcherState s = patcher.state;
  return s == PatcherState::Store || s == PatcherState::Publish || s == PatcherState::WaitIpis ||
         s == PatcherState::WaitSpin;
}

std::size_t Machine::Impl::enabledEvents(EventChoice *out) {
  // Read once: the events written through `out` are bytes, which the compiler must assume alias
  // every field read after them.
  const unsigned cpuCount = config.cpus;
  const bool preemption = config.preemption;
  const bool timer = timerHandler != 0;
  const unsigned heldCpu = patcherHoldsCpu(config.patcherCpu) ? config.patcherCpu : cpuCount;
  const CpuState *states = state.cpus.data();
  std::size_t n = 0;
  for (unsigned c = 0; c < cpuCount; ++c) {
    const CpuState &cs = states[c];
    const auto cpu = static_cast<std::uint8_t>(c);
    const int current = cs.current;
    // An IPI waits while the CPU has interrupts off. A timer interrupt needs interrupts on: it
    // switches tasks when the task is preemptible (count 0, another runnable task); inside a
    // non-preemptible region it returns to the same task (the CPU stalls for the handler).
    const bool interruptible = !cs.halfFetched && cs.takesInterrupts();
    const bool ipi = cs.ipiPending && interruptible;
    const bool runs = current >= 0 && c != heldCpu;
    const bool interrupts = runs && preemption && interruptible;
    const bool preempt = interrupts && (cs.preemptCount > 0 || cs.runnable > 1);
    // A timer interrupt that runs its handler's guest code, at any preempt count (no nesting).
    const bool irq = interrupts && timer && !state.tasks[current].inIrq;
    const EventKind step = runs && !stepsOnly ? stepKind(c) : EventKind::Step;
    if (ipi)
      out[n++] = {EventKind::Ipi, cpu};
    if (!runs)
      continue;
    out[n++] = {step, cpu};
    if (preempt)
      out[n++] = {EventKind::Preempt, cpu};
    if (irq)
      out[n++] = {EventKind::Irq, cpu};
  }
  if (patcher.state == PatcherState::Store)
    out[n++] = {EventKind::Store, static_cast<std::uint8_t>(config.patcherCpu)};
  else if (patcher.state == PatcherState::Publish)
    out[n++] = {EventKind::Publish, static_cast<std::uint8_t>(config.patcherCpu)};
  return n;
}

EventKind Machine::Impl::stepKind(unsigned cpu) {
  const CpuState &cs = state.cpus[cpu];
  if (cs.halfFetched)
    return EventKind::Step;
  const std::uint64_t pc = cs.pc;
  // An instruction that may straddle two lines of watched text is fetched in two events when the
  // fetch model reads lines at their own instants (a "may", decided without decoding: a spurious
  // split only adds a harmless event).
  if (splitsFetchAtLines && pc % kLineSize > kLineSize - maxInsn &&
      (lineWatchedAt(pc) || lineWatchedAt(pc + maxInsn - 1)))
    return EventKind::FetchLine;
  if (config.quantum > 1 && !needsStep(cpu, pc))
    return EventKind::Run;
  return EventKind::Step;
}

// --- Executing events ----------------------------------------------------------------------------

void Machine::Impl::appendRecord(const EventRecord &rec) {
  ++state.eventCount;
  if (config.keepLog)
    state.log.push_back(rec);
}

EventRecord Machine::Impl::beginRecord(EventKind kind, unsigned cpu) {
  EventRecord rec;
  rec.index = state.eventCount;
  rec.kind = kind;
  rec.cpu = static_cast<std::uint8_t>(cpu);
  rec.task = static_cast<std::int16_t>(state.cpus[cpu].current);
  rec.pc = state.cpus[cpu].pc;
  return rec;
}

void Machine::Impl::setRecordBytes(EventRecord &rec, const std::uint8_t *bytes, std::size_t n) {
  rec.byteCount = static_cast<std::uint8_t>(std::min<std::size_t>(n, sizeof rec.bytes));
  std::memcpy(rec.bytes, bytes, rec.byteCount);
}

bool Machine::Impl::execute(unsigned cpu, EventRecord &rec, std::uint64_t count,
                            Scheduler &scheduler) {
  CpuRuntime &rt = cpus[cpu];
  CpuState &cs = state.cpus[cpu];
  const std::uint64_t pc = cs.pc;
  const bool irqsBefore = cs.irqsOn;
  const std::uint32_t countBefore = cs.preemptCount;
  bool serialiseAfter = false;
  // Whether the interrupt flag is read again after the event (Regions.cpp): after a step, only
  // when the instruction stepped may change it (or traps or faults: decided below).
  bool irqFlagMayChange = count > 1;
  // A plain step (see below) begins on a CPU with nothing pending, at an instruction the machine
  // does not watch, when every instruction is a Step.
  bool plain = count == 1 && stepsOnly && !cs.halfFetched && !cs.pending();
  // The bytes this CPU fetches at pc (its view, after the fetch model chose them), for a step.
  std::uint8_t window[16] = {};
  if (count == 1) {
    bool secondHalf = cs.halfFetched;
    cs.halfFetched = false;
    if (cs.pending())
      prepareFetch(cpu, pc, secondHalf, scheduler);
    if (TextRegion *r = textAt(pc)) {
      std::uint8_t flags = r->flags.get()[pc - r->base];
      plain = plain && !flags;
      if ((flags & kSharedRead) || fetchesWrittenText(*r, pc))
        rec.sharedRead = true;
      if (flags & (kSiteByte | kFreedByte))
        checkWatchedFetch(cpu, rec, *r, pc, flags);
      const std::uint8_t *at = r->views[cpu].get() + (pc - r->base);
      if (const std::uint64_t left = r->base + r->size - pc; left >= sizeof window)
        std::memcpy(window, at, sizeof window);
      else
        std::memcpy(window, at, left);
      if (!cs.history.empty() || !cs.dirtyLines.empty() || flags)
        serialiseAfter = abi.serialising(window);
      irqFlagMayChange = abi.irqFlagMayChange(window);
    } else {
      irqFlagMayChange = true;
      plain = false;
    }
  }
  rt.intno = -1;
  rt.memFault = false;
  rt.memFaultAddr = 0;
  rt.dataSeen = false;
  rt.budget = count;
  rt.clearLine = 1; // not a line: onCode looks again
  rt.stoppedByCode = false;
  uc_err err = UC_ERR_OK;
  if (traceSteps && count == 1) {
    err = traceStep(cpu, pc, window); // GuestAbi::traceFlagReg
  } else if (engineHooks == EngineHooks::Blocks) {
    err = runByBlocks(cpu, pc, count); // BlockRuns.cpp
  } else {
    if (traceSteps && (!rt.traceFlagKnown || rt.traceFlag))
      setTraceFlag(cpu, false);
    // Counted by onCode (Engines.cpp).
    rt.freeRunning = count > 1;
    err = uc_emu_start(rt.uc, pc, abi.unreachable, 0, 0);
    rt.freeRunning = false;
  }
  if (count > 1 && err == UC_ERR_OK && rt.intno < 0 && rt.dataSeen &&
      readReg(cpu, abi.pcReg) == rt.dataPc) {
    // A stop requested from the watched access's hook takes effect before that instruction
    // retires (the access is not made): run it now, so the event ends after it as documented.
    rt.budget = 1;
    rt.stoppedByCode = false;
    err = uc_emu_start(rt.uc, rt.dataPc, abi.unreachable, 0, 0);
  }
  const std::uint64_t after =
      rt.stoppedByCode && err == UC_ERR_OK && rt.intno < 0 ? rt.stopPc : readReg(cpu, abi.pcReg);
  if (count == 1 && (err == UC_ERR_FETCH_UNMAPPED || err == UC_ERR_FETCH_PROT) && after != pc &&
      rt.memFaultAddr == after && rt.intno < 0)
    // A jump, call or return into text that cannot be fetched: Unicorn fetched the target before
    // the count could stop it. The instruction completed; the fault is the next step's, at that
    // address (as on hardware, and as a step by the trace flag, which ends before the fetch).
    err = UC_ERR_OK;
  rec.pcAfter = after;
  cs.pc = after;
  if (count == 1)
    ++state.stepped;
  if (rt.dataSeen) {
    rec.dataAddr = rt.dataAddr;
    rec.dataSize = rt.dataSize;
    rec.dataWrite = rt.dataWrite;
  }
  if (err != UC_ERR_OK || rt.intno >= 0 || after == pc)
    irqFlagMayChange = true;
  if (err != UC_ERR_OK) {
    // A failed fetch faults at the address fetched (a jump or return into unmapped text), any
    // other fault at the instruction.
    const bool fetch = err == UC_ERR_FETCH_UNMAPPED || err == UC_ERR_FETCH_PROT;
    guestFault(cpu, rec, fetch ? rt.memFaultAddr : count == 1 ? pc : after, faultMessage(err, rt));
  } else if (rt.intno >= 0) {
    handleTrap(cpu, rec, after, rt.intno);
  } else if (count == 1 && after == pc) {
    guestFault(cpu, rec, pc, "no progress (unreachable exit address)");
  } else if (serialiseAfter) {
    serialise(cpu);
    rec.outcome = StepOutcome::Serialised;
  } else if (count > 1 && needsStep(cpu, after)) {
    rec.outcome = StepOutcome::WatchedStop;
  }
  if (irqFlagMayChange) {
    rt.traceFlagKnown = false; // the instruction may have written the flags (popf, iret)
    refreshRegions(cpu);
  } else {
    refreshPreemptCount(cpu);
  }
  noteRegionChange(cpu, rec, irqsBefore, countBefore);
  // Plain: no trap or fault (no host handler ran, the task is the same), no watched data, nothing
  // serialised or left pending, the interrupt flag and preempt count as they were.
  return plain && !irqFlagMayChange && !rt.dataSeen && rec.outcome == StepOutcome::None &&
         !rec.regionChange && !cs.pending();
}

bool Machine::Impl::executeEvent(const EventChoice &choice, Scheduler &scheduler) {
  const unsigned cpu = choice.cpu;
  EventRecord rec = beginRecord(choice.kind, cpu);
  bool plain = false;
  switch (choice.kind) {
  case EventKind::Step:
  case EventKind::Run:
    eventCpu = static_cast<int>(cpu);
    plain = execute(cpu, rec, choice.kind == EventKind::Step ? 1 : config.quantum, scheduler);
    eventCpu = -1;
    break;
  case EventKind::FetchLine:
    if (!state.cpus[cpu].dirtyLines.empty())
      refreshLine(cpu, lineOf(rec.pc));
    state.cpus[cpu].halfFetched = true;
    break;
  case EventKind::Ipi:
    state.cpus[cpu].ipiPending = false;
    serialise(cpu);
    break;
  case EventKind::Preempt: {
    if (state.cpus[cpu].preemptCount > 0) {
      // preempt_schedule_irq() only runs at count 0: the interrupt returns to the same task. Not
      // a context switch (schedule_on_each_cpu is not satisfied by it).
      rec.detail = 1;
      serialise(cpu); // iret / rfi
      break;
    }
    TaskRecord &t = state.tasks[state.cpus[cpu].current];
    t.voluntarilyOff = false;
    const bool irqsBefore = state.cpus[cpu].irqsOn;
    const std::uint32_t countBefore = state.cpus[cpu].preemptCount;
    switchTo(cpu, nextTask(cpu));
    serialise(cpu); // the interrupt returns into the next task with iret / rfi
    noteRegionChange(cpu, rec, irqsBefore, countBefore);
    break;
  }
  case EventKind::Irq: {
    const bool irqsBefore = state.cpus[cpu].irqsOn;
    const std::uint32_t countBefore = state.cpus[cpu].preemptCount;
    if (enterInterrupt(cpu, rec)) {
      refreshRegions(cpu);
      noteRegionChange(cpu, rec, irqsBefore, countBefore);
    }
    break;
  }
  case EventKind::Store:
    rec.task = -1;
    rec.storeAddr = patcher.storeAddr;
    rec.storeSize = static_cast<std::uint8_t>(patcher.storeBytes.size());
    setRecordBytes(rec, patcher.storeBytes.data(), patcher.storeBytes.size());
    applyStore();
    break;
  case EventKind::Publish: {
    rec.task = -1;
    // The name's index: mostly the last publication's (a patcher that polls publishes one name
    // again and again), else looked up, else a new one. Names are unique in the list.
    auto &names = state.publishNames;
    std::size_t id = patcher.publishNameHint;
    if (id >= names.size() || names[id] != patcher.publishWhat) {
      id = static_cast<std::size_t>(std::find(names.begin(), names.end(), patcher.publishWhat) -
                                    names.begin());
      if (id == names.size())
        names.push_back(patcher.publishWhat);
      patcher.publishNameHint = id;
    }
    rec.detail = id;
    if (patcher.publishDataSize) {
      rec.dataAddr = patcher.publishDataAddr;
      rec.dataSize = patcher.publishDataSize;
      rec.dataWrite = patcher.publishDataWrite;
    }
    (*patcher.publishWrite)();
    break;
  }
  case EventKind::Alloc:
  case EventKind::Free:
    FTSIM_PANIC("{} is not a schedulable event", eventKindName(choice.kind));
  }
  appendRecord(rec);
  if (choice.kind == EventKind::Store)
    resumePatcher();
  else if (choice.kind == EventKind::Publish && !publishAgain())
    resumePatcher();
  return plain;
}

// After a publication of publishWhile(): whether the patcher publishes the same again (it stays
// parked in the Publish state), asked here where it would have been resumed to ask.
bool Machine::Impl::publishAgain() {
  if (!patcher.publishAgain)
    return false;
  if (--patcher.publishesLeft == 0 || !(*patcher.publishAgain)())
    return false;
  return true;
}

void Machine::Impl::logNote(EventKind kind, std::uint64_t addr, std::uint64_t size) {
  EventRecord rec;
  rec.index = state.eventCount;
  rec.kind = kind;
  rec.cpu = static_cast<std::uint8_t>(config.patcherCpu);
  if (!inPatcher() && eventCpu >= 0) {
    rec.cpu = static_cast<std::uint8_t>(eventCpu);
    rec.task = static_cast<std::int16_t>(state.cpus[eventCpu].current);
  }
  rec.storeAddr = addr;
  rec.detail = size;
  appendRecord(rec);
}

namespace {

// A name for a list of enabled events, unique in the process (DecisionPoint::eventsId): each
// thread takes blocks of 2^20 names from a shared counter, so that naming costs no atomic
// operation per list.
std::uint64_t nextEventsId() {
  static std::atomic<std::uint64_t> blocks{0};
  constexpr std::uint64_t kBlock = std::uint64_t{1} << 20;
  thread_local std::uint64_t next = 0, end = 0;
  if (next == end) {
    next = (blocks.fetch_add(1, std::memory_order_relaxed) + 1) * kBlock;
    end = next + kBlock;
  }
  return next++;
}

} // namespace

RunResult Machine::Impl::run(Scheduler &scheduler, std::uint64_t maxEvents) {
  RunResult result;
  EventChoice enabled[kMaxEnabled];
  std::size_t n = 0;
  // Whether `enabled` still holds the enabled events: after a plain step, when the patcher did
  // not run either, nothing they depend on changed (every instruction an event, the usual case).
  bool still = false;
  std::uint64_t eventsId = 0;
  resumeWaitingPatcher();
  while (result.events < maxEvents) {
    if (!still) {
      n = enabledEvents(enabled);
      eventsId = 0; // named when first offered to the scheduler
    }
    if (n == 0) {
      if (patcher.alive) {
        EventRecord rec;
        rec.index = state.eventCount;
        rec.cpu = static_cast<std::uint8_t>(config.patcherCpu);
        addFinding(FindingKind::Deadlock, rec, 0, 0, {},
                   fmt::format("the patcher waits ({}) and no event can run",
                               patcherStateName(patcher.state)));
        result.status = RunResult::Status::Deadlock;
      }
      return result;
    }
    std::uint32_t pick = 0;
    if (n > 1) {
      DecisionPoint point;
      point.kind = DecisionKind::Event;
      point.options = static_cast<std::uint32_t>(n);
      point.events = std::span<const EventChoice>(enabled, n);
      if (eventsId == 0)
        eventsId = nextEventsId();
      point.eventsId = eventsId;
      pick = decide(scheduler, point);
    }
    const bool plain = executeEvent(enabled[pick], scheduler);
    ++result.events;
    still = !resumeWaitingPatcher() && plain;
  }
  result.status = RunResult::Status::EventLimit;
  return result;
}

std::vector<EventChoice> Machine::enabledEvents() {
  EventChoice out[Impl::kMaxEnabled];
  return {out, out + impl_->enabledEvents(out)};
}

} // namespace ftsim::sim
