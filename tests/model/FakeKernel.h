#pragma once
// A small in-memory kernel for the model tests: named functions whose call sites hold `call
// <mcount>` (x86-64) or `bl _mcount` (ppc32), a MachinePort over that memory that can be told to
// fault on reads or writes, and the symbolizer. No simulator involved.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"
#include "ftsim/model/ArchPatcher.h"
#include "ftsim/model/FtraceCore.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ftsim::model::test {

class FakeMachinePort : public arch::MachinePort {
public:
  struct Region {
    std::uint64_t base;
    std::vector<std::uint8_t> bytes;
    bool writable;
  };

  void addRegion(std::uint64_t base, std::size_t size, bool writable) {
    regions.push_back({base, std::vector<std::uint8_t>(size, 0), writable});
  }

  Region *regionFor(std::uint64_t addr, std::size_t size) {
    for (auto &region : regions)
      if (addr >= region.base && addr + size <= region.base + region.bytes.size())
        return &region;
    return nullptr;
  }

  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override {
    Region *region = regionFor(addr, out.size());
    if (!region || unreadable.count(addr))
      return false;
    std::copy_n(region->bytes.begin() + static_cast<std::ptrdiff_t>(addr - region->base),
                out.size(), out.begin());
    return true;
  }
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    Region *region = regionFor(addr, bytes.size());
    if (!region || !region->writable || unwritable.count(addr))
      return false;
    std::copy(bytes.begin(), bytes.end(),
              region->bytes.begin() + static_cast<std::ptrdiff_t>(addr - region->base));
    ++writes;
    return true;
  }
  void syncCores() override { ++syncs; }
  std::uint64_t allocText(std::size_t, std::uint64_t) override { return 0; }
  void freeText(std::uint64_t addr, std::size_t) override { freed.push_back(addr); }
  void synchronizeRcuTasks() override { ++rcuTasksSyncs; }
  void scheduleOnEachCpu() override { ++scheduleOnEachCpuCalls; }
  void publish(std::string_view what, const std::function<void()> &write) override {
    published.emplace_back(what);
    write();
  }
  void setTrapHandler(arch::TrapHandler) override {}
  void setHypercall(std::uint64_t, arch::Hypercall) override {}

  arch::Bytes bytesAt(std::uint64_t addr, std::size_t size) {
    arch::Bytes out(size);
    if (!readText(addr, out))
      return {};
    return out;
  }
  void poke(std::uint64_t addr, const arch::Bytes &bytes) {
    Region *region = regionFor(addr, bytes.size());
    std::copy(bytes.begin(), bytes.end(),
              region->bytes.begin() + static_cast<std::ptrdiff_t>(addr - region->base));
  }

  std::vector<Region> regions;
  std::set<std::uint64_t> unreadable;
  std::set<std::uint64_t> unwritable;
  std::size_t writes = 0;
  std::size_t syncs = 0;
  std::size_t rcuTasksSyncs = 0;
  std::size_t scheduleOnEachCpuCalls = 0;
  std::vector<std::uint64_t> freed;
  std::vector<std::string> published;
};

// Functions laid out 0x40 bytes apart; the call site is at `siteOffset` (0: fentry flavour,
// 4: mcount after `push %rbp; mov %rsp,%rbp`). Trampolines sit after the functions.
class FakeKernel {
public:
  struct Function {
    std::string name;
    std::string module;
  };

  FakeKernel(std::string_view archName, std::vector<Function> functions, unsigned siteOffset = 0)
      : arch(arch::archByName(archName)), functions_(std::move(functions)),
        siteOffset_(siteOffset) {
    base = arch.wordSize() == 8 ? 0xffffffff81000000ull : 0xc0000000ull;
    const std::uint64_t textSize = (functions_.size() + 4) * kStride;
    port.addRegion(base, textSize, true);
    addresses.mcount = base + functions_.size() * kStride;
    addresses.ftraceCaller = addresses.mcount + kStride;
    addresses.ftraceRegsCaller = addresses.ftraceCaller + kStride;
    for (std::size_t i = 0; i < functions_.size(); ++i) {
      const std::uint64_t site = functionStart(i) + siteOffset_;
      port.poke(site, arch.call(site, addresses.mcount).bytes);
      sites.push_back(site);
    }
    patcher = std::make_unique<PlainStorePatcher>(arch, port);
  }

  static constexpr std::uint64_t kStride = 0x40;

  std::uint64_t functionStart(std::size_t i) const { return base + i * kStride; }
  std::uint64_t site(std::string_view name) const {
    for (std::size_t i = 0; i < functions_.size(); ++i)
      if (functions_[i].name == name)
        return sites[i];
    return 0;
  }

  Symbolizer symbolizer() const {
    return [this](std::uint64_t addr) -> std::optional<SymbolInfo> {
      if (addr < base)
        return std::nullopt;
      const std::size_t i = (addr - base) / kStride;
      if (i >= functions_.size())
        return std::nullopt;
      return SymbolInfo{functions_[i].name, functionStart(i), kStride, functions_[i].module};
    };
  }

  FtraceConfig config(bool withRegs = true) {
    FtraceConfig cfg;
    cfg.patcher = patcher.get();
    cfg.port = &port;
    cfg.addresses = addresses;
    cfg.symbolizer = symbolizer();
    cfg.withRegs = withRegs;
    return cfg;
  }

  // The table in link order: object files in a different order from the addresses.
  std::vector<std::uint64_t> mcountLoc() const {
    std::vector<std::uint64_t> locs(sites.rbegin(), sites.rend());
    return locs;
  }

  const arch::Arch &arch;
  FakeMachinePort port;
  std::unique_ptr<ArchPatcher> patcher;
  TrampolineAddresses addresses;
  std::uint64_t base = 0;
  std::vector<std::uint64_t> sites;

private:
  std::vector<Function> functions_;
  unsigned siteOffset_;
};

// Boots `kernel` and returns the core.
inline std::unique_ptr<FtraceCore> bootedCore(FakeKernel &kernel, bool withRegs = true) {
  auto core = std::make_unique<FtraceCore>(kernel.config(withRegs));
  std::vector<std::uint64_t> locs = kernel.mcountLoc();
  BootOptions options;
  options.mcountLocs = locs;
  core->boot(options);
  return core;
}

inline std::vector<FakeKernel::Function> names(std::initializer_list<const char *> list) {
  std::vector<FakeKernel::Function> out;
  for (const char *name : list)
    out.push_back({name, {}});
  return out;
}

} // namespace ftsim::model::test
