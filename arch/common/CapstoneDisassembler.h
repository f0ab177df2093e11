#pragma once
// A Capstone handle owned by one Arch object. Capstone handles are not thread-safe, so calls are
// serialised by a mutex (disassembly is only used when reporting, never on the step loop). Branch
// targets are printed in hex on every Capstone version (`bl 0x0`, never `bl 0`).

#include "ftsim/arch/Arch.h"

#include <capstone/capstone.h>

#include <mutex>

namespace ftsim::arch {

class CapstoneDisassembler {
public:
  CapstoneDisassembler(cs_arch archId, cs_mode mode, bool attSyntax);
  ~CapstoneDisassembler();
  CapstoneDisassembler(const CapstoneDisassembler &) = delete;
  CapstoneDisassembler &operator=(const CapstoneDisassembler &) = delete;

  std::vector<Arch::Insn> disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                      std::size_t *undecodedAt) const;

private:
  cs_arch archId_;
  csh handle_ = 0;
  mutable std::mutex mutex_;
};

} // namespace ftsim::arch
