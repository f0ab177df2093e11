// The machine's state hash (Machine::stateHash): what its future depends on, so that two schedules
// reaching the same state are recognised (verify's engine-level search prunes the second).
//
// Hashed: every CPU's scheduling state (current task, run queue, pending IPI, user mode, deferred
// sync, interrupt and preempt state, switch count, the fetch model's per-CPU state) and the running
// task's registers (GuestAbi::stateRegs); every task's state, result, registers while off-CPU
// (the same, from its saved context), quiescence marks, and in a timer interrupt's handler the
// interrupted registers its return restores; every text byte that is not the image's
// own (written by the patcher, freed, or inside a watched site): its canonical value, every CPU's
// view of it and its flags; all data memory (guest data and stacks); the watched sites; the
// findings; the patcher's machine-side state (what it waits for, its pending store or publication,
// the grace period it started). Not hashed: the log, the schedule and the event count (history, not
// state), and where the patcher's host code is, which the machine cannot see (the harness adds it:
// Harness::midStateHash). Text outside those bytes holds the image as loaded: every write after
// loading is the patcher's (kWritten) or a free (kFreedByte).

#include "MachineImpl.h"

#include <unicorn/unicorn.h>

#include <algorithm>
#include <cstring>

namespace ftsim::sim {
namespace {

class Mixer {
public:
  void word(std::uint64_t v) {
    h_ ^= v + 0x9e3779b97f4a7c15ull + (h_ << 6) + (h_ >> 2);
    h_ *= 0xff51afd7ed558ccdull;
    h_ ^= h_ >> 33;
  }
  // Bulk bytes: four independent lanes (no dependency chain between them), folded at the end.
  void bytes(const std::uint8_t *p, std::size_t n) {
    word(n);
    std::uint64_t lane[4] = {1, 2, 3, 4};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
      for (int k = 0; k < 4; ++k) {
        std::uint64_t v;
        std::memcpy(&v, p + i + 8 * k, 8);
        lane[k] = (lane[k] ^ v) * 0x9e3779b97f4a7c15ull;
        lane[k] ^= lane[k] >> 29;
      }
    for (; i + 8 <= n; i += 8) {
      std::uint64_t v;
      std::memcpy(&v, p + i, 8);
      word(v);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    word(tail);
    for (std::uint64_t l : lane)
      word(l);
  }
  void bytes(const std::vector<std::uint8_t> &v) { bytes(v.data(), v.size()); }
  std::uint64_t value() const { return h_; }

private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

} // namespace

std::uint64_t Machine::stateHash() const {
  Impl &m = *impl_;
  m.settleViews();
  Mixer h;
  for (unsigned c = 0; c < m.config.cpus; ++c) {
    const CpuState &cs = m.state.cpus[c];
    h.word(cs.pc);
    h.word(static_cast<std::uint64_t>(cs.current));
    for (int t : cs.runqueue)
      h.word(static_cast<std::uint64_t>(t));
    h.word(cs.runnable);
    h.word((cs.ipiPending ? 1u : 0u) | (cs.inUser ? 2u : 0u) | (cs.syncDeferred ? 4u : 0u) |
           (cs.halfFetched ? 8u : 0u) | (cs.irqsOn ? 16u : 0u) | (cs.irqsOff ? 32u : 0u));
    h.word(cs.preemptCount);
    h.word(cs.switches);
    for (std::uint64_t line : cs.dirtyLines)
      h.word(line);
    for (const StaleHistory::Granule &g : cs.history) {
      h.word(g.addr);
      h.bytes(g.bytes().data(), g.bytes().size());
    }
    if (cs.current >= 0)
      for (int reg : m.abi.stateRegs)
        h.word(m.readReg(c, reg));
  }
  for (std::size_t t = 0; t < m.state.tasks.size(); ++t) {
    const TaskRecord &task = m.state.tasks[t];
    h.word(static_cast<std::uint64_t>(task.info.state));
    h.word(task.info.result);
    h.word(task.info.cpu);
    h.word((task.voluntarilyOff ? 1u : 0u) | (task.inIrq ? 2u : 0u));
    h.word(task.lastQuiescent);
    // A saved context, read in place (savedContext), as loadRegs restores it.
    auto savedRegs = [&](const std::vector<std::uint8_t> &image) {
      for (int reg : m.abi.stateRegs) {
        std::uint64_t value = 0;
        uc_context_reg_read(savedContext(image), reg, &value);
        h.word(m.guestValue(reg, value));
      }
    };
    bool running = false;
    for (const CpuState &cs : m.state.cpus)
      running = running || cs.current == static_cast<int>(t);
    if (!running && !task.regs.empty())
      savedRegs(task.regs);
    // In a timer interrupt's handler: the interrupted registers its return restores.
    if (task.inIrq && !task.irqRegs.empty())
      savedRegs(task.irqRegs);
  }
  for (const TextRegion &r : m.text) {
    h.word(r.base);
    const std::uint8_t *flags = r.flags.get();
    // Flagged bytes lie in watched lines (sites and written text are watched) or in allocated
    // trampoline memory (a free pokes poison and flags it); a line's flags are tested eight at a
    // time, and a trampoline area (a watched megabyte of which a few lines are used) only up to
    // its allocation mark.
    for (std::uint64_t line = 0; line < r.size; line += kLineSize) {
      const std::uint64_t addr = r.base + line;
      // Trampoline memory past the allocation mark was never allocated, written or freed.
      if (addr >= m.state.moduleNext && addr < m.config.moduleBase + m.config.moduleSize)
        break;
      const bool allocated = addr < m.state.moduleNext && addr + kLineSize > m.config.moduleBase;
      if (!r.lineWatched[line / kLineSize] && !allocated)
        continue;
      const std::uint64_t end = std::min<std::uint64_t>(r.size, line + kLineSize);
      std::uint64_t any = 0;
      for (std::uint64_t i = line; i + 8 <= end; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, flags + i, 8);
        any |= w;
      }
      for (std::uint64_t i = end - (end - line) % 8; i < end; ++i)
        any |= flags[i];
      if (!any)
        continue;
      for (std::uint64_t i = line; i < end; ++i) {
        if (!flags[i])
          continue;
        h.word(i | (std::uint64_t{flags[i]} << 56));
        std::uint64_t bytes = r.canonical.get()[i];
        for (const HostBuffer &v : r.views)
          bytes = bytes << 8 | v.get()[i];
        h.word(bytes);
      }
    }
    h.bytes(r.lineWatched);
  }
  for (const DataRegion &r : m.data) {
    h.word(r.base);
    h.bytes(r.memory.get(), r.size);
  }
  for (const auto &[addr, site] : m.state.sites) {
    h.word(addr);
    h.word(site.size);
  }
  for (const Finding &f : m.state.findings) {
    h.word(static_cast<std::uint64_t>(f.kind));
    h.word(f.cpu);
    h.word(static_cast<std::uint64_t>(f.task));
    h.word(f.pc);
    h.word(f.addr);
  }
  h.word(m.state.storesDone);
  h.word(m.state.moduleNext);
  // The patcher's fields as far as its state reads them (earlier executions leave the others).
  const PatcherRuntime &p = m.patcher;
  h.word(static_cast<std::uint64_t>(p.state) | (p.alive ? 0x100u : 0u));
  switch (p.state) {
  case PatcherState::Store:
    h.word(p.storeAddr);
    h.bytes(p.storeBytes.data(), p.storeBytes.size());
    break;
  case PatcherState::Publish:
    h.bytes(reinterpret_cast<const std::uint8_t *>(p.publishWhat.data()), p.publishWhat.size());
    h.word(p.publishDataAddr);
    h.word(p.publishDataSize | (p.publishDataWrite ? 0x100u : 0u));
    break;
  case PatcherState::WaitSpin:
    h.word(p.spinAddr);
    h.bytes(p.spinValue);
    break;
  case PatcherState::WaitRcuTasks:
  case PatcherState::WaitEachCpu:
    h.word(p.graceStart);
    for (std::uint64_t s : p.switchesAtStart)
      h.word(s);
    break;
  case PatcherState::None:
  case PatcherState::WaitIpis:
    break;
  }
  return h.value();
}

} // namespace ftsim::sim
