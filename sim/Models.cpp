#include "ftsim/sim/Models.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::sim {

std::string_view storeModelName(StoreModel model) {
  switch (model) {
  case StoreModel::Byte:
    return "byte";
  case StoreModel::Word:
    return "word";
  case StoreModel::Line:
    return "line";
  }
  FTSIM_PANIC("bad StoreModel {}", static_cast<int>(model));
}

StoreModel parseStoreModel(std::string_view name) {
  for (StoreModel m : {StoreModel::Byte, StoreModel::Word, StoreModel::Line})
    if (storeModelName(m) == name)
      return m;
  fatal("unknown store model '{}' (known: byte, word, line)", name);
}

StoreModel defaultStoreModel(const arch::Arch &arch) {
  return arch.atomicInsnWords() ? StoreModel::Word : StoreModel::Byte;
}

bool isRealStoreModel(const arch::Arch &arch, StoreModel model) {
  return !(arch.atomicInsnWords() && model == StoreModel::Byte);
}

std::vector<StorePiece> splitStores(StoreModel model, std::uint64_t addr, std::uint32_t size) {
  std::vector<StorePiece> pieces;
  std::uint32_t done = 0;
  while (done < size) {
    std::uint64_t at = addr + done;
    std::uint32_t left = size - done;
    std::uint32_t piece = 1;
    switch (model) {
    case StoreModel::Byte:
      piece = 1;
      break;
    case StoreModel::Word:
      // The largest naturally aligned power of two (<= 8) that fits: an aligned 2/4/8-byte store
      // is single-copy atomic (Intel SDM vol. 3A 9.1.1; Power ISA book II 1.4), and no piece
      // crosses an 8-byte boundary.
      for (std::uint32_t s : {8u, 4u, 2u}) {
        if (at % s == 0 && left >= s) {
          piece = s;
          break;
        }
      }
      break;
    case StoreModel::Line:
      piece = static_cast<std::uint32_t>(std::min<std::uint64_t>(left, kLineSize - at % kLineSize));
      break;
    }
    pieces.push_back({done, piece});
    done += piece;
  }
  return pieces;
}

} // namespace ftsim::sim
