#pragma once
// ppc32 instruction words the ftrace arch code writes or recognises beyond a single `bl`: the
// long-branch stub that lets a module reach ftrace_caller, the two-instruction `mflr r0; bl`
// sequence, the module call site with a register restore after the `bl`, and the CMODX
// "patch class" (Power ISA Book II, Instruction Storage, "Concurrent Modification and
// Execution of Instructions"; 1.8.1 in Version 2.03). Big-endian words; all addresses are 32-bit.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/PatchProtocol.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ftsim::arch::ppc32 {

constexpr std::uint32_t kNop = 0x60000000;         // ori r0,r0,0
constexpr std::uint32_t kMflrR0 = 0x7c0802a6;      // mflr r0
constexpr std::uint32_t kStwR0_4R1 = 0x90010004;   // stw r0,4(r1)
constexpr std::uint32_t kBranchOver8 = 0x48000008; // b +8 (f48cb8b48b0b: skip the restore)
constexpr unsigned kLongBranchStubSize = 16;

Bytes wordBytes(std::uint32_t word);
std::uint32_t wordOf(std::span<const std::uint8_t> bytes); // the first 4 bytes, big-endian

// `b`/`bl` (I-form, opcode 18) and `nop`: the patch-class instructions of Power ISA v3.1 Book II
// 1.6. Only these may be written while another processor may execute them: the processor then
// executes either the old or the new instruction. Any other instruction written under concurrent
// execution may behave as neither (the architecture leaves the result undefined).
bool isPatchClass(std::uint32_t word);
// `bl` (opcode 18, AA=0, LK=1).
bool isBl(std::uint32_t word);
// Where an I-form branch (b, bl, ba, bla) at `site` goes (32-bit wrap-around); nullopt for any
// other word.
std::optional<std::uint64_t> branchTarget(std::uint64_t site, std::uint32_t word);

// The long-branch stub of arch/powerpc/kernel/module_32.c (do_plt_call / entry_matches, used for
// mod->arch.tramp by module_finalize_ftrace): `lis r12,hi; addi r12,r12,lo; mtctr r12; bctr`,
// position independent, reaching any 32-bit target. `hi` is the @ha half (adjusted for the sign
// of `lo`). Always succeeds for a word-aligned target; a misaligned one is !ok.
EncodeResult longBranchStub(std::uint64_t target);
// module_trampoline_target(): the target of a stub built by longBranchStub, nullopt when the 16
// bytes are not such a stub.
std::optional<std::uint64_t> longBranchTarget(std::span<const std::uint8_t> bytes);

// --- The module call site with a restore (the ppc-module-tramp-toc scenario) ---------------------
// ppc64 module code calls _mcount through a module stub that saves r2 (the TOC) and loads the
// kernel's; the word after the `bl` is `ld r2,40(r1)`, the TOC restore. ppc32 has no TOC, so ftsim
// models the site with r30 as the TOC-like register (the ppc32 -fPIC GOT pointer): the module stub
// saves r30 at 24(r1) and clobbers it, the word after the `bl` is `lwz r30,24(r1)`, and the
// module's code after the site uses r30 as its base pointer.
constexpr std::uint32_t kRestoreR30 = 0x83c10018; // lwz r30,24(r1)

enum class TocSiteDisable {
  // f48cb8b48b0b as first written: both words become nops. A task that was inside the call when
  // the site changed returns to the nop where its restore was, and runs on with the kernel's r30.
  NopBoth,
  // The fix (Milton Miller's review of f48cb8b48b0b): one patch-class word, `b +8`, over the `bl`;
  // new calls skip the restore, a task returning from the old call still executes it.
  BranchOver,
};
// The stores that disable an enabled module site `bl <tramp>; lwz r30,24(r1)` at `site`, in order.
std::vector<PatchRequest> tocSiteDisable(std::uint64_t site, std::uint32_t blWord,
                                         TocSiteDisable variant);

} // namespace ftsim::arch::ppc32
