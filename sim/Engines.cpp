// The Unicorn engines: one per CPU, opened with everything the machine has mapped and hooked, and
// renewed from time to time so that Unicorn's translated-code buffer stays bounded.
//
// Why renew. Unicorn 2.0.1 allocates a 1 GiB code buffer per engine and never gives pages back: a
// restore removes the translations of the lines it rewrites, the next execution translates them
// again at the buffer's end, so resident memory grows by the code of every retranslation (6.5-11
// KB per execution of a site scenario) until the buffer is full. Then Unicorn flushes every
// translation from inside code generation, and in long explorations (350,000-420,000 executions)
// that path ended in SIGSEGV or SIGILL inside libunicorn (unicorn-engine/unicorn issues #1923 and
// #2048 report the same crash, a chained jump into a flushed block). An explicit flush between
// executions (UC_CTL_TB_FLUSH) avoids that path but touches the whole buffer: 1 GiB resident per
// engine at once. Closing the engine returns the buffer to the system; the machine's memory,
// views, registers and hooks are host state it re-maps and re-adds into the new engine, so a
// renewal changes no guest-visible state, only what Unicorn must translate again.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/UnicornEngine.h"

#include <algorithm>

namespace ftsim::sim {

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
    cpu->dataPc = cpu->machine->readReg(cpu->index, cpu->machine->abi.pcReg);
    cpu->dataAddr = address;
    cpu->dataSize = static_cast<std::uint8_t>(size);
    cpu->dataWrite = type == UC_MEM_WRITE;
  } else {
    // A second access of the same instruction (a locked read-modify-write): the footprint covers
    // both, and is a write if either is.
    const std::uint64_t lo = std::min(cpu->dataAddr, address);
    const std::uint64_t hi = std::max(cpu->dataAddr + cpu->dataSize, address + size);
    cpu->dataAddr = lo;
    cpu->dataSize = static_cast<std::uint8_t>(std::min<std::uint64_t>(hi - lo, 255));
    cpu->dataWrite = cpu->dataWrite || type == UC_MEM_WRITE;
  }
  if (cpu->freeRunning)
    uc_emu_stop(uc);
}

// The second code hook of a fast-mode engine (addEngineHooks says why).
void onNoCode(uc_engine *, std::uint64_t, std::uint32_t, void *) {}

} // namespace

// onCode's and onStep's long paths, out of line (tail calls) so that their short paths save no
// registers: a stop (once per step when the machine only steps: not cold), and a look at a line
// not yet known clear of watched text.
[[gnu::noinline]] void stopBefore(uc_engine *uc, CpuRuntime *cpu, std::uint64_t address) {
  cpu->stoppedByCode = true;
  cpu->stopPc = address;
  uc_emu_stop(uc);
}

[[gnu::noinline]] void onCodeAtLine(uc_engine *uc, CpuRuntime *cpu, std::uint64_t address) {
  if (cpu->budget == 0)
    return stopBefore(uc, cpu, address);
  const std::uint64_t line = lineOf(address);
  if (cpu->machine->lineWatchedAt(line) || cpu->machine->lineWatchedAt(line + kLineSize)) {
    if (cpu->machine->needsStep(cpu->index, address))
      return stopBefore(uc, cpu, address);
  } else {
    cpu->clearLine = line;
  }
  --cpu->budget;
}

// The code hook that ends a start, called before each instruction (uc_emu_stop in it stops before
// that instruction executes): a start ends after its budget of instructions, and in fast mode a run
// ends before the first watched instruction (needsStep). It notes where it stopped (the next
// event's pc), so that the machine need not read the pc back from the engine.
// Why not Unicorn's own count: in fast mode it would be a second code hook on every instruction,
// beside hooks on watched lines (one per line: Unicorn walks the whole list at each instruction),
// and Unicorn 2.0.1 drops every translation when a start without a count follows one with it. A
// machine that only steps would pay the same for either hook (Unicorn's count is a code hook too),
// but then reads the pc from the engine after every step.
// A run starts only where nothing is pending and watched lines change only between events, so
// within a run an instruction needs a step exactly when its line or the next is watched; the last
// line found clear of both is remembered (CpuRuntime::clearLine, reset at every start).
void onCode(uc_engine *uc, std::uint64_t address, std::uint32_t, void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  if (cpu->budget != 0 && (!cpu->freeRunning || lineOf(address) == cpu->clearLine)) {
    --cpu->budget;
    return;
  }
  onCodeAtLine(uc, cpu, address);
}

// The code hook of a machine that only steps: onCode without the watched lines' checks.
void onStep(uc_engine *uc, std::uint64_t address, std::uint32_t, void *user) {
  auto *cpu = static_cast<CpuRuntime *>(user);
  if (cpu->budget != 0) {
    --cpu->budget;
    return;
  }
  stopBefore(uc, cpu, address);
}

void Machine::Impl::hookData(CpuRuntime &cpu, const DataWatch &w) {
  uc_hook h;
  check(uc_hook_add(cpu.uc, &h, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                    reinterpret_cast<void *>(&onDataAccess), &cpu, w.addr, w.addr + w.size - 1),
        "uc_hook_add(MEM)");
  cpu.dataHooks.push_back(h);
}

// The hooks every engine has (traps, faults), the hook that ends its starts (EngineHooks: onCode
// before every instruction, onBlock before every block) and the watched data ranges.
void Machine::Impl::addEngineHooks(CpuRuntime &cpu) {
  uc_hook h;
  check(uc_hook_add(cpu.uc, &h, UC_HOOK_INTR, reinterpret_cast<void *>(&onInterrupt), &cpu, 1, 0),
        "uc_hook_add(INTR)");
  cpu.hooks.push_back(h);
  check(uc_hook_add(cpu.uc, &h, UC_HOOK_MEM_INVALID, reinterpret_cast<void *>(&onInvalidMemory),
                    &cpu, 1, 0),
        "uc_hook_add(MEM_INVALID)");
  cpu.hooks.push_back(h);
  switch (engineHooks) {
  case EngineHooks::Steps:
    // One code hook, as Unicorn's own count would be.
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&onStep), &cpu, 1, 0),
          "uc_hook_add(CODE)");
    cpu.hooks.push_back(h);
    break;
  case EngineHooks::Instructions:
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&onCode), &cpu, 1, 0),
          "uc_hook_add(CODE)");
    cpu.hooks.push_back(h);
    // A second code hook, on address 0 only, doing nothing: with one code hook Unicorn 2.0.1
    // calls it directly from translated code, and registers that call at every translated
    // instruction (a helper name formatted with snprintf, a hash-table insert), which made a site
    // search, mostly translation, 6% dearer (callgrind: 910 M host instructions against 860 M
    // for `ftsim check --protocol int3 --cpus 2 --sites 2`). With two it calls its generic helper,
    // which walks both: the same speed on engine-level scenarios (farm-bench, 0.94 and 1.04).
    check(uc_hook_add(cpu.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&onNoCode), &cpu, 0, 0),
          "uc_hook_add(CODE)");
    cpu.hooks.push_back(h);
    break;
  case EngineHooks::Blocks:
    // One block hook, alone of its kind: Unicorn 2.0.1 then calls it directly from translated
    // code (two of them made a 3-instruction loop six times slower, through its generic helper).
    if (!cpu.blockGate)
      cpu.blockGate = std::make_unique<BlockGate>();
    cpu.blockGate->cpu = &cpu;
    if (!cpu.blockHook)
      check(uc_hook_add(cpu.uc, &cpu.blockHook, UC_HOOK_BLOCK, reinterpret_cast<void *>(&onBlock),
                        cpu.blockGate.get(), 1, 0),
            "uc_hook_add(BLOCK)");
    break;
  }
  for (const DataWatch &w : dataWatches)
    hookData(cpu, w);
}

// A new engine for `cpu` holding what the machine has: every text region (this CPU's view) and
// data region at its address, the trap and fault hooks, the code hook that counts and stops runs
// before watched text in fast mode (onCode), the watched data ranges. Registers are the caller's to
// load.
void Machine::Impl::openEngine(CpuRuntime &cpu) {
  check(arch::openUnicorn(static_cast<uc_arch>(arch.unicornArch()),
                          static_cast<uc_mode>(arch.unicornMode()), &cpu.uc),
        "uc_open");
  // Exits on, none set: uc_emu_start's `until` is ignored, so Unicorn never invalidates and
  // re-translates the block holding it (every step passes the unreachable address as `until`);
  // the runs end by their instruction count, a hook or a fault.
  check(uc_ctl_exits_enable(cpu.uc), "uc_ctl_exits_enable");
  check(uc_context_alloc(cpu.uc, &cpu.scratch), "uc_context_alloc");
  check(uc_context_alloc(cpu.uc, &cpu.pristine), "uc_context_alloc");
  check(uc_context_save(cpu.uc, cpu.pristine), "uc_context_save");
  cpu.traceFlagKnown = false;
  for (TextRegion &r : text)
    check(uc_mem_map_ptr(cpu.uc, r.base, r.size, UC_PROT_READ | UC_PROT_EXEC,
                         r.views[cpu.index].get()),
          "uc_mem_map_ptr(text)");
  for (DataRegion &r : data)
    check(uc_mem_map_ptr(cpu.uc, r.base, r.size, UC_PROT_READ | UC_PROT_WRITE, r.memory.get()),
          "uc_mem_map_ptr(data)");
  addEngineHooks(cpu);
}

void closeUnicorn(CpuRuntime &cpu) {
  if (cpu.pristine)
    uc_context_free(cpu.pristine);
  if (cpu.scratch)
    uc_context_free(cpu.scratch);
  if (cpu.uc)
    uc_close(cpu.uc);
  cpu.pristine = nullptr;
  cpu.scratch = nullptr;
  cpu.uc = nullptr;
  cpu.hooks.clear();
  cpu.dataHooks.clear();
  cpu.blockHook = 0;
  cpu.blockGate.reset();
}

// Each CPU's registers move from the old engine to a new one.
void Machine::Impl::reopenEngines() {
  std::vector<std::uint8_t> regs;
  for (CpuRuntime &cpu : cpus) {
    saveRegs(cpu.index, regs);
    closeUnicorn(cpu);
    cpu.blockCounts = {};
    for (TextRegion &r : text) // a new engine has translated nothing
      std::fill(r.translated[cpu.index].begin(), r.translated[cpu.index].end(), 0);
    openEngine(cpu);
    loadRegs(cpu.index, regs);
  }
}

// Between executions only (restore).
void Machine::Impl::renewEngines() {
  reopenEngines();
  restoresSinceRenewal = 0;
  machinesOnEngines = 0;
  ++engineRenewals;
}

std::uint64_t Machine::engineRenewals() const { return impl_->engineRenewals; }

void Machine::watchData(std::uint64_t addr, std::uint32_t size) {
  if (size == 0)
    fatal("watchData: empty range at {:#x}", addr);
  impl_->dataWatches.push_back({addr, size});
  if (impl_->engineHooks == EngineHooks::Blocks) {
    // A run must stop right after a watched access, and a stop asked by the memory hook inside a
    // block leaves the pc at the block's entry (BlockRuns.cpp): a hook before every instruction.
    impl_->dropUnadopted(); // the adopted mappings go with the old engines
    impl_->engineHooks = EngineHooks::Instructions;
    impl_->reopenEngines(); // with the new hooks and every watched range
    return;
  }
  for (CpuRuntime &cpu : impl_->cpus)
    impl_->hookData(cpu, impl_->dataWatches.back());
}

} // namespace ftsim::sim
