#pragma once
// The parts of the x86-64 target (X86_64Arch.cpp returns them), one file each.

#include "ftsim/arch/GuestAbi.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SnippetEmitter.h"
#include "ftsim/arch/Trampolines.h"

#include <cstdint>

namespace ftsim::arch {

// The signed 32-bit displacement of a rel32 call or jump, at `b` (little-endian).
inline std::int32_t x86Rel32(const std::uint8_t *b) {
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
      static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24);
}

const std::vector<ProtocolEntry> &x86_64Protocols();                  // X86_64Protocols.cpp
const GuestAbi &x86_64GuestAbi();                                     // X86_64GuestAbi.cpp
std::unique_ptr<SnippetEmitter> makeX86_64Snippets(const Arch &arch); // X86_64Snippets.cpp
std::unique_ptr<FtraceTrampolines> makeX86_64Trampolines(const Arch &arch,
                                                         const TrampolineRequest &request);

} // namespace ftsim::arch
