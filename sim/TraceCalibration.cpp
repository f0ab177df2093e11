// Where Unicorn leaves the pc after a trace-flag step, measured once per architecture and process
// (GuestAbi.h, traceStepSkew).
//
// A step by the trace flag ends with the ISA's trace interrupt; the machine then reads the pc as
// the next instruction's address. x86 on Unicorn 2.0.1 leaves it there; powerpc leaves it one
// instruction further on (`li r3,1` at 0x10000 stepped: pc 0x10008; a branch to 0x1000c: 0x10010).
// Rather than trust a version number (Debian 13 ships 2.1), the machine asks a bare engine: two
// steps of the ABI's probe instruction (which adds 1 to the result register), each checked to have
// run exactly one instruction, raised the trace interrupt and left the pc the same distance past
// the next, between two runs without the flag over both probes, each checked to have run both
// (Unicorn keeps a step's one-instruction block and a run's whole block apart only if the flag is
// part of what it looks translations up by). Any other answer (no interrupt, two instructions run
// by a step or one by a run, distances that differ, an error) turns trace-flag steps off for that
// architecture: the machine then ends each step with its hook before every instruction, as before,
// slower but exact.

#include "GuestAbi.h"

#include "ftsim/arch/UnicornEngine.h"

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace ftsim::sim {

namespace {

constexpr std::uint64_t kProbeBase = 0x10000;
constexpr std::size_t kProbePage = 0x1000;

struct Probe {
  std::int64_t intno = -1;
};

void onProbeInterrupt(uc_engine *uc, std::uint32_t intno, void *user) {
  static_cast<Probe *>(user)->intno = intno;
  uc_emu_stop(uc);
}

// One start of the engine at `pc` with the trace flag set or cleared, the result register zeroed
// first unless `keep`: whether Unicorn accepted it, the interrupt raised (-1: none), the result
// register's low 32 bits and the pc after.
struct Start {
  bool ok = false;
  std::int64_t intno = -1;
  std::uint64_t result = 0, pc = 0;
};

Start start(uc_engine *uc, const GuestAbi &abi, Probe &probe, std::uint64_t pc, bool traced,
            bool keep) {
  Start s;
  std::uint64_t flags = 0, zero = 0;
  if (uc_reg_read(uc, abi.traceFlagReg, &flags) != UC_ERR_OK)
    return s;
  flags = traced ? flags | abi.traceFlagBit : flags & ~abi.traceFlagBit;
  probe.intno = -1;
  if (uc_reg_write(uc, abi.traceFlagReg, &flags) != UC_ERR_OK ||
      (!keep && uc_reg_write(uc, abi.resultReg, &zero) != UC_ERR_OK))
    return s;
  const uc_err err = uc_emu_start(uc, pc, abi.unreachable, 0, 0);
  s.ok = (!traced || err == UC_ERR_OK) && uc_reg_read(uc, abi.resultReg, &s.result) == UC_ERR_OK &&
         uc_reg_read(uc, abi.pcReg, &s.pc) == UC_ERR_OK;
  s.result &= 0xffffffffu;
  s.intno = probe.intno;
  return s;
}

std::optional<std::uint64_t> measure(const arch::Arch &arch, const GuestAbi &abi) {
  const std::vector<std::uint8_t> &insn = abi.traceProbe;
  if (abi.traceFlagReg < 0 || insn.empty() || 2 * insn.size() + abi.poison.size() >= kProbePage)
    return std::nullopt;
  uc_engine *uc = nullptr;
  if (arch::openUnicorn(static_cast<uc_arch>(arch.unicornArch()),
                        static_cast<uc_mode>(arch.unicornMode()), &uc) != UC_ERR_OK)
    return std::nullopt;
  struct Closer {
    uc_engine *uc;
    ~Closer() { uc_close(uc); }
  } closer{uc};
  // The probe twice, then the ABI's poison, where a run stops (an invalid instruction).
  std::vector<std::uint8_t> page(kProbePage);
  std::memcpy(page.data(), insn.data(), insn.size());
  std::memcpy(page.data() + insn.size(), insn.data(), insn.size());
  std::memcpy(page.data() + 2 * insn.size(), abi.poison.data(), abi.poison.size());
  Probe probe;
  uc_hook hook = 0;
  if (uc_mem_map(uc, kProbeBase, kProbePage, UC_PROT_ALL) != UC_ERR_OK ||
      uc_mem_write(uc, kProbeBase, page.data(), page.size()) != UC_ERR_OK ||
      uc_hook_add(uc, &hook, UC_HOOK_INTR, reinterpret_cast<void *>(&onProbeInterrupt), &probe, 1,
                  0) != UC_ERR_OK)
    return std::nullopt;
  // A run first, so that the steps meet the block it translated: they must not reuse it.
  if (const Start run = start(uc, abi, probe, kProbeBase, false, false); !run.ok || run.result != 2)
    return std::nullopt;
  std::optional<std::uint64_t> skew;
  std::uint64_t pc = kProbeBase;
  for (std::uint64_t step = 1; step <= 2; ++step) {
    const Start s = start(uc, abi, probe, pc, true, step > 1);
    const std::uint64_t next = pc + insn.size();
    if (!s.ok || s.intno != abi.traceIntno || s.result != step || s.pc < next ||
        (skew && *skew != s.pc - next))
      return std::nullopt;
    skew = s.pc - next;
    pc = next;
  }
  // And a run after the steps must not reuse their one-instruction blocks.
  if (const Start run = start(uc, abi, probe, kProbeBase, false, false); !run.ok || run.result != 2)
    return std::nullopt;
  return skew;
}

} // namespace

std::optional<std::uint64_t> traceStepSkew(const arch::Arch &arch) {
  static std::mutex mutex;
  static std::map<const arch::Arch *, std::optional<std::uint64_t>> measured;
  std::lock_guard lock(mutex);
  auto it = measured.find(&arch);
  if (it == measured.end())
    it = measured.emplace(&arch, measure(arch, guestAbi(arch))).first;
  return it->second;
}

} // namespace ftsim::sim
