#pragma once
// A MachinePort in front of another: every call goes on to `inner`, so that a subclass overrides
// only what it observes (a live-patching rule's checked port, a sync observer).

#include "ftsim/arch/MachinePort.h"

#include <utility>

namespace ftsim::arch {

class ForwardingPort : public MachinePort {
public:
  explicit ForwardingPort(MachinePort &inner) : inner_(inner) {}

  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override {
    return inner_.readText(addr, out);
  }
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    return inner_.writeText(addr, bytes);
  }
  void syncCores() override { inner_.syncCores(); }
  std::uint64_t allocText(std::size_t size, std::uint64_t nearAddress) override {
    return inner_.allocText(size, nearAddress);
  }
  void freeText(std::uint64_t addr, std::size_t size) override { inner_.freeText(addr, size); }
  void synchronizeRcuTasks() override { inner_.synchronizeRcuTasks(); }
  void scheduleOnEachCpu() override { inner_.scheduleOnEachCpu(); }
  void publish(std::string_view what, const std::function<void()> &write) override {
    inner_.publish(what, write);
  }
  void setTrapHandler(TrapHandler handler) override { inner_.setTrapHandler(std::move(handler)); }
  void setHypercall(std::uint64_t stubAddress, Hypercall callback) override {
    inner_.setHypercall(stubAddress, std::move(callback));
  }

protected:
  MachinePort &inner() { return inner_; }

private:
  MachinePort &inner_;
};

} // namespace ftsim::arch
