#include "ftsim/model/ImageBoot.h"

#include "ftsim/model/ProtocolPatcher.h"

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

bool BootTextPort::readText(std::uint64_t addr, std::span<std::uint8_t> out) {
  const arch::ImageSegment *segment = image_.segmentAt(addr, out.size());
  return segment && segment->executable && image_.read(addr, out);
}

bool BootTextPort::writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  const arch::ImageSegment *segment = image_.segmentAt(addr, bytes.size());
  return segment && segment->executable && image_.write(addr, bytes);
}

ImageBoot bootImage(arch::Image &image, FtraceCore &core) {
  ImageBoot out;
  out.report = core.boot(imageBootOptions(image));
  for (const auto &bug : out.report.bugs)
    out.bugText += bug.text();
  return out;
}

StaticBoot::StaticBoot(arch::Image &image)
    : port_(image),
      protocol_(arch::makePatchProtocol(*image.arch, arch::protocolsFor(*image.arch).front().name)),
      hooks_(image.arch->makeSiteHooks({&image, protocol_.get()})),
      patcher_(std::make_unique<ProtocolPatcher>(port_, *protocol_, *hooks_)) {
  FtraceConfig config;
  config.patcher = patcher_.get();
  config.port = &port_;
  config.addresses.mcount = image.mcountAddr;
  config.symbolizer = imageSymbolizer(image);
  core_ = std::make_unique<FtraceCore>(config);
  result_ = bootImage(image, *core_);
}

} // namespace ftsim::model
