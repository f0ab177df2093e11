#pragma once
// A growing buffer of guest code at a known address, for the targets' snippet emitters.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"

#include <initializer_list>

namespace ftsim::arch {

class CodeWriter {
public:
  CodeWriter(const Arch &arch, std::uint64_t base) : arch_(arch), base_(base) {}
  std::uint64_t here() const { return base_ + bytes_.size(); }
  void put(std::span<const std::uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  void put(std::initializer_list<std::uint8_t> bytes) {
    put(std::span<const std::uint8_t>(bytes.begin(), bytes.size()));
  }
  void word(std::uint32_t w) { // big-endian powerpc word
    put({static_cast<std::uint8_t>(w >> 24), static_cast<std::uint8_t>(w >> 16),
         static_cast<std::uint8_t>(w >> 8), static_cast<std::uint8_t>(w)});
  }
  void call(std::uint64_t target) {
    EncodeResult r = arch_.call(here(), target);
    if (!r.ok)
      FTSIM_PANIC("scenario call {:#x} -> {:#x}: {}", here(), target, r.error);
    put(r.bytes);
  }
  Bytes take() { return std::move(bytes_); }

private:
  const Arch &arch_;
  std::uint64_t base_;
  Bytes bytes_;
};

} // namespace ftsim::arch
