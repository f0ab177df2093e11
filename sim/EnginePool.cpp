// Engines kept from one machine to the next on the same thread (MachineImpl.h, "The engine
// pool").
//
// Engine-level harnesses build a kernel, so a machine, per execution. Opening its engines, mapping
// its regions and closing them again was half of such a search (`perf record` of
// tramp-free-rcu-tasks: the Machine constructor 33%, of which Unicorn zeroing a fresh 2 MiB huge
// page for its code buffer 12%; uc_close 9%), and every execution translated all its code anew
// (tb_gen_code 25%). A machine now leaves its engines to the next machine its thread makes with
// the same architecture, CPU count and way of counting (stepping only, or fast mode: Engines.cpp),
// together with the host buffers they map. That machine takes a mapping over when it maps a
// region of the same address, size and kind (the buffer is rewritten with the new bytes;
// translations go only where bytes differ, as in a snapshot restore), unmaps the rest before it
// first runs, loads the registers an engine had when it was opened and re-adds its hooks.
// Nothing a run can observe depends on where its engines came from: every corpus scenario gives
// the same report and replay file either way.

#include "MachineImpl.h"

#include "ftsim/sim/UnicornEngine.h"

#include <algorithm>
#include <cstring>
#include <optional>
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
// The mapping of `mappings` (SpareEngines::Text or Data) at exactly base and size, taken out.
template <typename Mapping>
std::optional<Mapping> takeMapping(std::vector<Mapping> &mappings, std::uint64_t base,
                                   std::uint64_t size) {
  auto it = std::find_if(mappings.begin(), mappings.end(),
                         [&](const Mapping &m) { return m.base == base && m.size == size; });
  if (it == mappings.end())
    return std::nullopt;
  Mapping m = std::move(*it);
  mappings.erase(it);
  return m;
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
  if (spare->arch != &arch || spare->cpus != config.cpus ||
      spare->stepping != (config.quantum == 1)) {
    spare->close();
    spare.reset();
    return false;
  }
  adopted = std::make_unique<SpareEngines>(std::move(*spare));
  spare.reset();
  restoresSinceRenewal = adopted->restores;
  machinesOnEngines = adopted->machines;
  for (unsigned i = 0; i < config.cpus; ++i) {
    CpuRuntime &cpu = cpus[i];
    CpuRuntime &old = adopted->engines[i];
    for (uc_hook h : old.hooks)
      check(uc_hook_del(old.uc, h), "uc_hook_del");
    cpu.uc = std::exchange(old.uc, nullptr);
    cpu.scratch = std::exchange(old.scratch, nullptr);
    cpu.pristine = std::exchange(old.pristine, nullptr);
    check(uc_context_restore(cpu.uc, cpu.pristine), "uc_context_restore");
    addEngineHooks(cpu);
  }
  adopted->engines.clear();
  enginesAdopted = true;
  return true;
}

bool Machine::enginesAdopted() const { return impl_->enginesAdopted; }

bool Machine::Impl::adoptText(TextRegion &r) {
  if (!adopted)
    return false;
  std::optional<SpareEngines::Text> kept = takeMapping(adopted->text, r.base, r.size);
  if (!kept) {
    dropAdopted(r.base, r.size);
    return false;
  }
  r.views = std::move(kept->views);
  // The views hold what the last machine left: rewrite the pages that differ, removing their
  // translations only there.
  for (unsigned c = 0; c < config.cpus; ++c) {
    std::uint8_t *view = r.views[c].get();
    const std::uint8_t *bytes = r.canonical.get();
    for (std::uint64_t off = 0; off < r.size; off += kPage) {
      const std::uint64_t n = std::min(kPage, r.size - off);
      if (std::memcmp(view + off, bytes + off, n) != 0)
        rewriteView(c, r, r.base + off, bytes + off, n);
    }
  }
  return true;
}

bool Machine::Impl::adoptData(DataRegion &r) {
  if (!adopted)
    return false;
  std::optional<SpareEngines::Data> kept = takeMapping(adopted->data, r.base, r.size);
  if (!kept) {
    dropAdopted(r.base, r.size);
    return false;
  }
  r.memory = std::move(kept->memory);
  return true;
}

void Machine::Impl::dropAdopted(std::uint64_t addr, std::uint64_t size) {
  if (!adopted)
    return;
  // Unicorn removes the translations with the mapping: a later jump there faults (a test enters
  // such text).
  const auto drop = [&](auto &mappings) {
    std::erase_if(mappings, [&](const auto &m) {
      if (!(addr < m.base + m.size && m.base < addr + size))
        return false;
      for (CpuRuntime &cpu : cpus)
        check(uc_mem_unmap(cpu.uc, m.base, m.size), "uc_mem_unmap");
      return true;
    });
  };
  drop(adopted->text);
  drop(adopted->data);
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
      closeEngine(cpu);
    return;
  }
  dropUnadopted();
  SpareEngines spare;
  spare.arch = &arch;
  spare.cpus = config.cpus;
  spare.stepping = config.quantum == 1;
  spare.machines = machinesOnEngines + 1;
  spare.restores = restoresSinceRenewal;
  for (CpuRuntime &cpu : cpus) {
    CpuRuntime kept;
    kept.uc = std::exchange(cpu.uc, nullptr);
    kept.scratch = std::exchange(cpu.scratch, nullptr);
    kept.pristine = std::exchange(cpu.pristine, nullptr);
    kept.hooks = std::move(cpu.hooks);
    spare.engines.push_back(std::move(kept));
  }
  for (TextRegion &r : text)
    spare.text.push_back({r.base, r.size, std::move(r.views)});
  for (DataRegion &r : data)
    spare.data.push_back({r.base, r.size, std::move(r.memory)});
  if (pool.spare)
    pool.spare->close();
  pool.spare = std::move(spare);
}

} // namespace ftsim::sim
