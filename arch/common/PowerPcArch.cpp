// powerpc, 32- and 64-bit big-endian. The encodings are the same I-form branches and the same
// nop/trap words; the widths differ in pointer size, ELF class and relocation types, and only the
// 32-bit one is executable (Unicorn 2.0.1 runs 32-bit big-endian PowerPC only).
//   ppc32: gcc -pg sites are `mflr r0; stw r0,4(r1); bl _mcount`; the patch site is the bl word.
//   ppc64: ELFv2 -mprofile-kernel objects (`mflr r0; bl _mcount` after the global entry point's
//          TOC setup), handled statically: recordmcount, encodings, proofs.

#include "../ppc32/Ppc32Protocols.h"
#include "../ppc32/Ppc32Target.h"
#include "CapstoneDisassembler.h"
#include "PowerPcBranch.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/ProtocolProgram.h"

#include <elf.h>
#include <unicorn/unicorn.h>

#include <memory>

namespace ftsim::arch {
namespace {

struct PowerPcVariant {
  const char *name;
  unsigned bits;
  std::uint16_t elfMachine;
  unsigned elfClass;
  std::uint32_t callReloc; // the bl _mcount relocation
  std::uint32_t wordReloc; // __mcount_loc entries
  bool executable;
  cs_mode capstoneMode; // CS_MODE_BIG_ENDIAN is bit 31 in Capstone 5: not an int
  int unicornMode;
};

constexpr PowerPcVariant kPpc32{"ppc32",
                                32,
                                EM_PPC,
                                ELFCLASS32,
                                R_PPC_REL24,
                                R_PPC_ADDR32,
                                true,
                                static_cast<cs_mode>(CS_MODE_32 | CS_MODE_BIG_ENDIAN),
                                UC_MODE_PPC32 | UC_MODE_BIG_ENDIAN};
constexpr PowerPcVariant kPpc64{"ppc64",
                                64,
                                EM_PPC64,
                                ELFCLASS64,
                                R_PPC64_REL24,
                                R_PPC64_ADDR64,
                                false,
                                static_cast<cs_mode>(CS_MODE_64 | CS_MODE_BIG_ENDIAN),
                                UC_MODE_PPC64 | UC_MODE_BIG_ENDIAN};

// What a width contributes beyond encodings: ppc32 runs on the machine, ppc64 is static only.
struct PowerPcParts {
  std::vector<std::string> guestFlavours;
  const std::vector<ProtocolEntry> &protocols;
  const std::vector<MutantEntry> &mutants;
  ProtocolEntry (*compileProtocol)(const ProtocolProgram &) = nullptr;
  const GuestAbi *abi = nullptr;
  std::unique_ptr<SnippetEmitter> (*snippets)(const Arch &) = nullptr;
  std::unique_ptr<LivePatchingRule> (*rule)(const Arch &) = nullptr;
  std::unique_ptr<FtraceTrampolines> (*trampolines)(const Arch &,
                                                    const TrampolineRequest &) = nullptr;
  std::unique_ptr<SiteHooks> (*siteHooks)(const Arch &, const SiteHooksRequest &) = nullptr;
};

class PowerPcArch final : public Arch {
public:
  PowerPcArch(const PowerPcVariant &v, PowerPcParts parts)
      : v_(v), disassembler_(CS_ARCH_PPC, v.capstoneMode, /*attSyntax=*/false),
        parts_(std::move(parts)), snippets_(parts_.snippets ? parts_.snippets(*this) : nullptr),
        rule_(parts_.rule ? parts_.rule(*this) : nullptr) {}

  std::string_view name() const override { return v_.name; }
  unsigned wordSize() const override { return v_.bits / 8; }
  Endian endian() const override { return Endian::Big; }
  bool executable() const override { return v_.executable; }

  std::uint16_t elfMachine() const override { return v_.elfMachine; }
  unsigned elfClass() const override { return v_.elfClass; }

  bool isMcountSymbol(std::string_view symbol) const override {
    return symbol == "_mcount" || symbol == "mcount";
  }
  bool isMcountCallReloc(std::uint32_t type) const override { return type == v_.callReloc; }
  unsigned relocOffsetToSite() const override { return 0; }
  std::uint32_t mcountLocRelocType() const override { return v_.wordReloc; }
  bool usesRela() const override { return true; }

  unsigned siteSize() const override { return 4; }
  unsigned insnAlignment() const override { return 4; }
  Bytes nop() const override { return powerpc::wordBytes(powerpc::kNop); }
  Bytes trap() const override { return powerpc::wordBytes(powerpc::kTrap); }
  EncodeResult call(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/true, v_.bits);
  }
  EncodeResult jump(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/false, v_.bits);
  }
  std::optional<std::uint64_t> callTarget(std::uint64_t site,
                                          std::span<const std::uint8_t> bytes) const override {
    return powerpc::blTarget(site, bytes, v_.bits);
  }
  // struct dyn_arch_ftrace { struct module *mod; }
  unsigned dynArchFtraceSize() const override { return v_.bits / 8; }
  unsigned maxInsnSize() const override { return 4; }

  std::vector<Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                std::size_t *undecodedAt) const override {
    return disassembler_.disassemble(bytes, address, undecodedAt);
  }

  int unicornArch() const override { return UC_ARCH_PPC; }
  int unicornMode() const override { return v_.unicornMode; }

  std::string_view family() const override { return "powerpc"; }
  BranchForm branchForm() const override { return BranchForm::PowerPcI; }
  bool atomicInsnWords() const override { return true; }
  bool nextCallFollowsGracePeriod() const override { return false; }
  // module_alloc() of powerpc/32 (2ec13df16704) first tries within 32 MiB below _etext.
  bool modulesNearKernelText() const override { return v_.bits == 32; }
  bool linuxOpsTrampolines() const override { return false; }
  std::vector<std::string> guestFlavours() const override { return parts_.guestFlavours; }
  const std::vector<ProtocolEntry> &protocolTable() const override { return parts_.protocols; }
  const std::vector<MutantEntry> &mutants() const override { return parts_.mutants; }
  ProtocolEntry compileProtocol(const ProtocolProgram &program) const override {
    if (!parts_.compileProtocol)
      fatal("protocol '{}': {} has no patch protocols (it is handled statically)", program.name,
            v_.name);
    return parts_.compileProtocol(program);
  }
  const GuestAbi *guestAbi() const override { return parts_.abi; }
  const SnippetEmitter *snippetEmitter() const override { return snippets_.get(); }
  const LivePatchingRule *livePatchingRule() const override { return rule_.get(); }
  std::unique_ptr<FtraceTrampolines>
  makeTrampolines(const TrampolineRequest &request) const override {
    return parts_.trampolines ? parts_.trampolines(*this, request) : nullptr;
  }
  // ppc64 (static only) keeps the generic single-instruction hooks.
  std::unique_ptr<SiteHooks> makeSiteHooks(const SiteHooksRequest &request) const override {
    return parts_.siteHooks ? parts_.siteHooks(*this, request) : std::make_unique<SiteHooks>(*this);
  }

private:
  const PowerPcVariant &v_;
  CapstoneDisassembler disassembler_;
  PowerPcParts parts_;
  std::unique_ptr<SnippetEmitter> snippets_;
  std::unique_ptr<LivePatchingRule> rule_;
};

} // namespace

std::unique_ptr<Arch> createPpc32Arch() {
  return std::make_unique<PowerPcArch>(kPpc32, PowerPcParts{{"ppc32-mcount", "ppc32-pfe"},
                                                            ppc32Protocols(),
                                                            ppc32Mutants(),
                                                            compilePpc32Protocol,
                                                            &ppc32GuestAbi(),
                                                            makePpc32Snippets,
                                                            makePpc32CmodxRule,
                                                            makePpc32Trampolines,
                                                            makePpc32SiteHooks});
}

std::unique_ptr<Arch> createPpc64Arch() {
  static const std::vector<ProtocolEntry> noProtocols;
  static const std::vector<MutantEntry> noMutants;
  return std::make_unique<PowerPcArch>(kPpc64, PowerPcParts{{}, noProtocols, noMutants});
}

} // namespace ftsim::arch
