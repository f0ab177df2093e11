// The machine: engines, memory, the fetch and store models, tasks, traps and the event loop.
// The patcher's side (MachinePort, the baton) is in Patcher.cpp; snapshots in Snapshot.cpp.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ftsim::sim {

namespace {

constexpr std::uint64_t kPage = 4096;

std::uint64_t roundUp(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
std::uint64_t lineOf(std::uint64_t addr) { return addr & ~(kLineSize - 1); }

HostBuffer allocHost(std::uint64_t size) {
  auto *p = static_cast<std::uint8_t *>(std::aligned_alloc(kPage, size));
  if (!p)
    FTSIM_PANIC("out of host memory allocating {} bytes", size);
  return HostBuffer(p);
}

void check(uc_err err, const char *what) {
  if (err != UC_ERR_OK)
    FTSIM_PANIC("{}: {}", what, uc_strerror(err));
}

} // namespace

// --- Hooks: they only record; the machine acts after uc_emu_start returns. ---------------------

namespace {

void onInterrupt(uc_engine *uc, std::uint32_t intno, void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  cpu->intno = intno;
  uc_emu_stop(uc);
}

bool onInvalidMemory(uc_engine *, uc_mem_type type, std::uint64_t address, int, std::int64_t,
                     void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  cpu->memFault = true;
  cpu->memFaultAddr = address;
  cpu->memFaultType = type;
  return false;
}

void onDataAccess(uc_engine *uc, uc_mem_type type, std::uint64_t address, int size, std::int64_t,
                  void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  if (!cpu->dataSeen) {
    cpu->dataSeen = true;
    cpu->dataAddr = address;
    cpu->dataSize = static_cast<std::uint8_t>(size);
    cpu->dataWrite = type == UC_MEM_WRITE;
  }
  if (cpu->freeRunning)
    uc_emu_stop(uc);
}

} // namespace

// A code hook on watched lines, installed only in fast mode: it ends a free run before the first
// watched instruction (uc_emu_stop in a code hook stops before that instruction executes).
void onWatchedCode(uc_engine *uc, std::uint64_t address, std::uint32_t, void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  if (cpu->freeRunning && cpu->machine->needsStep(cpu->index, address))
    uc_emu_stop(uc);
}

// --- Construction --------------------------------------------------------------------------------

Machine::Impl::Impl(Machine &owner, const arch::Arch &a, MachineConfig c)
    : self(owner), arch(a), abi(guestAbi(a)), config(c) {
  if (!arch.executable())
    fatal("architecture '{}' is not executable by the simulator", arch.name());
  if (config.cpus < 1 || config.cpus > 8)
    fatal("a machine has 1 to 8 CPUs, not {}", config.cpus);
  if (config.patcherCpu >= config.cpus)
    fatal("patcher CPU {} does not exist on a {}-CPU machine", config.patcherCpu, config.cpus);
  if (config.quantum < 1)
    fatal("the fast-mode quantum must be at least 1");
  if (!config.moduleBase)
    config.moduleBase = abi.moduleBase;
  if (!config.stackBase)
    config.stackBase = abi.stackBase;
  config.moduleSize = roundUp(config.moduleSize, kPage);
  config.stackSize = roundUp(config.stackSize, kPage);
  maxInsn = arch.maxInsnSize();
  state.cpus.resize(config.cpus);
  cpus.resize(config.cpus);
  for (unsigned i = 0; i < config.cpus; ++i) {
    CpuRuntime &cpu = cpus[i];
    cpu.machine = this;
    cpu.index = i;
    check(uc_open(static_cast<uc_arch>(arch.unicornArch()),
                  static_cast<uc_mode>(arch.unicornMode()), &cpu.uc),
          "uc_open");
    check(uc_context_alloc(cpu.uc, &cpu.scratch), "uc_context_alloc");
    uc_hook h;
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_INTR, reinterpret_cast<void *>(&onInterrupt), &cpu, 1, 0),
          "uc_hook_add(INTR)");
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_MEM_INVALID, reinterpret_cast<void *>(&onInvalidMemory),
                      &cpu, 1, 0),
          "uc_hook_add(MEM_INVALID)");
  }
  contextSize = uc_context_size(cpus[0].uc);
  // Trampoline memory: text, poisoned, every line watched (trampolines are visible code).
  addTextRegion(config.moduleBase, {}, config.moduleSize);
  TextRegion &modules = text.back();
  std::fill(modules.lineWatched.begin(), modules.lineWatched.end(), 1);
  if (config.quantum > 1)
    for (CpuRuntime &cpu : cpus) {
      uc_hook h;
      check(uc_hook_add(cpu.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&onWatchedCode), &cpu,
                        config.moduleBase - (maxInsn - 1),
                        config.moduleBase + config.moduleSize - 1),
            "uc_hook_add(CODE)");
    }
  state.moduleNext = config.moduleBase;
}

Machine::Impl::~Impl() {
  abortPatcher();
  for (CpuRuntime &cpu : cpus) {
    if (cpu.scratch)
      uc_context_free(cpu.scratch);
    if (cpu.uc)
      uc_close(cpu.uc);
  }
}

void Machine::Impl::checkFree(std::uint64_t addr, std::uint64_t size) const {
  for (const TextRegion &r : text)
    if (addr < r.base + r.size && r.base < addr + size)
      fatal("mapping {:#x}+{:#x} overlaps text at {:#x}", addr, size, r.base);
  for (const DataRegion &r : data)
    if (addr < r.base + r.size && r.base < addr + size)
      fatal("mapping {:#x}+{:#x} overlaps data at {:#x}", addr, size, r.base);
}

void Machine::Impl::addTextRegion(std::uint64_t addr, std::span<const std::uint8_t> bytes,
                                  std::uint64_t minSize) {
  if (addr % kPage)
    fatal("text at {:#x} is not page aligned", addr);
  std::uint64_t size = roundUp(std::max<std::uint64_t>({bytes.size(), minSize, 1}), kPage);
  checkFree(addr, size);
  TextRegion r;
  r.base = addr;
  r.size = size;
  r.canonical = allocHost(size);
  for (std::uint64_t i = 0; i < size; ++i)
    r.canonical.get()[i] = abi.poison[i % abi.poison.size()];
  if (!bytes.empty()) // memcpy from an empty span's null data() is undefined
    std::memcpy(r.canonical.get(), bytes.data(), bytes.size());
  r.flags.assign(size, 0);
  r.lineWatched.assign(size / kLineSize, 0);
  for (CpuRuntime &cpu : cpus) {
    HostBuffer view = allocHost(size);
    std::memcpy(view.get(), r.canonical.get(), size);
    check(uc_mem_map_ptr(cpu.uc, addr, size, UC_PROT_READ | UC_PROT_EXEC, view.get()),
          "uc_mem_map_ptr(text)");
    r.views.push_back(std::move(view));
  }
  text.push_back(std::move(r));
  lastText = nullptr;
}

void Machine::Impl::addDataRegion(std::uint64_t addr, std::uint64_t size,
                                  std::span<const std::uint8_t> init) {
  if (addr % kPage)
    fatal("data at {:#x} is not page aligned", addr);
  size = roundUp(std::max<std::uint64_t>({size, init.size(), 1}), kPage);
  checkFree(addr, size);
  DataRegion r;
  r.base = addr;
  r.size = size;
  r.memory = allocHost(size);
  std::memset(r.memory.get(), 0, size);
  if (!init.empty())
    std::memcpy(r.memory.get(), init.data(), init.size());
  for (CpuRuntime &cpu : cpus)
    check(uc_mem_map_ptr(cpu.uc, addr, size, UC_PROT_READ | UC_PROT_WRITE, r.memory.get()),
          "uc_mem_map_ptr(data)");
  data.push_back(std::move(r));
}

TextRegion *Machine::Impl::textAt(std::uint64_t addr) {
  if (lastText && lastText->contains(addr))
    return lastText;
  for (TextRegion &r : text)
    if (r.contains(addr))
      return lastText = &r;
  return nullptr;
}

const TextRegion *Machine::Impl::textAt(std::uint64_t addr) const {
  for (const TextRegion &r : text)
    if (r.contains(addr))
      return &r;
  return nullptr;
}

TextRegion *Machine::Impl::textRange(std::uint64_t addr, std::uint64_t size) {
  TextRegion *r = textAt(addr);
  if (!r || size == 0 || addr + size - r->base > r->size)
    return nullptr;
  return r;
}

bool Machine::Impl::lineWatchedAt(std::uint64_t addr) {
  TextRegion *r = textAt(addr);
  return r && r->lineWatched[(addr - r->base) / kLineSize];
}

bool Machine::Impl::needsStep(unsigned cpu, std::uint64_t pc) {
  return state.cpus[cpu].pending() || lineWatchedAt(pc) || lineWatchedAt(pc + maxInsn - 1);
}

void Machine::Impl::watchLines(std::uint64_t addr, std::uint64_t size) {
  TextRegion *r = textRange(addr, size);
  FTSIM_ASSERT(r);
  for (std::uint64_t line = lineOf(addr); line < addr + size; line += kLineSize) {
    std::uint8_t &w = r->lineWatched[(line - r->base) / kLineSize];
    if (w)
      continue;
    w = 1;
    if (config.quantum == 1)
      continue;
    // Fast mode: make runs stop before this line. Translated blocks made before the hook existed
    // have no call to it, so they go.
    std::uint64_t from = line - (maxInsn - 1);
    for (CpuRuntime &cpu : cpus) {
      if (!cpu.hookedLines.insert(line).second)
        continue;
      uc_hook h;
      check(uc_hook_add(cpu.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&onWatchedCode), &cpu,
                        from, line + kLineSize - 1),
            "uc_hook_add(CODE)");
      uc_ctl_remove_cache(cpu.uc, from, line + kLineSize);
    }
  }
}

// --- Registers and task switching ----------------------------------------------------------------

std::uint64_t Machine::Impl::readReg(unsigned cpu, int id) const {
  std::uint64_t v = 0;
  check(uc_reg_read(cpus[cpu].uc, id, &v), "uc_reg_read");
  return v;
}

void Machine::Impl::writeReg(unsigned cpu, int id, std::uint64_t v) {
  check(uc_reg_write(cpus[cpu].uc, id, &v), "uc_reg_write");
}

void Machine::Impl::saveRegs(unsigned cpu, std::vector<std::uint8_t> &out) {
  check(uc_context_save(cpus[cpu].uc, cpus[cpu].scratch), "uc_context_save");
  out.resize(contextSize);
  std::memcpy(out.data(), cpus[cpu].scratch, contextSize);
}

void Machine::Impl::loadRegs(unsigned cpu, const std::vector<std::uint8_t> &in) {
  FTSIM_ASSERT(in.size() == contextSize);
  std::memcpy(cpus[cpu].scratch, in.data(), contextSize);
  check(uc_context_restore(cpus[cpu].uc, cpus[cpu].scratch), "uc_context_restore");
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
}

// --- Views and the fetch model -------------------------------------------------------------------

void Machine::Impl::refreshLine(unsigned cpu, std::uint64_t line) {
  CpuState &cs = state.cpus[cpu];
  if (!cs.dirtyLines.erase(line))
    return;
  TextRegion *r = textAt(line);
  FTSIM_ASSERT(r);
  std::memcpy(r->views[cpu].get() + (line - r->base), r->canonical.get() + (line - r->base),
              kLineSize);
  uc_ctl_remove_cache(cpus[cpu].uc, line, line + kLineSize);
}

// A serialising event (IPI, exception return, isync/cpuid): the CPU's view becomes canonical.
void Machine::Impl::serialise(unsigned cpu) {
  CpuState &cs = state.cpus[cpu];
  while (!cs.dirtyLines.empty())
    refreshLine(cpu, *cs.dirtyLines.begin());
  std::uint64_t runStart = 0, runEnd = 0;
  auto flush = [&] {
    if (runEnd > runStart)
      uc_ctl_remove_cache(cpus[cpu].uc, runStart, runEnd);
  };
  const unsigned granule = arch.insnAlignment();
  for (const auto &[addr, values] : cs.history) {
    TextRegion *r = textAt(addr);
    std::memcpy(r->views[cpu].get() + (addr - r->base), r->canonical.get() + (addr - r->base),
                granule);
    if (addr != runEnd) {
      flush();
      runStart = addr;
    }
    runEnd = addr + granule;
  }
  flush();
  cs.history.clear();
}

// Stale model: before fetching at `pc`, the scheduler picks, for each fetch granule of the
// instruction that has held more than one value since the CPU last serialised, which of them it
// reads. The granule is the unit of single-copy atomic instruction fetch: a byte on x86 (the SDM
// leaves cross-modified code "model-specific", so any byte may be stale on its own), an aligned
// word on powerpc (Power ISA v3.1 Book II 1.4: aligned instruction fetches are single-copy
// atomic). Granules are chosen in address order and only while they can still belong to the
// instruction: once the bytes chosen so far decode to an instruction that ends before the next
// candidate, the later ones cannot matter (x86 decoding consumes bytes in order).
void Machine::Impl::chooseStaleBytes(unsigned cpu, std::uint64_t pc, Scheduler &scheduler) {
  CpuState &cs = state.cpus[cpu];
  TextRegion *r = textAt(pc);
  if (!r)
    return;
  const unsigned granule = arch.insnAlignment();
  std::uint64_t end = std::min(pc + maxInsn, r->base + r->size);
  std::uint8_t *view = r->views[cpu].get();
  std::uint64_t lo = 0, hi = 0;
  for (auto it = cs.history.lower_bound(pc - pc % granule);
       it != cs.history.end() && it->first < end; ++it) {
    std::uint64_t addr = it->first;
    if (addr > pc && granule == 1) {
      std::span<const std::uint8_t> bytes(view + (pc - r->base), end - pc);
      auto insns = arch.disassemble(bytes, pc);
      if (!insns.empty() && pc + insns.front().size <= addr)
        break;
    }
    DecisionPoint point;
    point.kind = DecisionKind::StaleByte;
    point.options = static_cast<std::uint32_t>(it->second.size() / granule);
    point.cpu = cpu;
    point.addr = addr;
    point.values = it->second;
    std::uint32_t choice = decide(scheduler, point);
    const std::uint8_t *value = it->second.data() + std::size_t{choice} * granule;
    std::uint8_t *slot = view + (addr - r->base);
    if (std::memcmp(slot, value, granule) != 0) {
      std::memcpy(slot, value, granule);
      lo = lo == hi ? addr : lo;
      hi = addr + granule;
    }
  }
  if (hi > lo)
    uc_ctl_remove_cache(cpus[cpu].uc, lo, hi);
}

// Everything a CPU must do to its view before fetching at `pc` (the second half of a split fetch
// when `secondHalf`).
void Machine::Impl::prepareFetch(unsigned cpu, std::uint64_t pc, bool secondHalf,
                                 Scheduler &scheduler) {
  CpuState &cs = state.cpus[cpu];
  if (!cs.dirtyLines.empty()) {
    if (!secondHalf)
      refreshLine(cpu, lineOf(pc));
    refreshLine(cpu, lineOf(pc + maxInsn - 1));
  }
  if (!cs.history.empty())
    chooseStaleBytes(cpu, pc, scheduler);
}

std::uint32_t Machine::Impl::decide(Scheduler &scheduler, const DecisionPoint &point) {
  std::uint32_t choice = scheduler.decide(self, point);
  if (choice >= point.options)
    FTSIM_PANIC("scheduler answered {} to a decision with {} options", choice, point.options);
  state.decisions.push_back({point.kind, choice, point.options});
  return choice;
}

// --- Enabled events ------------------------------------------------------------------------------

bool Machine::Impl::patcherHoldsCpu(unsigned cpu) const {
  if (cpu != config.patcherCpu)
    return false;
  PatcherState s = patcher.state;
  return s == PatcherState::Store || s == PatcherState::Publish || s == PatcherState::WaitIpis;
}

std::size_t Machine::Impl::enabledEvents(EventChoice *out) {
  std::size_t n = 0;
  for (unsigned c = 0; c < config.cpus; ++c) {
    CpuState &cs = state.cpus[c];
    auto cpu = static_cast<std::uint8_t>(c);
    if (cs.ipiPending && !cs.halfFetched)
      out[n++] = {EventKind::Ipi, cpu};
    if (cs.current < 0 || patcherHoldsCpu(c))
      continue;
    out[n++] = {stepKind(c), cpu};
    if (config.preemption && !cs.halfFetched && cs.runnable > 1)
      out[n++] = {EventKind::Preempt, cpu};
  }
  if (patcher.state == PatcherState::Store)
    out[n++] = {EventKind::Store, static_cast<std::uint8_t>(config.patcherCpu)};
  else if (patcher.state == PatcherState::Publish)
    out[n++] = {EventKind::Publish, static_cast<std::uint8_t>(config.patcherCpu)};
  return n;
}

EventKind Machine::Impl::stepKind(unsigned cpu) {
  CpuState &cs = state.cpus[cpu];
  if (cs.halfFetched)
    return EventKind::Step;
  std::uint64_t pc = cs.pc;
  // Line model: an instruction that may straddle two lines of watched text is fetched in two
  // events (a "may", decided without decoding: a spurious split only adds a harmless event).
  if (config.fetchModel == FetchModel::Line && pc % kLineSize > kLineSize - maxInsn &&
      (lineWatchedAt(pc) || lineWatchedAt(pc + maxInsn - 1)))
    return EventKind::FetchLine;
  if (config.quantum > 1 && !needsStep(cpu, pc))
    return EventKind::Run;
  return EventKind::Step;
}

// --- Executing events ----------------------------------------------------------------------------

EventRecord Machine::Impl::beginRecord(EventKind kind, unsigned cpu) {
  EventRecord rec;
  rec.index = state.log.size();
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

void Machine::Impl::stopTask(unsigned cpu, TaskState why) {
  CpuState &cs = state.cpus[cpu];
  TaskRecord &t = state.tasks[cs.current];
  t.info.state = why;
  --cs.runnable;
  switchTo(cpu, nextTask(cpu));
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
    if (trapHandler(ctx, trapAddr) == arch::TrapVerdict::Handled) {
      rec.outcome = StepOutcome::TrapHandled;
      cs.pc = readReg(cpu, abi.pcReg);
      serialise(cpu); // the handler returns with iret / rfi
      return;
    }
  }
  guestFault(cpu, rec, trapAddr,
             fmt::format("unexpected trap at {:#x} ({})", trapAddr,
                         trapHandler ? "the trap handler says it is not its own"
                                     : "no trap handler installed"));
}

void Machine::Impl::execute(unsigned cpu, EventRecord &rec, std::uint64_t count,
                            Scheduler &scheduler) {
  CpuRuntime &rt = cpus[cpu];
  CpuState &cs = state.cpus[cpu];
  const std::uint64_t pc = cs.pc;
  bool serialiseAfter = false;
  if (count == 1) {
    bool secondHalf = cs.halfFetched;
    cs.halfFetched = false;
    if (cs.pending())
      prepareFetch(cpu, pc, secondHalf, scheduler);
    if (TextRegion *r = textAt(pc)) {
      std::uint8_t flags = r->flags[pc - r->base];
      if (flags & (kSiteByte | kFreedByte))
        checkWatchedFetch(cpu, rec, *r, pc, flags);
      if (!cs.history.empty() || !cs.dirtyLines.empty() || flags) {
        std::uint8_t window[16] = {};
        std::size_t n = std::min<std::uint64_t>(sizeof window, r->base + r->size - pc);
        std::memcpy(window, r->views[cpu].get() + (pc - r->base), n);
        serialiseAfter = abi.serialising(window);
      }
    }
  }
  rt.intno = -1;
  rt.memFault = false;
  rt.memFaultAddr = 0;
  rt.dataSeen = false;
  rt.freeRunning = count > 1;
  uc_err err = uc_emu_start(rt.uc, pc, abi.unreachable, 0, count);
  rt.freeRunning = false;
  const std::uint64_t after = readReg(cpu, abi.pcReg);
  rec.pcAfter = after;
  cs.pc = after;
  if (count == 1)
    ++state.stepped;
  if (rt.dataSeen) {
    rec.dataAddr = rt.dataAddr;
    rec.dataSize = rt.dataSize;
    rec.dataWrite = rt.dataWrite;
  }
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
}

void Machine::Impl::applyStore() {
  const std::uint64_t addr = patcher.storeAddr;
  const arch::Bytes &bytes = patcher.storeBytes;
  TextRegion *r = textRange(addr, bytes.size());
  FTSIM_ASSERT(r);
  const std::uint64_t off = addr - r->base;
  const unsigned granule = arch.insnAlignment();
  for (unsigned c = 0; c < config.cpus; ++c) {
    // The writing CPU sees its own stores (x86 self-modifying-code detection; a powerpc CPU
    // reads its own stores through its data cache once it syncs, which the patcher does).
    if (c == config.patcherCpu || config.fetchModel == FetchModel::Atomic) {
      std::memcpy(r->views[c].get() + off, bytes.data(), bytes.size());
      uc_ctl_remove_cache(cpus[c].uc, addr, addr + bytes.size());
      // A granule this CPU still had stale history for is now exactly canonical.
      auto &h = state.cpus[c].history;
      h.erase(h.lower_bound(addr - addr % granule), h.lower_bound(addr + bytes.size()));
    } else if (config.fetchModel == FetchModel::Line) {
      for (std::uint64_t line = lineOf(addr); line < addr + bytes.size(); line += kLineSize)
        state.cpus[c].dirtyLines.insert(line);
    } else {
      // Record, per fetch granule the store touches, its value before and after the store.
      for (std::uint64_t g = addr - addr % granule; g < addr + bytes.size(); g += granule) {
        const std::uint64_t goff = g - r->base;
        std::uint8_t after[8];
        std::memcpy(after, r->canonical.get() + goff, granule);
        for (unsigned i = 0; i < granule; ++i)
          if (g + i >= addr && g + i < addr + bytes.size())
            after[i] = bytes[g + i - addr];
        std::vector<std::uint8_t> &h = state.cpus[c].history[g];
        auto holds = [&](const std::uint8_t *v) {
          for (std::size_t k = 0; k < h.size(); k += granule)
            if (std::memcmp(h.data() + k, v, granule) == 0)
              return true;
          return false;
        };
        if (h.empty())
          h.insert(h.end(), r->canonical.get() + goff, r->canonical.get() + goff + granule);
        if (!holds(after))
          h.insert(h.end(), after, after + granule);
        if (h.size() == granule)
          state.cpus[c].history.erase(g);
      }
    }
  }
  std::memcpy(r->canonical.get() + off, bytes.data(), bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    r->flags[off + i] |= kWritten;
  watchLines(addr, bytes.size());
  ++state.storesDone;
}

void Machine::Impl::executeEvent(const EventChoice &choice, Scheduler &scheduler) {
  const unsigned cpu = choice.cpu;
  EventRecord rec = beginRecord(choice.kind, cpu);
  switch (choice.kind) {
  case EventKind::Step:
    execute(cpu, rec, 1, scheduler);
    break;
  case EventKind::Run:
    execute(cpu, rec, config.quantum, scheduler);
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
    TaskRecord &t = state.tasks[state.cpus[cpu].current];
    t.voluntarilyOff = false;
    switchTo(cpu, nextTask(cpu));
    serialise(cpu); // the interrupt returns into the next task with iret / rfi
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
    auto &names = state.publishNames;
    auto it = std::find(names.begin(), names.end(), patcher.publishWhat);
    rec.detail = static_cast<std::uint64_t>(it - names.begin());
    if (it == names.end())
      names.push_back(patcher.publishWhat);
    (*patcher.publishWrite)();
    break;
  }
  case EventKind::Alloc:
  case EventKind::Free:
    FTSIM_PANIC("{} is not a schedulable event", eventKindName(choice.kind));
  }
  state.log.push_back(rec);
  if (choice.kind == EventKind::Store || choice.kind == EventKind::Publish)
    resumePatcher();
}

void Machine::Impl::logNote(EventKind kind, std::uint64_t addr, std::uint64_t size) {
  EventRecord rec;
  rec.index = state.log.size();
  rec.kind = kind;
  rec.cpu = static_cast<std::uint8_t>(config.patcherCpu);
  rec.storeAddr = addr;
  rec.detail = size;
  state.log.push_back(rec);
}

RunResult Machine::Impl::run(Scheduler &scheduler, std::uint64_t maxEvents) {
  RunResult result;
  EventChoice enabled[8 * 3 + 1];
  resumeWaitingPatcher();
  while (result.events < maxEvents) {
    std::size_t n = enabledEvents(enabled);
    if (n == 0) {
      if (patcher.alive) {
        EventRecord rec;
        rec.index = state.log.size();
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
      pick = decide(scheduler, point);
    }
    executeEvent(enabled[pick], scheduler);
    ++result.events;
    resumeWaitingPatcher();
  }
  result.status = RunResult::Status::EventLimit;
  return result;
}

// --- GuestContext --------------------------------------------------------------------------------

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
  for (const DataRegion &r : m_.data)
    if (addr - r.base < r.size && addr + bytes.size() - r.base <= r.size) {
      std::memcpy(r.memory.get() + (addr - r.base), bytes.data(), bytes.size());
      return true;
    }
  return false; // unmapped, or text (handlers never write text)
}

// --- Machine: scenario building and observation --------------------------------------------------

Machine::Machine(const arch::Arch &arch, MachineConfig config)
    : impl_(std::make_unique<Impl>(*this, arch, config)) {}

Machine::~Machine() = default;

const arch::Arch &Machine::arch() const { return impl_->arch; }
const MachineConfig &Machine::config() const { return impl_->config; }

void Machine::mapText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  impl_->addTextRegion(addr, bytes, 0);
}

void Machine::mapData(std::uint64_t addr, std::uint64_t size, std::span<const std::uint8_t> init) {
  impl_->addDataRegion(addr, size, init);
}

void Machine::loadImage(const arch::Image &image) {
  Impl &m = *impl_;
  if (image.arch != &m.arch)
    fatal("image '{}' is for {}, the machine is {}", image.name,
          image.arch ? image.arch->name() : "?", m.arch.name());
  for (const arch::ImageSegment &seg : image.segments) {
    const std::uint64_t base = seg.addr & ~(kPage - 1);
    std::vector<std::uint8_t> bytes(seg.addr - base, 0);
    for (std::size_t i = 0; seg.executable && i < bytes.size(); ++i)
      bytes[i] = m.abi.poison[i % m.abi.poison.size()];
    bytes.insert(bytes.end(), seg.bytes.begin(), seg.bytes.end());
    if (seg.executable)
      m.addTextRegion(base, bytes, 0);
    else
      m.addDataRegion(base, bytes.size(), bytes);
  }
  const std::pair<const char *, GuestHypercall> stubs[] = {
      {"ftsim_hc_schedule", GuestHypercall::Schedule},
      {"ftsim_hc_idle", GuestHypercall::Idle},
      {"ftsim_hc_user", GuestHypercall::User},
      {"ftsim_hc_exit", GuestHypercall::Exit},
  };
  for (const auto &[name, which] : stubs)
    if (const arch::ImageSymbol *sym = image.findSymbol(name))
      bindHypercall(which, sym->addr);
}

void Machine::bindHypercall(GuestHypercall which, std::uint64_t stubAddress) {
  if (!impl_->textAt(stubAddress))
    fatal("hypercall stub at {:#x} is not in text", stubAddress);
  impl_->builtinHypercalls[stubAddress] = which;
  if (which == GuestHypercall::Exit)
    impl_->exitStub = stubAddress;
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
  m.saveRegs(spec.cpu, t.regs);
  m.state.tasks.push_back(std::move(t));
  cs.runqueue.push_back(id);
  ++cs.runnable;
  if (cs.current >= 0) {
    m.loadRegs(spec.cpu, saved);
  } else {
    cs.current = id;
    m.state.tasks[id].voluntarilyOff = false;
    cs.pc = spec.entry;
  }
  return id;
}

void Machine::watchSite(std::uint64_t addr, std::uint32_t size,
                        std::vector<arch::Bytes> allowedStates) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, size);
  if (!r || size > 16)
    fatal("patch site {:#x}+{} is not inside text (or longer than 16 bytes)", addr, size);
  for (const arch::Bytes &s : allowedStates)
    if (s.size() != size)
      fatal("allowed state [{}] of site {:#x} is not {} bytes", arch::hexBytes(s), addr, size);
  // Watching the same site again replaces its allowed states (a new trampoline became a target).
  if (auto it = m.state.sites.find(addr); it != m.state.sites.end() && it->second.size == size) {
    it->second.allowed = std::move(allowedStates);
    return;
  }
  for (std::uint32_t i = 0; i < size; ++i) {
    if (r->flags[addr - r->base + i] & kSiteByte)
      fatal("patch site {:#x}+{} overlaps another site", addr, size);
    r->flags[addr - r->base + i] |= kSiteByte;
  }
  m.state.sites[addr] = Site{addr, size, std::move(allowedStates)};
  m.watchLines(addr, size);
}

void Machine::watchData(std::uint64_t addr, std::uint32_t size) {
  if (size == 0)
    fatal("watchData: empty range at {:#x}", addr);
  for (CpuRuntime &cpu : impl_->cpus) {
    uc_hook h;
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                      reinterpret_cast<void *>(&onDataAccess), &cpu, addr, addr + size - 1),
          "uc_hook_add(MEM)");
  }
}

void Machine::pokeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, bytes.size());
  if (!r)
    fatal("pokeText {:#x}+{} is not inside text", addr, bytes.size());
  const std::uint64_t off = addr - r->base;
  std::memcpy(r->canonical.get() + off, bytes.data(), bytes.size());
  for (unsigned c = 0; c < m.config.cpus; ++c) {
    std::memcpy(r->views[c].get() + off, bytes.data(), bytes.size());
    uc_ctl_remove_cache(m.cpus[c].uc, addr, addr + bytes.size());
    auto &h = m.state.cpus[c].history;
    h.erase(h.lower_bound(addr - addr % m.arch.insnAlignment()),
            h.lower_bound(addr + bytes.size()));
  }
}

RunResult Machine::run(Scheduler &scheduler, std::uint64_t maxEvents) {
  return impl_->run(scheduler, maxEvents);
}

std::span<const EventRecord> Machine::events() const { return impl_->state.log; }
std::span<const Decision> Machine::schedule() const { return impl_->state.decisions; }
std::span<const Finding> Machine::findings() const { return impl_->state.findings; }

std::string Machine::logText() const {
  std::string out;
  for (const EventRecord &e : impl_->state.log) {
    out += formatEvent(e);
    if (e.kind == EventKind::Publish)
      out += fmt::format(" ({})", publishName(e.detail));
    out += '\n';
  }
  for (const Finding &f : impl_->state.findings) {
    out += formatFinding(f);
    out += '\n';
  }
  return out;
}

std::string_view Machine::publishName(std::uint64_t id) const {
  const auto &names = impl_->state.publishNames;
  return id < names.size() ? std::string_view(names[id]) : std::string_view("?");
}

std::size_t Machine::taskCount() const { return impl_->state.tasks.size(); }

TaskInfo Machine::task(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->state.tasks.size())
    fatal("no task {}", id);
  return impl_->state.tasks[id].info;
}

int Machine::currentTask(unsigned cpu) const { return impl_->state.cpus.at(cpu).current; }
std::uint64_t Machine::pc(unsigned cpu) const { return impl_->state.cpus.at(cpu).pc; }
std::uint64_t Machine::reg(unsigned cpu, int ucRegId) const { return impl_->readReg(cpu, ucRegId); }
std::uint64_t Machine::steppedInstructions() const { return impl_->state.stepped; }
std::uint64_t Machine::storesDone() const { return impl_->state.storesDone; }

arch::Bytes Machine::viewBytes(unsigned cpu, std::uint64_t addr, std::size_t size) const {
  const TextRegion *r = impl_->textAt(addr);
  if (!r || addr + size - r->base > r->size)
    fatal("viewBytes {:#x}+{} is not inside text", addr, size);
  const std::uint8_t *v = r->views.at(cpu).get() + (addr - r->base);
  return arch::Bytes(v, v + size);
}

} // namespace ftsim::sim
