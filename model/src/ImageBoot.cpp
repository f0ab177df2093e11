#include "ftsim/model/ImageBoot.h"

namespace ftsim::model {

Symbolizer imageSymbolizer(const arch::Image &image) {
  return [&image](std::uint64_t addr) -> std::optional<SymbolInfo> {
    const arch::ImageSymbol *symbol = image.symbolAt(addr);
    if (!symbol || !symbol->function)
      return std::nullopt;
    if (symbol->size && addr >= symbol->addr + symbol->size)
      return std::nullopt;
    return SymbolInfo{symbol->name, symbol->addr, symbol->size, {}};
  };
}

BootOptions imageBootOptions(const arch::Image &image) {
  BootOptions options;
  options.mcountLocs = image.mcountLocs;
  options.isKernelText = [&image](std::uint64_t addr) {
    const arch::ImageSegment *segment = image.segmentAt(addr);
    return segment && segment->executable;
  };
  return options;
}

} // namespace ftsim::model
