#pragma once
// The store model of the machine: how the patcher's multi-byte writes split into atomic stores.
// (What a CPU fetches while text is being modified is the fetch model, FetchModel.h.) See
// sim/README.md, "Semantics", for the exact rules and the reasons.

#include "ftsim/arch/Arch.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace ftsim::sim {

// How one writeText() splits into atomic stores; each store is one scheduled event.
enum class StoreModel : std::uint8_t {
  Byte, // every byte is its own store
  Word, // naturally aligned 8/4/2-byte pieces, greedily; nothing crosses an 8-byte boundary
  Line, // everything inside one 64-byte line is one store
};

constexpr std::uint64_t kLineSize = 64;

std::string_view storeModelName(StoreModel model);
// FatalError naming the known models when `name` is not one.
StoreModel parseStoreModel(std::string_view name);

// What the ISA's real machines do, from the target's facts (Arch::atomicInsnWords): the default
// store model (x86 byte: the sound over-approximation; powerpc word: aligned word stores are
// atomic), and whether a model exists on real machines of the ISA (powerpc has no byte stores
// into text: Power ISA v3.1 Book II 1.4 "Single-Copy Atomicity", an aligned word store is atomic).
StoreModel defaultStoreModel(const arch::Arch &arch);
bool isRealStoreModel(const arch::Arch &arch, StoreModel model);

// One atomic store of a split write: `offset` bytes into the write, `size` bytes long.
struct StorePiece {
  std::uint32_t offset;
  std::uint32_t size;
};

// The atomic stores `model` makes of a write of `size` bytes at `addr`, in program order.
std::vector<StorePiece> splitStores(StoreModel model, std::uint64_t addr, std::uint32_t size);

} // namespace ftsim::sim
