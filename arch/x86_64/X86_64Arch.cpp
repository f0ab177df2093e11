// x86-64: 5-byte patch sites (call rel32 / nopl 0x0(%rax,%rax,1)), int3 breakpoints.
// Encodings follow arch/x86/kernel/ftrace.c (ftrace_call_replace) and
// arch/x86/include/asm/text-patching.h (text_gen_insn).

#include "../common/CapstoneDisassembler.h"
#include "X86_64Target.h"
#include "X86_64TextPoke.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/SiteHooks.h"

#include <elf.h>
#include <unicorn/unicorn.h>

#include <memory>

namespace ftsim::arch {
namespace {

constexpr std::uint8_t kCallOpcode = 0xe8;
constexpr std::uint8_t kJmpOpcode = 0xe9;
constexpr unsigned kRel32InsnSize = 5;

EncodeResult rel32(std::uint8_t opcode, std::uint64_t site, std::uint64_t target) {
  const auto delta = static_cast<std::int64_t>(target - (site + kRel32InsnSize));
  if (delta < INT32_MIN || delta > INT32_MAX)
    return {{}, false, "rel32 displacement out of range (target more than 2 GiB away)"};
  const auto rel = static_cast<std::uint32_t>(static_cast<std::int32_t>(delta));
  return {{opcode, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
           static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)},
          true,
          {}};
}

class X86_64Arch final : public Arch {
public:
  X86_64Arch()
      : disassembler_(CS_ARCH_X86, CS_MODE_64, /*attSyntax=*/true),
        snippets_(makeX86_64Snippets(*this)) {}

  std::string_view name() const override { return "x86_64"; }
  unsigned wordSize() const override { return 8; }
  Endian endian() const override { return Endian::Little; }
  bool executable() const override { return true; }

  std::uint16_t elfMachine() const override { return EM_X86_64; }
  unsigned elfClass() const override { return ELFCLASS64; }

  bool isMcountSymbol(std::string_view symbol) const override {
    return symbol == "__fentry__" || symbol == "mcount";
  }
  bool isMcountCallReloc(std::uint32_t type) const override {
    return type == R_X86_64_PLT32 || type == R_X86_64_PC32;
  }
  unsigned relocOffsetToSite() const override { return 1; }
  std::uint32_t mcountLocRelocType() const override { return R_X86_64_64; }
  bool usesRela() const override { return true; }

  unsigned siteSize() const override { return kRel32InsnSize; }
  unsigned insnAlignment() const override { return 1; }
  // The 5-byte nop the kernel uses for call sites (x86_nops[5], P6_NOP5).
  Bytes nop() const override { return {0x0f, 0x1f, 0x44, 0x00, 0x00}; }
  Bytes trap() const override { return {0xcc}; }
  EncodeResult call(std::uint64_t site, std::uint64_t target) const override {
    return rel32(kCallOpcode, site, target);
  }
  EncodeResult jump(std::uint64_t site, std::uint64_t target) const override {
    return rel32(kJmpOpcode, site, target);
  }
  std::optional<std::uint64_t> callTarget(std::uint64_t site,
                                          std::span<const std::uint8_t> bytes) const override {
    if (bytes.size() < kRel32InsnSize || bytes[0] != kCallOpcode)
      return std::nullopt;
    return site + kRel32InsnSize + static_cast<std::int64_t>(x86Rel32(&bytes[1]));
  }
  unsigned dynArchFtraceSize() const override { return 0; }
  unsigned maxInsnSize() const override { return 15; }

  std::vector<Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                std::size_t *undecodedAt) const override {
    return disassembler_.disassemble(bytes, address, undecodedAt);
  }

  int unicornArch() const override { return UC_ARCH_X86; }
  int unicornMode() const override { return UC_MODE_64; }

  std::string_view family() const override { return "x86"; }
  BranchForm branchForm() const override { return BranchForm::Rel32; }
  bool atomicInsnWords() const override { return false; }
  bool nextCallFollowsGracePeriod() const override { return true; }
  bool modulesNearKernelText() const override { return false; }
  bool linuxOpsTrampolines() const override { return true; }
  std::vector<std::string> guestFlavours() const override {
    return {"x86_64-fentry", "x86_64-mcount"};
  }
  const std::vector<ProtocolEntry> &protocolTable() const override { return x86_64Protocols(); }
  const std::vector<MutantEntry> &mutants() const override {
    static const std::vector<MutantEntry> none; // every x86 mutant is a protocol-table variant
    return none;
  }
  ProtocolEntry compileProtocol(const ProtocolProgram &program) const override {
    return compileX86_64Protocol(program);
  }
  const GuestAbi *guestAbi() const override { return &x86_64GuestAbi(); }
  const SnippetEmitter *snippetEmitter() const override { return snippets_.get(); }
  const LivePatchingRule *livePatchingRule() const override { return nullptr; }
  std::unique_ptr<FtraceTrampolines>
  makeTrampolines(const TrampolineRequest &request) const override {
    return makeX86_64Trampolines(*this, request);
  }
  // One call instruction per site, no record datum, no modules: the generic hooks.
  std::unique_ptr<SiteHooks> makeSiteHooks(const SiteHooksRequest &) const override {
    return std::make_unique<SiteHooks>(*this);
  }

private:
  CapstoneDisassembler disassembler_;
  std::unique_ptr<SnippetEmitter> snippets_;
};

} // namespace

std::unique_ptr<Arch> createX86_64Arch() { return std::make_unique<X86_64Arch>(); }

} // namespace ftsim::arch
