#pragma once
// Glue between a linked guest image (ftsim::arch::Image) and the core's boot: its symbols as a
// Symbolizer (kallsyms) and its __mcount_loc table and text range as BootOptions.

#include "ftsim/arch/Image.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SiteHooks.h"
#include "ftsim/arch/StoppedPort.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/Symbolizer.h"

#include <memory>

namespace ftsim::model {

// Function symbols of `image` (which must outlive the result). Core-kernel symbols: no module.
Symbolizer imageSymbolizer(const arch::Image &image);

// mcountLocs = image.mcountLocs; isKernelText = inside an executable segment.
BootOptions imageBootOptions(const arch::Image &image);

// The machine as ftrace_init() finds it: one CPU, no other task (arch::StoppedPort), text
// writable in place (text_poke_early): reads and writes go to the image's bytes.
class BootTextPort final : public arch::StoppedPort {
public:
  explicit BootTextPort(arch::Image &image) : image_(image) {}
  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override;
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override;

private:
  arch::Image &image_;
};

// Boots `image` in place: builds the records and turns every call site into the ISA's nop through
// `protocol` (read, verify, write). The image's text then holds what the running kernel holds.
struct ImageBoot {
  BootReport report;
  std::string bugText; // every ftrace_bug report, as the kernel prints them
};
ImageBoot bootImage(arch::Image &image, FtraceCore &core);

// An image booted in place, as ftrace_init() leaves it before the other CPUs start: the ISA's
// correct patch protocol, a ProtocolPatcher over the target's SiteHooks for the image (its site
// layout), and the core holding the records. `image` must outlive it.
class StaticBoot {
public:
  explicit StaticBoot(arch::Image &image);
  FtraceCore &core() { return *core_; }
  const ImageBoot &result() const { return result_; }

private:
  BootTextPort port_;
  std::unique_ptr<arch::PatchProtocol> protocol_;
  std::unique_ptr<arch::SiteHooks> hooks_;
  std::unique_ptr<ArchPatcher> patcher_;
  std::unique_ptr<FtraceCore> core_;
  ImageBoot result_;
};

} // namespace ftsim::model
