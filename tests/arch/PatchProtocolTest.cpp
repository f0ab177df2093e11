// The patch protocols against a recording machine port: the order of stores and syncs each
// protocol makes, the byte states a site passes through, and what the int3 handler does.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/ForwardingPort.h"
#include "ftsim/arch/StoppedPort.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace ftsim;
using namespace ftsim::arch;

namespace {

// A stopped machine: text in a map, every operation appended to a timeline.
class RecordingPort final : public ByteMapPort {
public:
  std::vector<std::string> timeline;
  TrapHandler trapHandler;
  std::size_t syncs = 0;

  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    ByteMapPort::writeText(addr, bytes);
    timeline.push_back(fmt::format("store {:#x} {}", addr, hexBytes(bytes)));
    return true;
  }
  void syncCores() override {
    ++syncs;
    timeline.push_back("sync");
  }
  void publish(std::string_view what, const std::function<void()> &write) override {
    timeline.push_back(std::string("publish ") + std::string(what));
    write();
  }
  void setTrapHandler(TrapHandler handler) override { trapHandler = std::move(handler); }

  Bytes bytesAt(std::uint64_t addr, std::size_t n) {
    Bytes out(n);
    readText(addr, out);
    return out;
  }
};

class FakeContext final : public GuestContext {
public:
  std::uint64_t pcValue = 0, spValue = 0x8000;
  std::map<std::uint64_t, std::uint8_t> memory;
  unsigned cpu() const override { return 1; }
  int task() const override { return 1; }
  std::uint64_t pc() const override { return pcValue; }
  void setPc(std::uint64_t pc) override { pcValue = pc; }
  std::uint64_t sp() const override { return spValue; }
  void setSp(std::uint64_t sp) override { spValue = sp; }
  std::uint64_t reg(int) const override { return 0; }
  void setReg(int, std::uint64_t) override {}
  bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const override {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = memory.count(addr + i) ? memory.at(addr + i) : 0;
    return true;
  }
  bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    for (std::size_t i = 0; i < bytes.size(); ++i)
      memory[addr + i] = bytes[i];
    return true;
  }
};

// Forwards to a RecordingPort and runs a probe when the patcher enters its first sync.
class SyncHookPort final : public ForwardingPort {
public:
  SyncHookPort(RecordingPort &inner, std::function<void()> onFirstSync)
      : ForwardingPort(inner), onFirstSync_(std::move(onFirstSync)) {}
  void syncCores() override {
    if (syncs_++ == 0)
      onFirstSync_();
    inner().syncCores();
  }

private:
  std::function<void()> onFirstSync_;
  std::size_t syncs_ = 0;
};

constexpr std::uint64_t kSchedule = 0xffffffff810f45f4; // the slides' schedule() site
constexpr std::uint64_t kFtraceCaller = 0xffffffff810f7430;

PatchRequest nopToCall(const Arch &arch, RecordingPort &port, std::uint64_t site) {
  const Bytes nop = arch.nop();
  for (std::size_t i = 0; i < nop.size(); ++i)
    port.text[site + i] = nop[i];
  return {site, nop, arch.call(site, kFtraceCaller).bytes};
}

} // namespace

// The slides' walk-through: 0f 1f 44 00 00 -> cc 1f 44 00 00 -> cc 37 2e 00 00 -> e8 37 2e 00 00,
// with a sync between every two states.
TEST(X86Int3Protocol, BreakpointWalkThroughOfTheSlides) {
  const Arch &arch = archByName("x86_64");
  RecordingPort port;
  auto proto = makePatchProtocol(arch, "int3");
  proto->attach(port);
  const PatchRequest req = nopToCall(arch, port, kSchedule);
  EXPECT_EQ(hexBytes(req.newBytes), "e8 37 2e 00 00");

  proto->pokeNow(req);
  // Replay the timeline on a copy to list every intermediate state.
  std::map<std::uint64_t, std::uint8_t> text;
  for (std::size_t i = 0; i < 5; ++i)
    text[kSchedule + i] = req.oldBytes[i];
  std::vector<std::string> seen{hexBytes(req.oldBytes)};
  for (const auto &event : port.timeline) {
    if (event.rfind("store ", 0) != 0)
      continue;
    std::istringstream in(event.substr(6));
    std::string addrText;
    in >> addrText;
    std::uint64_t addr = std::stoull(addrText, nullptr, 16);
    for (std::string b; in >> b;)
      text[addr++] = static_cast<std::uint8_t>(std::stoul(b, nullptr, 16));
    Bytes now;
    for (std::size_t i = 0; i < 5; ++i)
      now.push_back(text[kSchedule + i]);
    seen.push_back(hexBytes(now));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0f 1f 44 00 00", "cc 1f 44 00 00", "cc 37 2e 00 00",
                                            "e8 37 2e 00 00"}));
  EXPECT_EQ(port.timeline, (std::vector<std::string>{
                               "publish bp_desc.vec", "store 0xffffffff810f45f4 cc", "sync",
                               "store 0xffffffff810f45f5 37 2e 00 00", "sync",
                               "store 0xffffffff810f45f4 e8", "sync", "publish bp_desc.vec=NULL"}));
  // Every intermediate state decodes to the old nop, the new call, or starts with the trap.
  for (const auto &s : seen)
    EXPECT_TRUE(s == "0f 1f 44 00 00" || s == "e8 37 2e 00 00" || s.rfind("cc", 0) == 0) << s;
}

TEST(X86Int3Protocol, EnablingManySitesCostsThreeSyncsNotThreePerSite) {
  const Arch &arch = archByName("x86_64");
  RecordingPort port;
  auto proto = makePatchProtocol(arch, "int3");
  proto->attach(port);
  for (int i = 0; i < 100; ++i)
    proto->queue(nopToCall(arch, port, 0xffffffff81000000 + 32 * i));
  proto->finish();
  EXPECT_EQ(port.syncs, 3u);
  EXPECT_EQ(proto->stats().batches, 1u);
  EXPECT_EQ(proto->stats().sites, 100u);
  // 300 sites: two full vectors of 256 would be needed beyond 256 -> 2 batches, 6 syncs.
  RecordingPort port2;
  auto proto2 = makePatchProtocol(arch, "int3");
  proto2->attach(port2);
  for (int i = 0; i < 300; ++i)
    proto2->queue(nopToCall(arch, port2, 0xffffffff81000000 + 32 * i));
  proto2->finish();
  EXPECT_EQ(proto2->stats().batches, 2u);
  EXPECT_EQ(port2.syncs, 6u);
}

TEST(X86Int3Protocol, OutsideABatchAnInt3IsNotTheHandlers) {
  const Arch &arch = archByName("x86_64");
  RecordingPort port;
  auto proto = makePatchProtocol(arch, "int3");
  proto->attach(port);
  proto->queue(nopToCall(arch, port, kSchedule));
  FakeContext early; // queued, not yet flushed: no vector is published
  EXPECT_EQ(port.trapHandler(early, kSchedule), TrapVerdict::NotMine);
  proto->finish();
  FakeContext late; // flushed: the vector is withdrawn again
  EXPECT_EQ(port.trapHandler(late, kSchedule), TrapVerdict::NotMine);
  EXPECT_EQ(early.pcValue, 0u);
  EXPECT_EQ(late.pcValue, 0u);
}

TEST(X86Int3Protocol, SkipVariantJumpsOverTheSiteTodaysEmulatesTheCall) {
  const Arch &arch = archByName("x86_64");
  for (const char *name : {"int3", "int3-skip"}) {
    RecordingPort port;
    auto proto = makePatchProtocol(arch, name);
    const PatchRequest req = nopToCall(arch, port, kSchedule);
    // A CPU traps on the int3 while the patcher waits in its first sync.
    FakeContext ctx;
    TrapVerdict verdict = TrapVerdict::NotMine;
    SyncHookPort hook(port, [&] {
      ctx.pcValue = kSchedule + 1;
      verdict = port.trapHandler(ctx, kSchedule);
    });
    proto->attach(hook);
    proto->pokeNow(req);
    ASSERT_EQ(verdict, TrapVerdict::Handled) << name;
    if (std::string(name) == "int3") {
      EXPECT_EQ(ctx.pcValue, kFtraceCaller);
      EXPECT_EQ(ctx.spValue, 0x8000u - 8);
      Bytes ret(8);
      ctx.readMemory(ctx.spValue, ret);
      EXPECT_EQ(hexBytes(ret), hexBytes(Bytes{0xf9, 0x45, 0x0f, 0x81, 0xff, 0xff, 0xff, 0xff}));
    } else {
      // Pre-2019: the call is skipped as if the site were a nop: ftrace_caller never runs.
      EXPECT_EQ(ctx.pcValue, kSchedule + 5);
      EXPECT_EQ(ctx.spValue, 0x8000u);
    }
  }
}

TEST(X86Int3Protocol, DirectWritesPlainBytesAndUnknownNamesAreFatal) {
  const Arch &arch = archByName("x86_64");
  RecordingPort port;
  auto proto = makePatchProtocol(arch, "direct");
  proto->attach(port);
  proto->pokeNow(nopToCall(arch, port, kSchedule));
  EXPECT_EQ(port.timeline,
            (std::vector<std::string>{"store 0xffffffff810f45f4 e8 37 2e 00 00", "sync"}));
  EXPECT_THROW(makePatchProtocol(arch, "int4"), FatalError);
  EXPECT_THROW(makePatchProtocol(archByName("ppc32"), "int3"), FatalError);
}

TEST(PatchProtocols, EveryVariantNamesItsOneDifference) {
  for (const Arch *arch : {&archByName("x86_64"), &archByName("ppc32")}) {
    const auto infos = protocolsFor(*arch);
    ASSERT_FALSE(infos.empty());
    EXPECT_TRUE(infos.front().correct);
    EXPECT_TRUE(infos.front().difference.empty());
    // Every broken variant documents its one difference (a second correct protocol may exist for
    // another site flavour, e.g. ppc32's mflr-restoring one, and describe what it is for).
    for (const auto &info : infos)
      EXPECT_TRUE(info.correct || !info.difference.empty()) << info.name;
  }
  EXPECT_GE(protocolsFor(archByName("x86_64")).size(), 10u);
}
