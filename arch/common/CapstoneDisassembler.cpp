#include "CapstoneDisassembler.h"

#include "ftsim/arch/Error.h"

namespace ftsim::arch {

CapstoneDisassembler::CapstoneDisassembler(cs_arch archId, cs_mode mode, bool attSyntax) {
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
      text += ' ';
      text += insn->op_str;
    }
    out.push_back({insn->address, insn->size, std::move(text)});
  }
  cs_free(insn, 1);
  if (undecodedAt)
    *undecodedAt = bytes.size() - size;
  return out;
}

} // namespace ftsim::arch
