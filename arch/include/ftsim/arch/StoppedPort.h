#pragma once
// MachinePorts of a machine that is not running, for driving a patch protocol or the engine
// outside the simulator: at boot (model/ImageBoot.h: text_poke_early), in a live-patching rule's
// protocol-only check, in proofs over a protocol's stores (verify/src/prove) and in tests.

#include "ftsim/arch/MachinePort.h"

#include <map>

namespace ftsim::arch {

// Nothing else runs: a core sync, a grace period and schedule_on_each_cpu() complete at once, a
// publication is its write, there is no executable memory to allocate (allocText returns 0), and
// no trap or hypercall can happen, so handlers are not kept. Subclasses give the text and override
// what they observe.
class StoppedPort : public MachinePort {
public:
  void syncCores() override {}
  std::uint64_t allocText(std::size_t, std::uint64_t) override { return 0; }
  void freeText(std::uint64_t, std::size_t) override {}
  void synchronizeRcuTasks() override {}
  void scheduleOnEachCpu() override {}
  void publish(std::string_view, const std::function<void()> &write) override { write(); }
  void setTrapHandler(TrapHandler) override {}
  void setHypercall(std::uint64_t, Hypercall) override {}
};

// Text as a map of bytes: every store lands at once; a read of a byte never written fails.
class ByteMapPort : public StoppedPort {
public:
  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override {
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto it = text.find(addr + i);
      if (it == text.end())
        return false;
      out[i] = it->second;
    }
    return true;
  }
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    for (std::size_t i = 0; i < bytes.size(); ++i)
      text[addr + i] = bytes[i];
    return true;
  }

  std::map<std::uint64_t, std::uint8_t> text;
};

} // namespace ftsim::arch
