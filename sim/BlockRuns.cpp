// Runs by blocks: fast mode on an ISA whose steps end by a trace flag (x86 EFLAGS.TF, powerpc
// MSR[SE]) runs a CPU's unwatched code with one hook called before each translated block instead
// of one called before each instruction (sim/README.md, "Runs by blocks").
//
// The hook enters a block only when none of its instructions needs a step (neither its line nor
// the line of its last possible byte is watched: Machine::Impl::needsStep) and all of them fit
// the run's budget. Otherwise it stops the run before the block, where Unicorn 2.0.1 leaves the
// CPU's state exact (registers, flags and pc as at the block's entry), and the run goes on through
// that block one instruction at a time, each a step by the trace flag: to the watched instruction,
// which ends the run as before, or out of the block, where it runs by blocks again. A run
// therefore ends where a hook before every instruction would end it: before the first instruction
// that needs a step, or after exactly its budget of instructions. A block whose last instruction
// is a direct call or jump into watched text is stepped the same way: Unicorn would otherwise
// translate the block at the target, after every rewrite of a site, only for the hook to refuse
// it.
//
// Only a machine without watched data runs by blocks: a stop asked by a memory hook inside a
// block takes effect after that access with the pc left at the block's entry (tried in bare
// Unicorn 2.0.1), and only a hook before every instruction keeps the pc there exact
// (Machine::watchData switches the engines).

#include "MachineImpl.h"

#include <cstring>

namespace ftsim::sim {

namespace {

// Every other case of onBlock: a step, a block other than the one the gate holds, a block that
// does not fit or needs a step.
[[gnu::noinline]] void onOtherBlock(uc_engine *uc, std::uint64_t address, std::uint32_t size,
                                    BlockGate *gate) {
  CpuRuntime *cpu = gate->cpu;
  // Every block Unicorn translates comes here before it runs (the one before it in the run is
  // another), so its bytes are marked before anything can rewrite them.
  cpu->machine->noteTranslated(cpu->index, address, size);
  if (!cpu->freeRunning) {
    // A step by the trace flag runs one block of one instruction: a second block is past it (an
    // instruction that cleared the flag ran without its trap).
    if (cpu->stepStarted)
      uc_emu_stop(uc);
    cpu->stepStarted = true;
    return;
  }
  BlockCount &last = cpu->lastBlock;
  if (address != last.addr || size != last.size) {
    last.addr = address;
    last.size = size;
    Machine::Impl &m = *cpu->machine;
    cpu->lastBlockClean = m.blockClean(address, size);
    last.instructions = 0;
    if (cpu->lastBlockClean) {
      const BlockCount &counted = m.countBlock(cpu->index, address, size);
      last.instructions = counted.instructions;
      // Into watched text: Unicorn would translate the block there for this hook to refuse it,
      // again after every rewrite of a site; stepping this one ends the run before it instead.
      if (counted.hasTarget && m.watchedInstructionAt(counted.target))
        cpu->lastBlockClean = false;
    }
  }
  if (!cpu->lastBlockClean || last.instructions > gate->budget) {
    cpu->blockStop = true;
    cpu->blockStart = address;
    cpu->blockEnd = address + size;
    uc_emu_stop(uc);
    return;
  }
  gate->budget -= last.instructions;
  gate->addr = address;
  gate->size = size;
  gate->instructions = last.instructions;
}

} // namespace

// The common case first, in a function that saves no register: a free run entering the clean
// block it entered last (a loop), which fits.
void onBlock(uc_engine *uc, std::uint64_t address, std::uint32_t size, void *user) {
  BlockGate *gate = static_cast<BlockGate *>(user);
  if (address == gate->addr && size == gate->size && gate->instructions <= gate->budget) {
    gate->budget -= gate->instructions;
    return;
  }
  onOtherBlock(uc, address, size, gate);
}

bool Machine::Impl::blockClean(std::uint64_t addr, std::uint32_t size) {
  // The instructions start in [addr, addr + size): needsStep looks at the line of each start and
  // at the line of its last possible byte.
  const std::uint64_t last = lineOf(addr + size - 1 + maxInsn - 1);
  for (std::uint64_t line = lineOf(addr);; line += kLineSize) {
    if (lineWatchedAt(line))
      return false;
    if (line == last)
      return true;
  }
}

namespace {

// The most decoded blocks an engine keeps (CpuRuntime::decodedBlocks): a kernel's blocks, their
// sites' states and the trampolines of many executions, in a few megabytes at most.
constexpr std::size_t kDecodedBlocks = 16384;

unsigned lineBit(std::uint64_t line) { return static_cast<unsigned>(line / kLineSize % 256); }

void markLines(BlockCounts &counts, const BlockCount &b) {
  for (std::uint64_t line = lineOf(b.addr); line < b.addr + b.size; line += kLineSize) {
    const unsigned bit = lineBit(line);
    counts.lines[bit / 64] |= std::uint64_t{1} << (bit % 64);
  }
}

// Whether a counted block may hold a byte of [lo, hi).
bool mayHold(const BlockCounts &counts, std::uint64_t lo, std::uint64_t hi) {
  if (hi - lo > 256 * kLineSize)
    return true;
  for (std::uint64_t line = lineOf(lo); line < hi; line += kLineSize) {
    const unsigned bit = lineBit(line);
    if (counts.lines[bit / 64] & (std::uint64_t{1} << (bit % 64)))
      return true;
  }
  return false;
}

// The bits of a line's bytes [offset, offset + n), n >= 1, offset + n <= 64.
std::uint64_t byteBits(std::uint64_t offset, std::uint64_t n) {
  return (n == kLineSize ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1) << offset;
}

// Calls f(region or null where [lo, hi) is not text, line index, bits) for each line of [lo, hi).
template <typename F> void eachLine(Machine::Impl &m, std::uint64_t lo, std::uint64_t hi, F f) {
  for (std::uint64_t a = lo; a < hi;) {
    const std::uint64_t stop = std::min(hi, lineOf(a) + kLineSize);
    TextRegion *r = m.textAt(a);
    f(r, r ? (a - r->base) / kLineSize : 0, byteBits(a % kLineSize, stop - a));
    a = stop;
  }
}

} // namespace

const BlockCount &Machine::Impl::countBlock(unsigned cpu, std::uint64_t addr, std::uint32_t size) {
  BlockCounts &counts = cpus[cpu].blockCounts;
  BlockCount &slot = counts.slots[(addr ^ (addr >> 8)) % counts.slots.size()];
  if (slot.addr == addr && slot.size == size)
    return slot;
  const arch::Bytes bytes = fetchedBytes(cpu, addr, size);
  // Decoded before, by this engine's CPU in this machine or an earlier one (Capstone takes about
  // 17,000 host instructions a block).
  std::string key(sizeof addr + sizeof size + bytes.size(), '\0');
  std::memcpy(key.data(), &addr, sizeof addr);
  std::memcpy(key.data() + sizeof addr, &size, sizeof size);
  std::memcpy(key.data() + sizeof addr + sizeof size, bytes.data(), bytes.size());
  auto &decoded = cpus[cpu].decodedBlocks;
  if (auto it = decoded.find(key); it != decoded.end()) {
    slot = it->second;
    markLines(counts, slot);
    return slot;
  }
  std::size_t undecoded = bytes.size();
  const auto insns = arch.disassemble(bytes, addr, &undecoded);
  // Bytes that do not decode end the block with an instruction that faults: one more.
  slot = {addr, size, static_cast<std::uint32_t>(insns.size()) + (undecoded < size ? 1u : 0u)};
  if (abi.directTarget && !insns.empty() && undecoded >= size) {
    const auto &lastInsn = insns.back();
    const auto at = static_cast<std::size_t>(lastInsn.address - addr);
    slot.hasTarget = abi.directTarget(lastInsn.address, std::span(bytes).subspan(at, lastInsn.size),
                                      slot.target);
  }
  if (decoded.size() >= kDecodedBlocks)
    decoded.clear();
  decoded.emplace(std::move(key), slot);
  markLines(counts, slot);
  return slot;
}

void Machine::Impl::noteTranslated(unsigned cpu, std::uint64_t addr, std::uint32_t size) {
  if (size == 0) {
    for (TextRegion &r : text)
      std::fill(r.translated[cpu].begin(), r.translated[cpu].end(), ~std::uint64_t{0});
    return;
  }
  eachLine(*this, addr, addr + size, [cpu](TextRegion *r, std::uint64_t line, std::uint64_t bits) {
    if (r)
      r->translated[cpu][line] |= bits;
  });
}

bool Machine::Impl::mayHoldTranslation(unsigned cpu, std::uint64_t lo, std::uint64_t hi) {
  // Only a block hook sees every block translated; Unicorn's count and a hook before every
  // instruction leave the translations unseen.
  if (engineHooks != EngineHooks::Blocks)
    return true;
  bool held = false;
  eachLine(*this, lo, hi, [&](TextRegion *r, std::uint64_t line, std::uint64_t bits) {
    held |= !r || (r->translated[cpu][line] & bits) != 0; // not text: not known
  });
  return held;
}

void Machine::Impl::removeTranslations(unsigned cpu, std::uint64_t lo, std::uint64_t hi) {
  CpuRuntime &rt = cpus[cpu];
  // Unicorn 2.0.1 takes about 2,000 host instructions to find that nothing overlaps a range; a
  // rewritten site's bytes mostly hold no translated code, as its steps are plain.
  if (mayHoldTranslation(cpu, lo, hi)) {
    uc_ctl_remove_cache(rt.uc, lo, hi);
    // Every block holding a byte of [lo, hi) is gone; its bytes outside stay marked.
    eachLine(*this, lo, hi, [cpu](TextRegion *r, std::uint64_t line, std::uint64_t bits) {
      if (r)
        r->translated[cpu][line] &= ~bits;
    });
  }
  BlockCounts &counts = rt.blockCounts;
  if (!mayHold(counts, lo, hi))
    return;
  counts.lines = {};
  for (BlockCount &b : counts.slots) {
    if (b.addr < hi && lo < b.addr + b.size)
      b = {};
    else if (b.size)
      markLines(counts, b);
  }
}

uc_err Machine::Impl::traceStep(unsigned cpu, std::uint64_t pc, const std::uint8_t *window) {
  CpuRuntime &rt = cpus[cpu];
  // A patch site's instruction, applied here (GuestAbi::plainStep); not with watched data, whose
  // accesses only Unicorn's hooks see.
  if (abi.plainStep && dataWatches.empty())
    if (const TextRegion *r = textAt(pc)) {
      const auto held =
          static_cast<std::size_t>(std::min<std::uint64_t>(16, r->base + r->size - pc));
      CpuGuestContext ctx(*this, cpu);
      bool trapped = false;
      if (abi.plainStep(pc, {window, held}, ctx, trapped)) {
        if (trapped)
          rt.intno = abi.trapIntno;
        return UC_ERR_OK;
      }
    }
  if (!rt.traceFlagKnown || !rt.traceFlag)
    setTraceFlag(cpu, true);
  rt.stepStarted = false;
  const uc_err err = uc_emu_start(rt.uc, pc, abi.unreachable, 0, 0);
  if (rt.intno == abi.traceIntno && !abi.raisesTraceIntno(window)) {
    rt.intno = -1; // the trace flag's trap after the instruction: the step's end, not the guest's
    if (traceSkew)
      writeReg(cpu, abi.pcReg, readReg(cpu, abi.pcReg) - traceSkew);
  }
  if (err == UC_ERR_OK && rt.intno < 0) {
    CpuGuestContext ctx(*this, cpu);
    abi.hideTraceFlag(window, ctx, abi.traceFlagBit);
  }
  return err;
}

uc_err Machine::Impl::runByBlocks(unsigned cpu, std::uint64_t pc, std::uint64_t count) {
  CpuRuntime &rt = cpus[cpu];
  rt.budget = count;
  for (;;) {
    if (!rt.traceFlagKnown || rt.traceFlag)
      setTraceFlag(cpu, false);
    BlockGate &gate = *rt.blockGate;
    rt.freeRunning = true;
    rt.blockStop = false;
    rt.lastBlock = {};
    gate.addr = 1;
    gate.budget = rt.budget;
    uc_err err = uc_emu_start(rt.uc, pc, abi.unreachable, 0, 0);
    rt.budget = gate.budget;
    gate.addr = 1;
    rt.freeRunning = false;
    if (err != UC_ERR_OK || rt.intno >= 0 || !rt.blockStop)
      return err;
    // Through the block it could not enter, one instruction at a time.
    pc = rt.blockStart;
    do {
      if (rt.budget == 0 || needsStep(cpu, pc))
        return UC_ERR_OK;
      std::uint8_t window[16] = {};
      const arch::Bytes bytes = fetchedBytes(cpu, pc, sizeof window);
      if (!bytes.empty())
        std::memcpy(window, bytes.data(), bytes.size());
      err = traceStep(cpu, pc, window);
      --rt.budget;
      if (err != UC_ERR_OK || rt.intno >= 0)
        return err;
      pc = readReg(cpu, abi.pcReg);
    } while (pc - rt.blockStart < rt.blockEnd - rt.blockStart);
    if (rt.budget == 0 || needsStep(cpu, pc))
      return UC_ERR_OK; // before a run there would translate the block it cannot enter
  }
}

} // namespace ftsim::sim
