#include "CapstoneDisassembler.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

namespace ftsim::arch {
namespace {

// Whether `mnemonic` is a direct branch or call, whose last operand is its target address.
// powerpc: b, bl, ba, bc, bne, bdnz, ...; not the branches to a register (bctr, blr, bcctr, bclr,
// ...), whose operands are fields of the instruction.
bool isBranch(cs_arch archId, std::string_view mnemonic) {
  if (archId == CS_ARCH_PPC)
    return mnemonic.starts_with('b') && mnemonic.find("ctr") == std::string_view::npos &&
           mnemonic.find("lr") == std::string_view::npos;
  return mnemonic.starts_with('j') || mnemonic.starts_with("call") ||
         mnemonic.starts_with("loop") || mnemonic == "xbegin";
}

// A branch target printed in decimal, rewritten in hex. Capstone prints immediates above 9 in hex
// and smaller ones in decimal; Capstone 4 made an exception of powerpc branch targets (always hex:
// `bl 0x0`), Capstone 5 does not (`bl 0`). Every target is printed in hex here, whatever the
// version: `bl 0x0`, `bl 0x4`, `callq 0x5`.
void targetInHex(std::string &opStr) {
  const std::size_t start = opStr.find_last_of(", ") + 1; // 0 when there is one operand
  const std::string_view last = std::string_view(opStr).substr(start);
  if (last.empty() || !std::all_of(last.begin(), last.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return;
  std::uint64_t target = 0;
  if (std::from_chars(last.data(), last.data() + last.size(), target).ec != std::errc())
    return;
  opStr.replace(start, std::string::npos, fmt::format("{:#x}", target));
}

} // namespace

CapstoneDisassembler::CapstoneDisassembler(cs_arch archId, cs_mode mode, bool attSyntax)
    : archId_(archId) {
  if (cs_open(archId, mode, &handle_) != CS_ERR_OK)
    FTSIM_PANIC("cs_open failed for Capstone arch {}", static_cast<int>(archId));
  if (attSyntax)
    cs_option(handle_, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
}

CapstoneDisassembler::~CapstoneDisassembler() { cs_close(&handle_); }

std::vector<Arch::Insn> CapstoneDisassembler::disassemble(std::span<const std::uint8_t> bytes,
                                                          std::uint64_t address,
                                                          std::size_t *undecodedAt) const {
  std::lock_guard lock(mutex_);
  std::vector<Arch::Insn> out;
  const std::uint8_t *code = bytes.data();
  std::size_t size = bytes.size();
  std::uint64_t pc = address;
  cs_insn *insn = cs_malloc(handle_);
  while (size > 0 && cs_disasm_iter(handle_, &code, &size, &pc, insn)) {
    std::string text = insn->mnemonic;
    if (insn->op_str[0] != '\0') {
      std::string operands = insn->op_str;
      if (isBranch(archId_, insn->mnemonic))
        targetInHex(operands);
      text += ' ';
      text += operands;
    }
    out.push_back({insn->address, insn->size, std::move(text)});
  }
  cs_free(insn, 1);
  if (undecodedAt)
    *undecodedAt = bytes.size() - size;
  return out;
}

} // namespace ftsim::arch
