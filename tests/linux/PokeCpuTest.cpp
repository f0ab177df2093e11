// The tree's own text_poke_queue()/text_poke_finish() on the patcher's CPU alone (PokeCpu.h): the
// stores and syncs it makes, in order, for batches of one and two sites.

#include "LinuxTestSupport.h"

#include "ftsim/linux/PokeCpu.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

namespace ftsim::linuxk {
namespace {

using test::guest612;

constexpr std::uint64_t kStack = 0xffffc90000000000ull;

struct BatchRun {
  OwnedMemory mem;
  std::vector<std::string> actions;
  PokeOutcome outcome;
  unsigned shared = 0;
};

std::uint8_t *hostAt(OwnedMemory &mem, std::uint64_t addr) {
  for (HostRegion &r : mem.regions)
    if (addr - r.base < r.size)
      return r.host + (addr - r.base);
  return nullptr;
}

arch::Bytes callTo(std::uint64_t from, std::uint64_t to) {
  const auto rel = static_cast<std::int32_t>(to - (from + 5));
  arch::Bytes b{0xe8, 0, 0, 0, 0};
  std::memcpy(b.data() + 1, &rel, 4);
  return b;
}

const arch::Bytes kNop5{0x0f, 0x1f, 0x44, 0x00, 0x00};

// Sites start as nops (what ftrace_init makes of them); the batch turns them into calls.
BatchRun runBatch(std::size_t sites) {
  const LinuxGuest &g = guest612();
  BatchRun run{copyImageMemory(g.image, kStack, 64 * 1024), {}, {}, 0};
  std::vector<PokeRequest> requests;
  for (std::size_t i = 0; i < sites; ++i) {
    const std::uint64_t site = g.image.mcountLocs[i];
    std::memcpy(hostAt(run.mem, site), kNop5.data(), 5);
    requests.push_back({site, callTo(site, g.symbol("ftsim_tracer"))});
  }
  std::sort(requests.begin(), requests.end(),
            [](const PokeRequest &a, const PokeRequest &b) { return a.addr < b.addr; });
  PokeCpu cpu(g, run.mem.regions, run.mem.stack);
  PokeHooks hooks;
  hooks.textWrite = [&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
    std::string text = fmt::format("store {:#x}", addr);
    for (std::uint8_t b : bytes)
      text += fmt::format(" {:02x}", b);
    run.actions.push_back(text);
    std::memcpy(hostAt(run.mem, addr), bytes.data(), bytes.size());
  };
  hooks.syncCores = [&] { run.actions.push_back("sync"); };
  hooks.sharedAccess = [&](std::uint64_t, unsigned, bool) { ++run.shared; };
  run.outcome = cpu.runBatch(requests, hooks);
  return run;
}

TEST(PokeCpu, OneSiteIsInt3ThenTailThenFirstByteEachFollowedByASync) {
  const LinuxGuest &g = guest612();
  BatchRun run = runBatch(1);
  ASSERT_TRUE(run.outcome.finished)
      << run.outcome.finding << " at " << sourceLine(g, run.outcome.pc);
  const std::uint64_t site = g.image.mcountLocs[0];
  const arch::Bytes call = callTo(site, g.symbol("ftsim_tracer"));
  std::vector<std::string> expected{fmt::format("store {:#x} cc", site),
                                    "sync",
                                    fmt::format("store {:#x} {:02x} {:02x} {:02x} {:02x}", site + 1,
                                                call[1], call[2], call[3], call[4]),
                                    "sync",
                                    fmt::format("store {:#x} e8", site),
                                    "sync"};
  EXPECT_EQ(run.actions, expected);
  EXPECT_EQ(arch::Bytes(hostAt(run.mem, site), hostAt(run.mem, site) + 5), call);
  // bp_desc and tp_vec were reached through the shared pages.
  EXPECT_GT(run.shared, 5u);
  EXPECT_TRUE(run.outcome.warnings.empty());
}

TEST(PokeCpu, TwoSitesShareEachPhase) {
  const LinuxGuest &g = guest612();
  BatchRun run = runBatch(2);
  ASSERT_TRUE(run.outcome.finished) << run.outcome.finding;
  ASSERT_EQ(run.actions.size(), 9u) << fmt::format("{}", fmt::join(run.actions, "\n"));
  EXPECT_EQ(run.actions[2], "sync");
  EXPECT_EQ(run.actions[5], "sync");
  EXPECT_EQ(run.actions[8], "sync");
  EXPECT_NE(run.actions[0].find(" cc"), std::string::npos);
  EXPECT_NE(run.actions[1].find(" cc"), std::string::npos);
  EXPECT_NE(run.actions[6].find(" e8"), std::string::npos);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::uint64_t site = g.image.mcountLocs[i];
    EXPECT_EQ(arch::Bytes(hostAt(run.mem, site), hostAt(run.mem, site) + 5),
              callTo(site, g.symbol("ftsim_tracer")));
  }
}

TEST(PokeCpu, AnOpcodeThatIsNotAnInstructionIsTheTreesBug) {
  // text_poke_loc_init() decodes the new instruction and BUG()s when it is not one it can emulate.
  const LinuxGuest &g = guest612();
  OwnedMemory mem = copyImageMemory(g.image, kStack, 64 * 1024);
  PokeCpu cpu(g, mem.regions, mem.stack);
  const std::uint64_t site = g.image.mcountLocs[0];
  std::vector<PokeRequest> requests{{site, {0x0f, 0x0b, 0x90, 0x90, 0x90}}};
  PokeOutcome out = cpu.runBatch(requests, {});
  EXPECT_FALSE(out.finished);
  EXPECT_NE(out.finding.find("BUG at arch/x86/kernel/alternative.c:"), std::string::npos)
      << out.finding;
}

} // namespace
} // namespace ftsim::linuxk
