// ppc32 (32-bit big-endian PowerPC): the executable powerpc guest (Unicorn 2.0.1 runs only this).
// gcc -pg sites are `mflr r0; stw r0,4(r1); bl _mcount`; the patch site is the bl word.

#include "../common/CapstoneDisassembler.h"
#include "../common/PowerPcBranch.h"
#include "ftsim/arch/Arch.h"

#include <elf.h>
#include <unicorn/unicorn.h>

#include <memory>

namespace ftsim::arch {
namespace {

class Ppc32Arch final : public Arch {
public:
  Ppc32Arch() : disassembler_(CS_ARCH_PPC, CS_MODE_32 | CS_MODE_BIG_ENDIAN, /*attSyntax=*/false) {}

  std::string_view name() const override { return "ppc32"; }
  unsigned wordSize() const override { return 4; }
  Endian endian() const override { return Endian::Big; }
  bool executable() const override { return true; }

  std::uint16_t elfMachine() const override { return EM_PPC; }
  unsigned elfClass() const override { return ELFCLASS32; }

  bool isMcountSymbol(std::string_view symbol) const override {
    return symbol == "_mcount" || symbol == "mcount";
  }
  bool isMcountCallReloc(std::uint32_t type) const override { return type == R_PPC_REL24; }
  unsigned relocOffsetToSite() const override { return 0; }
  std::uint32_t mcountLocRelocType() const override { return R_PPC_ADDR32; }
  bool usesRela() const override { return true; }

  unsigned siteSize() const override { return 4; }
  unsigned insnAlignment() const override { return 4; }
  Bytes nop() const override { return powerpc::wordBytes(powerpc::kNop); }
  Bytes trap() const override { return powerpc::wordBytes(powerpc::kTrap); }
  EncodeResult call(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/true, 4 * 8);
  }
  EncodeResult jump(std::uint64_t site, std::uint64_t target) const override {
    return powerpc::branch(site, target, /*link=*/false, 4 * 8);
  }
  std::optional<std::uint64_t> callTarget(std::uint64_t site,
                                          std::span<const std::uint8_t> bytes) const override {
    return powerpc::blTarget(site, bytes, 4 * 8);
  }
  unsigned dynArchFtraceSize() const override { return 4; }
  unsigned maxInsnSize() const override { return 4; }

  std::vector<Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                std::size_t *undecodedAt) const override {
    return disassembler_.disassemble(bytes, address, undecodedAt);
  }

  int unicornArch() const override { return UC_ARCH_PPC; }
  int unicornMode() const override { return UC_MODE_PPC32 | UC_MODE_BIG_ENDIAN; }

private:
  CapstoneDisassembler disassembler_;
};

} // namespace

std::unique_ptr<Arch> createPpc32Arch() { return std::make_unique<Ppc32Arch>(); }

} // namespace ftsim::arch
