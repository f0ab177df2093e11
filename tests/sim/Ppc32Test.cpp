// 32-bit big-endian powerpc executes: a tw trap reaches the installed handler, which changes a
// register and resumes past the trap; without a handler the same trap is a recorded guest fault.

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <algorithm>

namespace ftsim::sim {
namespace {

constexpr std::uint64_t kText = 0xc0000000;
constexpr std::uint64_t kHcExit = kText;
constexpr std::uint64_t kEntry = kText + 0x40;
constexpr std::uint64_t kTrap = kEntry + 4;

void build(Machine &m) {
  std::vector<std::uint8_t> text(0x100, 0);
  auto put = [&](std::uint64_t at, std::vector<std::uint8_t> bytes) {
    std::copy(bytes.begin(), bytes.end(), text.begin() + (at - kText));
  };
  put(kHcExit, {0x7f, 0xe0, 0x00, 0x08, 0x4e, 0x80, 0x00, 0x20}); // tw 31,0,0; blr
  put(kEntry, {
                  0x7c, 0x63, 0x1a, 0x14, // add r3,r3,r3
                  0x7f, 0xe0, 0x00, 0x08, // tw 31,0,0
                  0x38, 0x63, 0x00, 0x01, // addi r3,r3,1
                  0x4e, 0x80, 0x00, 0x20, // blr (to ftsim_hc_exit through lr)
              });
  m.mapText(kText, text);
  m.bindHypercall(GuestHypercall::Exit, kHcExit);
  m.addTask({"t", 1, kEntry, 20});
}

TEST(Ppc32, TrapReachesTheHandlerWhichResumesPastIt) {
  Machine m(arch::archByName("ppc32"), {});
  build(m);
  std::vector<std::uint64_t> seen;
  m.setTrapHandler([&](arch::GuestContext &ctx, std::uint64_t at) {
    seen.push_back(at);
    EXPECT_EQ(ctx.cpu(), 1u);
    ctx.setReg(UC_PPC_REG_3, ctx.reg(UC_PPC_REG_3) + 100);
    ctx.setPc(at + 4);
    return arch::TrapVerdict::Handled;
  });
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_EQ(seen, std::vector<std::uint64_t>{kTrap});
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(m.task(0).state, TaskState::Exited);
  EXPECT_EQ(m.task(0).result, 20u + 20u + 100u + 1u);
}

TEST(Ppc32, UnownedTrapIsAGuestFault) {
  Machine m(arch::archByName("ppc32"), {});
  build(m);
  m.setTrapHandler([](arch::GuestContext &, std::uint64_t) { return arch::TrapVerdict::NotMine; });
  RoundRobinScheduler rr;
  m.run(rr);
  ASSERT_EQ(m.findings().size(), 1u);
  const Finding &f = m.findings()[0];
  EXPECT_EQ(f.kind, FindingKind::GuestFault);
  EXPECT_EQ(f.pc, kTrap);
  EXPECT_EQ(f.bytes, (arch::Bytes{0x7f, 0xe0, 0x00, 0x08}));
  EXPECT_EQ(f.decoded, arch::describeBytes(arch::archByName("ppc32"), f.bytes, kTrap));
  EXPECT_FALSE(f.decoded.empty());
  EXPECT_EQ(m.task(0).state, TaskState::Faulted);
}

TEST(Ppc32, PatchedSiteIsFetchedWhole) {
  // A word store of `bl` over the nop at an aligned site is one store: never torn.
  Machine m(arch::archByName("ppc32"), {});
  build(m);
  const std::uint64_t site = kEntry + 8; // the addi
  const arch::Bytes addi{0x38, 0x63, 0x00, 0x01}, addi2{0x38, 0x63, 0x00, 0x02};
  m.watchSite(site, 4, {addi, addi2});
  m.setTrapHandler([](arch::GuestContext &ctx, std::uint64_t at) {
    ctx.setPc(at + 4);
    return arch::TrapVerdict::Handled;
  });
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(site, addi2); });
  RoundRobinScheduler rr;
  m.run(rr);
  auto events = m.events();
  auto stores = std::count_if(events.begin(), events.end(),
                              [](const EventRecord &e) { return e.kind == EventKind::Store; });
  EXPECT_EQ(stores, 1);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  std::uint64_t r = m.task(0).result;
  EXPECT_TRUE(r == 41u || r == 42u) << r;
}

} // namespace
} // namespace ftsim::sim
