// Memory: text regions (canonical copy and per-CPU instruction views), data regions, watched
// lines, and how views follow stores and serialisations under the configured fetch model.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

namespace ftsim::sim {

namespace {

// The recycled buffers of this thread, by size, up to kPoolBytes in all.
constexpr std::uint64_t kPoolBytes = 64 << 20;
thread_local bool poolGone = false; // after the pool's end (thread exit), buffers are just freed
struct HostPool {
  std::multimap<std::uint64_t, std::uint8_t *> buffers;
  std::uint64_t bytes = 0;
  ~HostPool() {
    for (const auto &entry : buffers)
      std::free(entry.second);
    poolGone = true;
  }
};
thread_local HostPool pool;

// `size` bytes of the ISA's poison pattern (repeated from offset 0), by doubling copies: a byte
// loop with a modulo cost a third of building a machine.
void fillPoison(std::uint8_t *out, std::uint64_t size, std::span<const std::uint8_t> poison) {
  std::uint64_t done = std::min<std::uint64_t>(poison.size(), size);
  std::memcpy(out, poison.data(), done);
  while (done < size) {
    const std::uint64_t n = std::min(done, size - done);
    std::memcpy(out + done, out, n);
    done += n;
  }
}

} // namespace

HostBuffer allocHost(std::uint64_t size) {
  if (!poolGone)
    if (auto it = pool.buffers.find(size); it != pool.buffers.end()) {
      std::uint8_t *p = it->second;
      pool.buffers.erase(it);
      pool.bytes -= size;
      return HostBuffer(p, HostDeleter{size});
    }
  auto *p = static_cast<std::uint8_t *>(std::aligned_alloc(kPage, roundUp(size, kPage)));
  if (!p)
    FTSIM_PANIC("out of host memory allocating {} bytes", size);
  return HostBuffer(p, HostDeleter{size});
}

void HostDeleter::operator()(std::uint8_t *p) const {
  if (!poolGone && pool.bytes + size <= kPoolBytes) {
    pool.buffers.emplace(size, p);
    pool.bytes += size;
    return;
  }
  std::free(p);
}

void Machine::Impl::checkFree(std::uint64_t addr, std::uint64_t size) const {
  for (const TextRegion &r : text)
    if (addr < r.base + r.size && r.base < addr + size)
      fatal("mapping {:#x}+{:#x} overlaps text at {:#x}", addr, size, r.base);
  for (const DataRegion &r : data)
    if (addr < r.base + r.size && r.base < addr + size)
      fatal("mapping {:#x}+{:#x} overlaps data at {:#x}", addr, size, r.base);
}

void Machine::Impl::initText(TextRegion &r, std::span<const std::uint8_t> bytes) {
  r.init.assign(bytes.begin(), bytes.end());
  r.canonical = allocHost(r.size);
  fillPoison(r.canonical.get(), r.size, abi.poison);
  if (!bytes.empty()) // memcpy from an empty span's null data() is undefined
    std::memcpy(r.canonical.get(), bytes.data(), bytes.size());
  r.flags = allocHost(r.size);
  std::memset(r.flags.get(), 0, r.size);
}

void Machine::Impl::initLine(TextRegion &r, std::uint64_t line) {
  const std::uint64_t off = line * kLineSize;
  const std::span<const std::uint8_t> poison = abi.poison;
  std::uint8_t *out = r.canonical.get() + off;
  for (std::uint64_t i = 0; i < kLineSize; ++i)
    out[i] = off + i < r.init.size() ? r.init[off + i] : poison[(off + i) % poison.size()];
  std::memset(r.flags.get() + off, 0, kLineSize);
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
  r.lineWatched.assign(size / kLineSize, 0);
  r.lineDirty.assign(size / kLineSize, 0);
  r.lineChanged.assign(size / kLineSize, 0);
  if (adoptText(r, bytes)) { // EnginePool.cpp: mapped already, rewritten where it differed
    text.push_back(std::move(r));
    lastText = nullptr;
    return;
  }
  initText(r, bytes);
  for (CpuRuntime &cpu : cpus) {
    HostBuffer view = allocHost(size);
    std::memcpy(view.get(), r.canonical.get(), size);
    check(uc_mem_map_ptr(cpu.uc, addr, size, UC_PROT_READ | UC_PROT_EXEC, view.get()),
          "uc_mem_map_ptr(text)");
    r.views.push_back(std::move(view));
    r.translated.emplace_back(size / kLineSize, 0);
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
  const bool mapped = adoptData(r); // EnginePool.cpp
  if (!mapped)
    r.memory = allocHost(size);
  std::memset(r.memory.get(), 0, size);
  if (!init.empty())
    std::memcpy(r.memory.get(), init.data(), init.size());
  if (!mapped)
    for (CpuRuntime &cpu : cpus)
      check(uc_mem_map_ptr(cpu.uc, addr, size, UC_PROT_READ | UC_PROT_WRITE, r.memory.get()),
            "uc_mem_map_ptr(data)");
  data.push_back(std::move(r));
}

std::uint8_t *Machine::Impl::dataHost(std::uint64_t addr, std::uint64_t size) {
  for (DataRegion &r : data)
    if (addr - r.base < r.size && r.size - (addr - r.base) >= size)
      return r.memory.get() + (addr - r.base);
  return nullptr;
}

TextRegion *Machine::Impl::findText(std::uint64_t addr) {
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
  return state.cpus[cpu].pending() || watchedInstructionAt(pc);
}

bool Machine::Impl::writtenOutsideSites(const TextRegion &r, std::uint64_t off,
                                        std::uint64_t end) const {
  const std::uint8_t *flags = r.flags.get();
  const std::uint64_t n = end - off;
  // Looked at for every step on a watched line (4% of list-to-single-race-fixed byte by byte): the
  // instruction's flags as two words, a byte's kWritten without its kSiteByte in its lowest bit.
  static_assert(kSiteByte == 1 && kWritten == 4);
  if constexpr (std::endian::native == std::endian::little) {
    if (n <= 16 && off + 16 <= r.size) {
      constexpr std::uint64_t kOnes = 0x0101010101010101ull;
      std::uint64_t w[2];
      std::memcpy(w, flags + off, sizeof w);
      std::uint64_t lo = (w[0] >> 2) & ~w[0] & kOnes, hi = (w[1] >> 2) & ~w[1] & kOnes;
      if (n < 8)
        lo &= (std::uint64_t{1} << (8 * n)) - 1;
      if (n <= 8)
        hi = 0;
      else if (n < 16)
        hi &= (std::uint64_t{1} << (8 * (n - 8))) - 1;
      return (lo | hi) != 0;
    }
  }
  for (std::uint64_t i = off; i < end; ++i)
    if ((flags[i] & (kWritten | kSiteByte)) == kWritten)
      return true;
  return false;
}

bool Machine::Impl::watchedInstructionAt(std::uint64_t pc) {
  return lineWatchedAt(pc) || lineWatchedAt(pc + maxInsn - 1);
}

void Machine::Impl::watchLines(std::uint64_t addr, std::uint64_t size) {
  TextRegion *r = textRange(addr, size);
  FTSIM_ASSERT(r);
  for (std::uint64_t line = lineOf(addr); line < addr + size; line += kLineSize) {
    std::uint8_t &w = r->lineWatched[(line - r->base) / kLineSize];
    if (w)
      continue;
    w = 1;
    r->touch(line - r->base, kLineSize); // runs stop before it from now on (onCode)
  }
}

void Machine::Impl::refreshLine(unsigned cpu, std::uint64_t line) {
  CpuState &cs = state.cpus[cpu];
  if (!cs.dirtyLines.erase(line))
    return;
  TextRegion *r = textAt(line);
  FTSIM_ASSERT(r);
  if (rewriteView(cpu, *r, line, r->canonical.get() + (line - r->base), kLineSize))
    r->touch(line - r->base, kLineSize);
}

// Writes `n` bytes into `cpu`'s view of `r` at `addr` and removes Unicorn's translations over each
// run of bytes that changed (runs less than kRewriteGap bytes apart taken as one): a translation
// made only of bytes that did not change is still what the view holds. Removing whole lines took
// the translations of the code around a site too (a traced function's body shares the site's
// line), and removing from the first changed byte to the last took a whole page's when an adopted
// page (EnginePool.cpp) differed at sites far apart; an execution's cost is mostly translating
// again (sim/README.md, "Performance"). False when no byte changed.
bool Machine::Impl::rewriteView(unsigned cpu, TextRegion &r, std::uint64_t addr,
                                const std::uint8_t *bytes, std::size_t n) {
  constexpr std::size_t kRewriteGap = 16;
  std::uint8_t *view = r.views[cpu].get() + (addr - r.base);
  bool changed = false;
  std::size_t i = 0;
  while (true) {
    while (i < n && view[i] == bytes[i])
      ++i;
    if (i == n)
      return changed;
    const std::size_t first = i;
    std::size_t last = i + 1; // one past the run's last changed byte
    for (i = last; i < n && i - last < kRewriteGap; ++i)
      if (view[i] != bytes[i])
        last = i + 1;
    std::memcpy(view + first, bytes + first, last - first);
    removeTranslations(cpu, addr + first, addr + last);
    changed = true;
    i = last;
  }
}

// A serialising event (IPI, exception return, isync/cpuid): the CPU's view becomes canonical.
void Machine::Impl::serialise(unsigned cpu) {
  CpuState &cs = state.cpus[cpu];
  while (!cs.dirtyLines.empty())
    refreshLine(cpu, *cs.dirtyLines.begin());
  std::uint64_t runStart = 0, runEnd = 0;
  auto flush = [&] {
    if (runEnd > runStart)
      removeTranslations(cpu, runStart, runEnd);
  };
  const unsigned granule = arch.insnAlignment();
  for (const StaleHistory::Granule &g : cs.history) {
    const std::uint64_t addr = g.addr;
    TextRegion *r = textAt(addr);
    std::uint8_t *slot = r->views[cpu].get() + (addr - r->base);
    const std::uint8_t *canonical = r->canonical.get() + (addr - r->base);
    if (std::memcmp(slot, canonical, granule) == 0)
      continue; // the CPU fetched the newest value: its translations hold
    std::memcpy(slot, canonical, granule);
    r->touch(addr - r->base, granule);
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
  for (auto it = cs.history.lowerBound(pc - pc % granule); it != cs.history.end() && it->addr < end;
       ++it) {
    std::uint64_t addr = it->addr;
    if (addr > pc && granule == 1) {
      std::span<const std::uint8_t> bytes(view + (pc - r->base), end - pc);
      auto insns = arch.disassemble(bytes, pc);
      if (!insns.empty() && pc + insns.front().size <= addr)
        break;
    }
    DecisionPoint point;
    point.kind = DecisionKind::StaleByte;
    point.options = static_cast<std::uint32_t>(it->values.size() / granule);
    point.cpu = cpu;
    point.addr = addr;
    point.values = it->bytes();
    std::uint32_t choice = decide(scheduler, point);
    const std::uint8_t *value = it->bytes().data() + std::size_t{choice} * granule;
    std::uint8_t *slot = view + (addr - r->base);
    if (std::memcmp(slot, value, granule) != 0) {
      std::memcpy(slot, value, granule);
      r->touch(addr - r->base, granule);
      lo = lo == hi ? addr : lo;
      hi = addr + granule;
    }
  }
  if (hi > lo)
    removeTranslations(cpu, lo, hi);
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

// The store reaches `cpu`'s view now: a granule it still had stale history for is now exactly
// canonical.
void Machine::Impl::storeIntoView(unsigned cpu, TextRegion &r, std::uint64_t addr,
                                  std::span<const std::uint8_t> bytes) {
  if (rewriteView(cpu, r, addr, bytes.data(), bytes.size()))
    r.touch(addr - r.base, bytes.size());
  state.cpus[cpu].history.erase(addr - addr % arch.insnAlignment(), addr + bytes.size());
}

// StoreReach::AtLineRead: the lines the store touches are behind in `cpu`'s view.
void Machine::Impl::markLinesBehind(unsigned cpu, std::uint64_t addr, std::uint64_t size) {
  for (std::uint64_t line = lineOf(addr); line < addr + size; line += kLineSize)
    state.cpus[cpu].dirtyLines.insert(line);
}

// StoreReach::ByChoice: record, per fetch granule the store touches, its value before and after
// the store (each value once; a granule back at its only value has no history).
void Machine::Impl::rememberGranules(unsigned cpu, const TextRegion &r, std::uint64_t addr,
                                     std::span<const std::uint8_t> bytes) {
  const unsigned granule = arch.insnAlignment();
  for (std::uint64_t g = addr - addr % granule; g < addr + bytes.size(); g += granule) {
    const std::uint8_t *before = r.canonical.get() + (g - r.base);
    std::uint8_t after[8];
    std::memcpy(after, before, granule);
    for (unsigned i = 0; i < granule; ++i)
      if (g + i >= addr && g + i < addr + bytes.size())
        after[i] = bytes[g + i - addr];
    StaleHistory &history = state.cpus[cpu].history;
    std::string &h = history.valuesAt(g);
    auto holds = [&](const std::uint8_t *v) {
      for (std::size_t k = 0; k < h.size(); k += granule)
        if (std::memcmp(h.data() + k, v, granule) == 0)
          return true;
      return false;
    };
    if (h.empty())
      h.append(reinterpret_cast<const char *>(before), granule);
    if (!holds(after))
      h.append(reinterpret_cast<const char *>(after), granule);
    if (h.size() == granule)
      history.erase(g, g + 1);
  }
}

// One atomic store of the patcher. The writing CPU sees its own stores (x86 self-modifying-code
// detection; a powerpc CPU reads its own stores through its data cache once it syncs, which the
// patcher does); the other CPUs as the fetch model says.
void Machine::Impl::applyStore() {
  const std::uint64_t addr = patcher.storeAddr;
  const arch::Bytes &bytes = patcher.storeBytes;
  TextRegion *r = textRange(addr, bytes.size());
  FTSIM_ASSERT(r);
  for (unsigned c = 0; c < config.cpus; ++c) {
    const StoreReach reach = c == config.patcherCpu ? StoreReach::AtOnce : othersReach;
    switch (reach) {
    case StoreReach::AtOnce:
      storeIntoView(c, *r, addr, bytes);
      break;
    case StoreReach::AtLineRead:
      markLinesBehind(c, addr, bytes.size());
      break;
    case StoreReach::ByChoice:
      rememberGranules(c, *r, addr, bytes);
      break;
    }
  }
  const std::uint64_t off = addr - r->base;
  std::memcpy(r->canonical.get() + off, bytes.data(), bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    r->flags.get()[off + i] |= kWritten;
  r->touch(off, bytes.size());
  watchLines(addr, bytes.size());
  ++state.storesDone;
}

void Machine::pokeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, bytes.size());
  if (!r)
    fatal("pokeText {:#x}+{} is not inside text", addr, bytes.size());
  std::memcpy(r->canonical.get() + (addr - r->base), bytes.data(), bytes.size());
  r->touch(addr - r->base, bytes.size());
  for (unsigned c = 0; c < m.config.cpus; ++c)
    m.storeIntoView(c, *r, addr, bytes);
}

void Machine::pokeData(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  for (DataRegion &r : impl_->data)
    if (addr - r.base < r.size && bytes.size() <= r.size - (addr - r.base)) {
      std::memcpy(r.memory.get() + (addr - r.base), bytes.data(), bytes.size());
      return;
    }
  fatal("pokeData {:#x}+{} is not inside data", addr, bytes.size());
}

} // namespace ftsim::sim
