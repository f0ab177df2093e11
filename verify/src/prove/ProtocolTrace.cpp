#include "ftsim/verify/prove/ProtocolTrace.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/StoppedPort.h"

#include <algorithm>

namespace ftsim::verify {
namespace {

// A stopped machine whose text is a byte map. Stores are split by the store model; after every
// atomic store and publication the protocol's trap handler is asked about every site.
class RecordingPort final : public arch::ByteMapPort {
public:
  RecordingPort(sim::StoreModel store, ProtocolTrace &trace) : store_(store), trace_(trace) {}

  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    for (const auto &piece :
         sim::splitStores(store_, addr, static_cast<std::uint32_t>(bytes.size()))) {
      TraceStep step;
      step.kind = TraceStep::Kind::Store;
      step.addr = addr + piece.offset;
      step.bytes.assign(bytes.begin() + piece.offset, bytes.begin() + piece.offset + piece.size);
      ByteMapPort::writeText(step.addr, step.bytes);
      trace_.steps.push_back(step);
      addPoint(trace_.points.back().stores + 1, false);
    }
    return true;
  }
  void syncCores() override {
    trace_.steps.push_back({TraceStep::Kind::Sync, 0, {}});
    addPoint(trace_.points.back().stores, true);
  }
  void publish(std::string_view, const std::function<void()> &write) override {
    write();
    addPoint(trace_.points.back().stores, false);
  }
  void setTrapHandler(arch::TrapHandler handler) override { handler_ = std::move(handler); }

  void addPoint(std::size_t stores, bool afterSync) {
    TracePoint point{stores, afterSync, {}, {}};
    for (const auto &r : trace_.requests) {
      ProbeContext ctx(r.addr);
      const bool handled = handler_ && handler_(ctx, r.addr) == arch::TrapVerdict::Handled;
      point.armed.push_back(handled);
      point.resume.push_back(handled ? TrapResume{ctx.pc(), ctx.pushed()} : TrapResume{});
    }
    trace_.points.push_back(std::move(point));
  }

private:
  // Registers and a scratch stack for one probing trap.
  class ProbeContext final : public arch::GuestContext {
  public:
    explicit ProbeContext(std::uint64_t addr) : pc_(addr + 1) {}
    unsigned cpu() const override { return 1; }
    int task() const override { return 1; }
    std::uint64_t pc() const override { return pc_; }
    void setPc(std::uint64_t pc) override { pc_ = pc; }
    std::uint64_t sp() const override { return sp_; }
    void setSp(std::uint64_t sp) override { sp_ = sp; }
    std::uint64_t reg(int) const override { return 0; }
    void setReg(int, std::uint64_t) override {}
    bool readMemory(std::uint64_t, std::span<std::uint8_t> out) const override {
      std::fill(out.begin(), out.end(), 0);
      return true;
    }
    bool writeMemory(std::uint64_t, std::span<const std::uint8_t> bytes) override {
      pushed_ = 0;
      for (std::size_t i = 0; i < bytes.size() && i < 8; ++i)
        pushed_ |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
      return true;
    }
    std::uint64_t pushed() const { return pushed_; }

  private:
    std::uint64_t pc_;
    std::uint64_t sp_ = 0x10000;
    std::uint64_t pushed_ = 0;
  };

  sim::StoreModel store_;
  ProtocolTrace &trace_;
  arch::TrapHandler handler_;
};

} // namespace

std::size_t ProtocolTrace::syncs() const {
  std::size_t n = 0;
  for (const auto &step : steps)
    n += step.kind == TraceStep::Kind::Sync;
  return n;
}

arch::Bytes ProtocolTrace::siteAt(std::size_t k, std::size_t s) const {
  arch::Bytes bytes = requests[s].oldBytes;
  std::size_t stored = 0;
  for (const auto &step : steps) {
    if (step.kind != TraceStep::Kind::Store)
      continue;
    if (stored++ == k)
      break;
    for (std::size_t i = 0; i < step.bytes.size(); ++i) {
      const std::uint64_t a = step.addr + i;
      if (a >= requests[s].addr && a < requests[s].addr + bytes.size())
        bytes[a - requests[s].addr] = step.bytes[i];
    }
  }
  return bytes;
}

ProtocolTrace traceProtocol(const arch::Arch &arch, std::string_view protocol,
                            sim::StoreModel store,
                            const std::vector<arch::PatchRequest> &requests) {
  ProtocolTrace trace;
  trace.requests = requests;
  RecordingPort port(store, trace);
  for (const auto &r : requests)
    for (std::size_t i = 0; i < r.oldBytes.size(); ++i)
      port.text[r.addr + i] = r.oldBytes[i];
  auto proto = arch::makePatchProtocol(arch, protocol);
  proto->attach(port);
  port.addPoint(0, false);
  for (const auto &r : requests)
    proto->queue(r);
  proto->finish();
  return trace;
}

} // namespace ftsim::verify
