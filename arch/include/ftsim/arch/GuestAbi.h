#pragma once
// How the simulator drives one executable ISA through Unicorn: register ids, the trap's interrupt
// number, poison bytes, default addresses, the instructions that serialise instruction fetch. A
// target that can be executed returns its GuestAbi (Arch::guestAbi()); sim/ asks for it and never
// names an ISA.

#include "ftsim/arch/MachinePort.h"

#include <cstdint>
#include <span>
#include <vector>

namespace ftsim::arch {

struct GuestAbi {
  int pcReg;
  int spReg;
  int argReg;    // first argument
  int resultReg; // return value
  int linkReg;   // -1: the return address is on the stack (x86)
  // UC_HOOK_INTR number of the ISA's trap (x86 int3: 3, with pc past it; powerpc tw: 6, pc + 4).
  std::uint32_t trapIntno;
  // Another interrupt number that means "invalid instruction" (powerpc: 96); -1 none.
  std::int64_t illegalIntno;
  // Fills unused and freed text: x86 ud2 (0f 0b), powerpc 0x00000000 (an illegal word).
  std::vector<std::uint8_t> poison;
  std::uint64_t moduleBase; // MODULES_VADDR
  std::uint64_t stackBase;
  // An `until` address no instruction can reach (x86: non-canonical; ppc32: above 32 bits).
  std::uint64_t unreachable;
  // Whether `bytes` (at least maxInsnSize, from the instruction start) is an instruction that
  // serialises instruction fetch (x86 cpuid, iret; powerpc isync, rfi).
  bool (*serialising)(const std::uint8_t *bytes);
  // At a function's first instruction: where it returns to (x86: the word at sp; powerpc: LR).
  std::uint64_t (*returnAddress)(const GuestAbi &abi, GuestContext &ctx);
  // Interrupt-off and non-preemptible regions (sim/README.md, "Regions"). The register holding the
  // interrupt-enable bit and that bit: x86 EFLAGS.IF (0x200, cli/sti/popf), powerpc MSR[EE]
  // (0x8000, mtmsr). The register pointing at the running task's thread area, whose first 32-bit
  // word (ISA byte order) is its preempt count: x86 the GS base (`incl %gs:0`, as Linux's
  // `incl %gs:__preempt_count`), powerpc r2 (Linux's `current`; `lwz r9,0(r2)`).
  int irqFlagsReg;
  std::uint64_t irqEnableBit;
  // Whether the instruction at `bytes` (at least maxInsnSize, from its start) may change that bit
  // when it executes without trapping. The machine reads the flags register again only after such
  // an instruction, a run, a trap or a fault: on x86 reading EFLAGS makes Unicorn compute its lazy
  // condition codes, at every step otherwise. Answering true is always safe.
  bool (*irqFlagMayChange)(const std::uint8_t *bytes);
  int threadReg;
  // The registers a task's state is made of (the machine's state hash reads these, not Unicorn's
  // context image, which also holds emulator bookkeeping): the general registers, pc, flags or
  // condition, link and count registers, the thread register.
  std::vector<int> stateRegs;
  // Single-stepping by the ISA's trace flag (x86 EFLAGS.TF, powerpc MSR[SE]; -1: none). With that
  // bit set in `traceFlagReg`, Unicorn translates one instruction per block and raises `traceIntno`
  // after it, so a step's translation holds that instruction only: when patched bytes are
  // rewritten, only the blocks of the instructions over them are translated again, not every block
  // that runs into them. The bit is the machine's, never the guest's: the machine sets it for
  // fast-mode steps (where the harness asks), clears it for runs and hides it from every register
  // it reads; `raisesTraceIntno` tells a guest instruction that raises that interrupt itself (x86
  // `int $1`, icebp), and after a step `hideTraceFlag` removes the bit from wherever the
  // instruction copied the flags register (x86 pushf: the word pushed; powerpc mfmsr: its target
  // register). Where Unicorn leaves the pc after the trace interrupt is measured once per process,
  // by stepping `traceProbe` twice in a bare engine (sim/TraceCalibration.cpp): Unicorn 2.0.1
  // leaves powerpc's one instruction further on.
  int traceFlagReg;
  std::uint64_t traceFlagBit;
  std::uint32_t traceIntno;
  bool (*raisesTraceIntno)(const std::uint8_t *bytes);
  void (*hideTraceFlag)(const std::uint8_t *bytes, GuestContext &ctx, std::uint64_t bit);
  // One instruction adding 1 to `resultReg` (x86 `inc %rax`, powerpc `addi r3,r3,1`).
  std::vector<std::uint8_t> traceProbe;
  // A step the machine applies itself, without Unicorn (nullptr: none). Only the instructions a
  // patch site holds as it is patched (x86: the 5-byte nop, endbr64, nop, call and jmp rel32, jmp
  // rel8, int3), whose translation Unicorn would otherwise redo after every rewrite of the site.
  // `bytes`: the instruction's bytes as the CPU fetches them, as many as text holds from pc (up to
  // 16). False, with nothing changed, for any other instruction or one not whole in `bytes`, and
  // for a push outside writable data (the machine then steps by Unicorn, which faults as it
  // should). True with pc, sp and the word pushed as the instruction leaves them, and `trapped`
  // when it raised trapIntno (pc past the trap, as Unicorn leaves it).
  bool (*plainStep)(std::uint64_t pc, std::span<const std::uint8_t> bytes, GuestContext &ctx,
                    bool &trapped);
  // Where the instruction at pc always goes next when it is a direct call or jump (x86: call and
  // jmp rel32, jmp rel8), whole in `bytes`; false for any other instruction (nullptr: none). A
  // block that ends with one into watched text is stepped rather than run (sim/README.md, "Plain
  // steps"), so that Unicorn does not translate the block at the target only to have it refused.
  bool (*directTarget)(std::uint64_t pc, std::span<const std::uint8_t> bytes,
                       std::uint64_t &target);
};

} // namespace ftsim::arch
