// ppc64 (64-bit big-endian, ELFv2 -mprofile-kernel objects): handled statically only, because
// Unicorn 2.0.1 (Debian 12) executes 32-bit big-endian PowerPC only. Sites are
// `mflr r0; bl _mcount` after the global entry point's TOC setup.

#include "../common/CapstoneDisassembler.h"
#include "../common/PowerPcBranch.h"
#include "ftsim/arch/Arch.h"

#include <elf.h>
#include <unicorn/unicorn.h>

#include <memory>

namespace ftsim::arch {
namespace {

class Ppc64Arch final : public Arch {
public:
  Ppc64Arch() : disassembler_(CS_ARCH_PPC, CS_MODE_64 | CS_MODE_BIG_ENDIAN, /*attSyntax=*/false) {}

  std::string_view name() const override { return "ppc64"; }
  unsigned wordSize() const override { return 8; }
  Endian endian() const override { return Endian::Big; }
  bool executable() const override { return false; }

  std::uint16_t elfMachine() const override { return EM_PPC64; }
  unsigned elfClass() const override { return ELFCLASS64; }

  bool isMcountSymbol(std::string_view symbol) const override {
    return symbol == "_mcount" || symbol == "mcount";
  }
  bool isMcountCallReloc(std::uint32_t type) const override { return type == R_PPC64_REL24; }
  unsigned relocOffsetToSite() const override { return 0; }
  std::uint32_t mcountLocRelocType() const override { return R_PPC64_ADDR64; }
  bool usesRela() const override { return true; }

  unsigned siteSize() const override { return 4; }
  unsigned insnAlignment() const override { return 4; }
  Bytes nop() const override { return powerpc::wordBytes(powerpc::kNop); }
  Bytes trap() const override { return powerpc::wordBytes(powerpc::kTrap); }
  EncodeResult call(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/true, 8 * 8);
  }
  EncodeResult jump(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/false, 8 * 8);
  }
  std::optional<std::uint64_t> callTarget(std::uint64_t site,
                                          std::span<const std::uint8_t> bytes) const override {
    return powerpc::blTarget(site, bytes, 8 * 8);
  }
  unsigned dynArchFtraceSize() const override { return 8; }
  unsigned maxInsnSize() const override { return 4; }

  std::vector<Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                std::size_t *undecodedAt) const override {
    return disassembler_.disassemble(bytes, address, undecodedAt);
  }

  int unicornArch() const override { return UC_ARCH_PPC; }
  int unicornMode() const override { return UC_MODE_PPC64 | UC_MODE_BIG_ENDIAN; }

private:
  CapstoneDisassembler disassembler_;
};

} // namespace

std::unique_ptr<Arch> createPpc64Arch() { return std::make_unique<Ppc64Arch>(); }

} // namespace ftsim::arch
