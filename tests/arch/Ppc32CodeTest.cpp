// ppc32 words ftrace writes beyond one bl: the long-branch stub (round trip over targets that
// exercise the @ha carry), the patch class, and the registered two-instruction protocols.

#include "ppc32/Ppc32Code.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/StoppedPort.h"
#include "ppc32/Ppc32Cmodx.h"
#include "ppc32/Ppc32Protocols.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ftsim::arch {
namespace {

TEST(Ppc32Code, LongBranchStubRoundTripsAndDecodesAsModule32Builds) {
  for (std::uint64_t target :
       {0xc0000000ull, 0xc0008000ull, 0xc0007ffcull, 0xbfff8004ull, 0x4ull, 0xfffffffcull}) {
    const EncodeResult stub = ppc32::longBranchStub(target);
    ASSERT_TRUE(stub.ok);
    ASSERT_EQ(stub.bytes.size(), ppc32::kLongBranchStubSize);
    EXPECT_EQ(ppc32::longBranchTarget(stub.bytes), std::optional<std::uint64_t>(target));
  }
  // lis r12,-16384; addi r12,r12,0; mtctr r12; bctr (what the module's PLT entry holds)
  EXPECT_EQ(hexBytes(ppc32::longBranchStub(0xc0000000).bytes),
            "3d 80 c0 00 39 8c 00 00 7d 89 03 a6 4e 80 04 20");
  EXPECT_FALSE(ppc32::longBranchStub(0xc0000002).ok);
  EXPECT_FALSE(ppc32::longBranchTarget(Bytes(16, 0)));
}

TEST(Ppc32Code, PatchClassIsBranchesAndTheNop) {
  const Arch &ppc = archByName("ppc32");
  EXPECT_TRUE(ppc32::isPatchClass(ppc32::kNop));
  EXPECT_TRUE(ppc32::isPatchClass(ppc32::wordOf(ppc.call(0xc0000000, 0xc0001000).bytes)));
  EXPECT_TRUE(ppc32::isPatchClass(ppc32::kBranchOver8));
  EXPECT_FALSE(ppc32::isPatchClass(ppc32::kMflrR0));
  EXPECT_FALSE(ppc32::isPatchClass(ppc32::kRestoreR30));
  EXPECT_FALSE(ppc32::isPatchClass(0x7fe00008)); // trap
  EXPECT_FALSE(ppc32::isBl(ppc32::kBranchOver8));
  // Out of reach is an error, never a truncated LI.
  EXPECT_FALSE(ppc.call(0xb0000030, 0xc0000000).ok);
}

TEST(Ppc32Code, TwoInstructionProtocolsAreRegisteredWithOneDifferenceEach) {
  const Arch &ppc = archByName("ppc32");
  std::vector<std::string> names;
  for (const ProtocolInfo &p : protocolsFor(ppc)) {
    names.push_back(p.name);
    EXPECT_FALSE(p.difference.empty() && p.name != "patch-instruction") << p.name;
    EXPECT_EQ(p.correct, p.name == "patch-instruction" || p.name == "patch-instruction-ipi" ||
                             p.name == "word-mflr")
        << p.name;
  }
  for (const char *n : {"word-mflr", "word-mflr-wrong-order", "word-mflr-no-grace"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_TRUE(patchesMflrSlot(*makePatchProtocol(ppc, n)));
  }
  EXPECT_FALSE(patchesMflrSlot(*makePatchProtocol(ppc, "patch-instruction")));
  // Linux's protocol is the table's first entry: what check and the kernel use by default.
  EXPECT_EQ(protocolsFor(ppc).front().name, "patch-instruction");
}

TEST(Ppc32Code, TocSiteDisableVariants) {
  const auto fix = ppc32::tocSiteDisable(0xb000004c, 0x4bffffb5, ppc32::TocSiteDisable::BranchOver);
  ASSERT_EQ(fix.size(), 1u);
  EXPECT_EQ(ppc32::wordOf(fix[0].newBytes), 0x48000008u);
  const auto old = ppc32::tocSiteDisable(0xb000004c, 0x4bffffb5, ppc32::TocSiteDisable::NopBoth);
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[1].addr, 0xb0000050u);
  EXPECT_EQ(ppc32::wordOf(old[1].oldBytes), ppc32::kRestoreR30);
}

// Text as a flat map of bytes: every store lands at once (the rule's own view of time).
class FlatText final : public ByteMapPort {
public:
  void freeText(std::uint64_t, std::size_t) override { ++frees; }
  int frees = 0;
};

// CMODX rule 3: freeing the text an overwritten bl reached is a violation until every other CPU
// context-synchronised (an IPI or schedule_on_each_cpu(), as ftrace_shutdown()'s
// synchronize_rcu_tasks_rude() gives); an RCU-tasks grace period alone does not count. Linux's
// protocol stores and returns without an IPI, and is not a violation by itself.
TEST(Ppc32Cmodx, FreeingWhatAStaleBranchReachesNeedsEveryCpuSynchronised) {
  const Arch &ppc = archByName("ppc32");
  constexpr std::uint64_t kSite = 0xc0001008, kTramp = 0xbfdf0000;
  for (const char *wait : {"none", "rcu-tasks", "schedule_on_each_cpu", "ipi"}) {
    SCOPED_TRACE(wait);
    FlatText text;
    text.writeText(kSite, ppc32::wordBytes(ppc32::kNop));
    CmodxCheckedPort rule(text);
    auto protocol = makePatchProtocol(ppc, "patch-instruction");
    protocol->attach(rule);
    const Bytes call = ppc.call(kSite, kTramp).bytes;
    protocol->pokeNow({kSite, ppc32::wordBytes(ppc32::kNop), call});
    protocol->pokeNow({kSite, call, ppc32::wordBytes(ppc32::kNop)});
    EXPECT_TRUE(rule.violations().empty()); // the stores alone are fine
    if (std::string(wait) == "rcu-tasks")
      rule.synchronizeRcuTasks();
    else if (std::string(wait) == "schedule_on_each_cpu")
      rule.scheduleOnEachCpu();
    else if (std::string(wait) == "ipi")
      rule.syncCores();
    rule.freeText(kTramp, 0xb0);
    EXPECT_EQ(text.frees, 1); // forwarded either way
    const bool synchronised =
        std::string(wait) == "schedule_on_each_cpu" || std::string(wait) == "ipi";
    ASSERT_EQ(rule.violations().size(), synchronised ? 0u : 1u);
    if (!synchronised) {
      EXPECT_NE(rule.violations().front().reason.find("freed while a CPU may still execute"),
                std::string::npos)
          << rule.violations().front().reason;
    }
  }
}

} // namespace
} // namespace ftsim::arch
