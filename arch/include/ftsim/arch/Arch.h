#pragma once
// The ISA interface: one registered target per ISA. Generic code (model/, sim/, verify/, cli/)
// only ever talks to an Arch obtained from the registry (archByName / archByElf / defaultArch); it
// never includes arch/x86_64 or arch/ppc32 headers and never compares ISA names. Each target
// implements this class in arch/<isa>/ and registers itself with one explicit call in
// arch/common/Registry.cpp (LLVM MC style), so nothing depends on static initialisation order.
// Besides encodings, a target supplies its parts through small per-concept interfaces (each in its
// own header): patch protocols and mutants (PatchProtocol.h), guest trampolines (Trampolines.h),
// the guest ABI (GuestAbi.h), the site-scenario emitter (SnippetEmitter.h), the live-patching
// rule (LivePatchingRule.h) and the per-record ftrace arch code (SiteHooks.h). See arch/README.md.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::arch {

using Bytes = std::vector<std::uint8_t>;

enum class Endian { Little, Big };

// An integer of bytes.size() bytes (at most 8) as an ISA stores it, in byte order `e`, and back.
// One load and at most one byte swap, not a loop: the machine loads a preempt count at every event.
inline std::uint64_t loadInteger(Endian e, std::span<const std::uint8_t> bytes) {
  const std::size_t n = std::min<std::size_t>(bytes.size(), 8);
  if (n == 0)
    return 0;
  std::uint64_t v = 0;
  std::memcpy(&v, bytes.data(), n);
  // On a little-endian host v now holds the little-endian value; on a big-endian one the
  // big-endian value in its top n bytes.
  constexpr bool hostLittle = std::endian::native == std::endian::little;
  if ((e == Endian::Little) == hostLittle)
    return hostLittle ? v : v >> (64 - 8 * n);
  return hostLittle ? __builtin_bswap64(v) >> (64 - 8 * n) : __builtin_bswap64(v);
}
inline void storeInteger(Endian e, std::uint64_t v, std::span<std::uint8_t> bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n; ++i)
    bytes[i] = static_cast<std::uint8_t>(v >> (8 * (e == Endian::Little ? i : n - 1 - i)));
}

// An encoding request that cannot be satisfied: a branch target out of the instruction's range, or
// misaligned. Never silently truncated.
struct GuestAbi;
class SnippetEmitter;
class LivePatchingRule;
class FtraceTrampolines;
struct TrampolineRequest;
struct ProtocolEntry;
struct ProtocolProgram;
struct MutantEntry;
class SiteHooks;
struct SiteHooksRequest;

// How the ISA's call instruction encodes its target, for the encoding proofs: x86 call rel32
// (e8 + 32-bit displacement from the next instruction), powerpc I-form `bl` (24-bit LI << 2 from
// the instruction itself).
enum class BranchForm { Rel32, PowerPcI };

struct EncodeResult {
  Bytes bytes;       // empty when !ok
  bool ok = false;   // false: target unreachable or misaligned
  std::string error; // why, when !ok
};

class Arch {
public:
  virtual ~Arch() = default;

  // --- Identity ---------------------------------------------------------------------------------
  virtual std::string_view name() const = 0; // "x86_64", "ppc32", "ppc64"
  virtual unsigned wordSize() const = 0;     // pointer size in bytes
  virtual Endian endian() const = 0;
  // Whether the simulator can execute this ISA. Unicorn 2.0.1 (Debian 12) runs 32-bit big-endian
  // PowerPC only, so ppc64 is handled statically (recordmcount, encodings, proofs).
  virtual bool executable() const = 0;

  // --- ELF
  virtual std::uint16_t elfMachine() const = 0; // EM_X86_64, EM_PPC, EM_PPC64
  virtual unsigned elfClass() const = 0;        // ELFCLASS32 or ELFCLASS64

  // --- recordmcount: recognising call sites from relocations (scripts/recordmcount.c)
  // ------------- Names of the profiling hooks this ISA's compilers call.
  virtual bool isMcountSymbol(std::string_view symbol) const = 0;
  // A relocation type that a compiler emits for the call to the profiling hook.
  virtual bool isMcountCallReloc(std::uint32_t type) const = 0;
  // Distance from the relocation's r_offset back to the first byte of the call instruction
  // (x86-64: 1, the e8 opcode; powerpc: 0, the whole word is relocated).
  virtual unsigned relocOffsetToSite() const = 0;
  // The absolute, word-sized relocation type used for __mcount_loc entries.
  virtual std::uint32_t mcountLocRelocType() const = 0;
  // Whether the ELF uses RELA (x86-64, powerpc) relocations.
  virtual bool usesRela() const = 0;

  // --- Encodings --------------------------------------------------------------------------------
  virtual unsigned siteSize() const = 0;      // bytes of a patch site: 5 (x86 call) or 4 (powerpc)
  virtual unsigned insnAlignment() const = 0; // 1 on x86, 4 on powerpc
  virtual Bytes nop() const = 0;              // the site's nop: 0f 1f 44 00 00 / 60 00 00 00
  virtual Bytes trap() const = 0;             // the breakpoint: cc / tw 31,0,0 (7f e0 00 08)
  virtual EncodeResult call(std::uint64_t site, std::uint64_t target) const = 0; // call / bl
  virtual EncodeResult jump(std::uint64_t site, std::uint64_t target) const = 0; // jmp / b
  // The target of a call (or bl) encoded at `site`, if `bytes` is one.
  virtual std::optional<std::uint64_t> callTarget(std::uint64_t site,
                                                  std::span<const std::uint8_t> bytes) const = 0;
  // The longest instruction the ISA has (15 on x86, 4 on powerpc).
  virtual unsigned maxInsnSize() const = 0;

  // sizeof(struct dyn_arch_ftrace): the arch-private part of a dyn_ftrace record. x86: empty;
  // powerpc: `struct module *mod` (the slides' arch/powerpc/include/asm/ftrace.h).
  virtual unsigned dynArchFtraceSize() const = 0;

  // --- Disassembly (Capstone) -------------------------------------------------------------------
  struct Insn {
    std::uint64_t address;
    unsigned size;
    std::string text; // "nopl (%rsi)", "bl 0x1000"
  };
  // Decode as many instructions as the bytes hold. The first undecodable byte ends the list; its
  // offset is returned in *undecodedAt when non-null.
  virtual std::vector<Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                        std::size_t *undecodedAt = nullptr) const = 0;

  // --- Unicorn ----------------------------------------------------------------------------------
  virtual int unicornArch() const = 0; // uc_arch; only meaningful when executable()
  virtual int unicornMode() const = 0; // uc_mode

  // --- ISA facts the verifier's defaults follow
  virtual std::string_view family() const = 0; // "x86", "powerpc"
  virtual BranchForm branchForm() const = 0;
  // Whether an aligned instruction word is stored and fetched as one piece (powerpc: a real
  // machine never tears it, so the per-byte store and stale-fetch models do not apply; x86: no).
  virtual bool atomicInsnWords() const = 0;
  // Whether, in the guest images, a task's next call into a traced function follows an RCU-tasks
  // grace period at once (x86-64: yes; ppc32: no, it comes after the unregistration unless the
  // patcher sleeps until the call). The trampoline-freeing scenarios sleep until the call when not.
  virtual bool nextCallFollowsGracePeriod() const = 0;
  // Whether the simulated kernel places its module area near kernel text, so that a direct call
  // reaches it (powerpc module_alloc()'s first try, 2ec13df16704, v5.13).
  virtual bool modulesNearKernelText() const = 0;
  // Whether Linux gives this ISA per-ops trampolines once a release has them (f3bea49115b2, v3.17:
  // x86; no powerpc release has them, the trampoline harness's ppc32 ones are a port of x86's).
  virtual bool linuxOpsTrampolines() const = 0;
  // The built-in guest images of this ISA (corpora/guest flavours), default first; empty when the
  // ISA has none (it cannot be executed).
  virtual std::vector<std::string> guestFlavours() const = 0;

  // --- The target's parts (nullptr / empty when the ISA has none)
  // The protocol table, correct protocol first (PatchProtocol.h: protocolsFor, makePatchProtocol).
  virtual const std::vector<ProtocolEntry> &protocolTable() const = 0;
  // Mutants that are not protocols Linux ran: e.g. a broken encoder under the correct protocol.
  virtual const std::vector<MutantEntry> &mutants() const = 0;
  // A protocol program (ProtocolProgram.h) of this ISA as a table entry; throws FatalError naming
  // the step and key it cannot run, or when the ISA has no protocols.
  virtual ProtocolEntry compileProtocol(const ProtocolProgram &program) const = 0;
  // The simulator's view of the ISA; nullptr when it cannot be executed.
  virtual const GuestAbi *guestAbi() const = 0;
  virtual const SnippetEmitter *snippetEmitter() const = 0;
  virtual const LivePatchingRule *livePatchingRule() const = 0;
  // The guest ftrace trampolines (ftrace_caller and friends); nullptr when the ISA has none.
  virtual std::unique_ptr<FtraceTrampolines>
  makeTrampolines(const TrampolineRequest &request) const = 0;
  // The per-record ftrace arch code for one booted kernel (SiteHooks.h).
  virtual std::unique_ptr<SiteHooks> makeSiteHooks(const SiteHooksRequest &request) const = 0;
};

// "0f 1f 2e 00 00"
std::string hexBytes(std::span<const std::uint8_t> bytes);
// "nopl (%rsi); add %al,(%rax)" with "(bad)" for an undecodable tail, like objdump.
std::string describeBytes(const Arch &arch, std::span<const std::uint8_t> bytes,
                          std::uint64_t address);

// --- Registry
// Throws FatalError naming `name` and the known architectures when `name` is not one of them.
const Arch &archByName(std::string_view name);
// nullptr when no registered ISA matches.
const Arch *archByElf(std::uint16_t machine, unsigned elfClass);
// The ISA a command uses when none is given (the first registered, x86_64).
const Arch &defaultArch();
std::vector<const Arch *> allArchs();
std::vector<const Arch *> executableArchs();

} // namespace ftsim::arch
