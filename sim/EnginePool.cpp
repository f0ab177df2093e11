// Engines kept from one machine to the next on the same thread (MachineImpl.h, "The engine
// pool").
//
// Engine-level harnesses build a kernel, so a machine, per execution. Opening its engines, mapping
// its regions and closing them again was half of such a search (`perf record` of
// tramp-free-rcu-tasks: the Machine constructor 33%, of which Unicorn zeroing a fresh 2 MiB huge
// page for its code buffer 12%; uc_close 9%), and every execution translated all its code anew
// (tb_gen_code 25%). A machine now leaves its engines to the next machine its thread makes with
// the same architecture, CPU count and engine hooks (EngineHooks: Unicorn's count, a hook before
// every instruction, or one before every block), together with the host buffers they map. That
// machine takes a mapping over when it maps a region of the same address, size and kind (the buffer
// is rewritten with the new bytes; translations go only where bytes differ, as in a snapshot
// restore), unmaps the rest before it first runs, loads the registers an engine had when it was
// opened and adds its own data hooks. The engines keep their other hooks, and the per-CPU runtimes
// those hooks point at go with them: deleting a code hook makes Unicorn drop every translation it
// instrumented. That, and rewriting whole pages of text and trampoline memory (adoptText below),
// had each machine translate nearly all its code anew (op-func-residual-race, 40 random runs: 111
// translations an execution, 68% of the host instructions; 39 now). Nothing a run can observe
// depends on where its engines came from: every corpus scenario gives the same report and replay
// file either way.

#include "MachineImpl.h"

#include "ftsim/arch/UnicornEngine.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

namespace ftsim::sim {

void SpareEngines::close() {
  for (CpuRuntime &cpu : engines)
    closeUnicorn(cpu);
  engines.clear();
  text.clear();
  data.clear();
}

namespace {
// The adopted mapping (SpareEngines::text or data) at exactly base and size, taken out; without
// one, the adopted mappings overlapping that range are unmapped and none is returned.
template <typename Mapping>
std::optional<Mapping> takeMapping(Machine::Impl &m, std::vector<Mapping> SpareEngines::*mappings,
                                   std::uint64_t base, std::uint64_t size) {
  if (!m.adopted)
    return std::nullopt;
  std::vector<Mapping> &list = (*m.adopted).*mappings;
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const Mapping &k) { return k.base == base && k.size == size; });
  if (it == list.end()) {
    m.dropAdopted(base, size);
    return std::nullopt;
  }
  Mapping kept = std::move(*it);
  list.erase(it);
  return kept;
}

// Moves the engine, its two contexts and its block hook from `from` to `to`.
void moveEngine(CpuRuntime &to, CpuRuntime &from) {
  to.uc = std::exchange(from.uc, nullptr);
  to.scratch = std::exchange(from.scratch, nullptr);
  to.pristine = std::exchange(from.pristine, nullptr);
  to.blockHook = std::exchange(from.blockHook, 0);
  to.blockGate = std::move(from.blockGate);
  // Counts by address and bytes, true whatever the machine (BlockRuns.cpp).
  to.decodedBlocks = std::move(from.decodedBlocks);
}

// Per thread: every engine is used only by the thread that opened it.
struct SparePool {
  std::optional<SpareEngines> spare;
  ~SparePool() {
    if (spare)
      spare->close();
  }
};
thread_local SparePool pool;
} // namespace

bool Machine::Impl::adoptEngines() {
  std::optional<SpareEngines> &spare = pool.spare;
  if (!spare)
    return false;
  if (spare->arch != &arch || spare->cpus != config.cpus || spare->hooks != engineHooks) {
    spare->close();
    spare.reset();
    return false;
  }
  adopted = std::make_unique<SpareEngines>(std::move(*spare));
  spare.reset();
  restoresSinceRenewal = adopted->restores;
  machinesOnEngines = adopted->machines;
  // The runtimes themselves, at their addresses: the code hooks the engines keep point at them.
  // Deleting a code hook would drop every translation it instrumented (Unicorn 2.0.1 invalidates
  // a deleted hook's hooked regions), so that the next machine translated all its code again.
  for (unsigned i = 0; i < config.cpus; ++i) {
    CpuRuntime &cpu = adopted->engines[i];
    for (uc_hook h : cpu.dataHooks)
      check(uc_hook_del(cpu.uc, h), "uc_hook_del");
    CpuRuntime fresh;
    moveEngine(fresh, cpu);
    fresh.hooks = std::move(cpu.hooks);
    cpu = std::move(fresh);
    cpu.machine = this;
    cpu.index = i;
    if (cpu.blockGate)
      cpu.blockGate->cpu = &cpu;
    check(uc_context_restore(cpu.uc, cpu.pristine), "uc_context_restore");
  }
  cpus = std::move(adopted->engines);
  adopted->engines.clear();
  for (CpuRuntime &cpu : cpus)
    for (const DataWatch &w : dataWatches)
      hookData(cpu, w);
  enginesAdopted = true;
  return true;
}

bool Machine::enginesAdopted() const { return impl_->enginesAdopted; }

bool Machine::Impl::adoptText(TextRegion &r, std::span<const std::uint8_t> bytes) {
  std::optional<SpareEngines::Text> kept = takeMapping(*this, &SpareEngines::text, r.base, r.size);
  if (!kept)
    return false;
  r.views = std::move(kept->views);
  r.translated = std::move(kept->translated);
  const bool sameInit =
      kept->init.size() == bytes.size() &&
      (bytes.empty() || std::memcmp(kept->init.data(), bytes.data(), bytes.size()) == 0);
  if (sameInit) {
    // Mapped with the same bytes: only the lines the last machine changed differ. Rewriting a whole
    // megabyte of trampoline memory, its flags and each view's compare was a third of an
    // engine-level execution. Their views are rewritten only before the machine first runs
    // (settleViews): a kernel writes the same trampolines and boot-time nops again at boot, and the
    // translations of bytes that end up as they were are kept. Until then they count as changed.
    r.init = std::move(kept->init);
    r.canonical = std::move(kept->canonical);
    r.flags = std::move(kept->flags);
    for (std::uint32_t line : kept->changedLines) {
      initLine(r, line);
      r.markChanged(line);
      r.pendingViews.push_back(line);
    }
    viewsPending = viewsPending || !r.pendingViews.empty();
    return true;
  }
  // Other bytes: rewrite the pages of the views that differ, removing their translations only
  // where bytes changed.
  initText(r, bytes);
  for (unsigned c = 0; c < config.cpus; ++c) {
    std::uint8_t *view = r.views[c].get();
    const std::uint8_t *canonical = r.canonical.get();
    for (std::uint64_t off = 0; off < r.size; off += kPage) {
      const std::uint64_t n = std::min(kPage, r.size - off);
      if (std::memcmp(view + off, canonical + off, n) != 0)
        rewriteView(c, r, r.base + off, canonical + off, n);
    }
  }
  return true;
}

bool Machine::Impl::adoptData(DataRegion &r) {
  std::optional<SpareEngines::Data> kept = takeMapping(*this, &SpareEngines::data, r.base, r.size);
  if (!kept)
    return false;
  r.memory = std::move(kept->memory);
  return true;
}

void Machine::Impl::dropAdopted(std::uint64_t addr, std::uint64_t size) {
  if (!adopted)
    return;
  // The translations of the memory go first: Unicorn 2.0.1 does not always remove them with the
  // mapping. An engine that counted with Unicorn's count (quantum 1) ran the last machine's code
  // from them when the next machine mapped other text of another size at the same address (a test
  // does), though a later jump into unmapped memory faults.
  const auto drop = [&](auto &mappings) {
    std::erase_if(mappings, [&](const auto &m) {
      if (!(addr < m.base + m.size && m.base < addr + size))
        return false;
      for (CpuRuntime &cpu : cpus) {
        check(uc_ctl_remove_cache(cpu.uc, m.base, m.base + m.size), "uc_ctl_remove_cache");
        check(uc_mem_unmap(cpu.uc, m.base, m.size), "uc_mem_unmap");
      }
      return true;
    });
  };
  drop(adopted->text);
  drop(adopted->data);
}

void Machine::Impl::settleViews() {
  if (!viewsPending)
    return;
  viewsPending = false;
  for (TextRegion &r : text) {
    for (std::uint32_t line : r.pendingViews) {
      const std::uint64_t off = std::uint64_t{line} * kLineSize;
      for (unsigned c = 0; c < config.cpus; ++c)
        rewriteView(c, r, r.base + off, r.canonical.get() + off, kLineSize);
    }
    r.pendingViews.clear();
  }
}

void Machine::Impl::dropUnadopted() {
  if (!adopted)
    return;
  dropAdopted(0, ~std::uint64_t{0});
  adopted.reset();
}

void Machine::Impl::releaseEngines() {
  if (machinesOnEngines + 1 >= config.machinesPerEngine ||
      (config.restoresPerEngine && restoresSinceRenewal >= config.restoresPerEngine)) {
    for (CpuRuntime &cpu : cpus)
      closeUnicorn(cpu);
    return;
  }
  dropUnadopted();
  SpareEngines spare;
  spare.arch = &arch;
  spare.cpus = config.cpus;
  spare.hooks = engineHooks;
  spare.machines = machinesOnEngines + 1;
  spare.restores = restoresSinceRenewal;
  spare.engines = std::move(cpus); // the runtimes stay where the code hooks point
  for (TextRegion &r : text)
    spare.text.push_back({r.base, r.size, std::move(r.views), std::move(r.translated),
                          std::move(r.canonical), std::move(r.flags), std::move(r.init),
                          std::move(r.changedLines)});
  for (DataRegion &r : data)
    spare.data.push_back({r.base, r.size, std::move(r.memory)});
  if (pool.spare)
    pool.spare->close();
  pool.spare = std::move(spare);
}

} // namespace ftsim::sim
