// ppc-module-tramp-toc (f48cb8b48b0b) on site-level scenarios: module call sites that keep a TOC
// (`code.module_toc`, ppc64 ELFv1's `bl <stub>; ld r2,40(r1)` modelled on ppc32 as
// `bl <trampoline>; lwz r2,12(r1)`). Disabled with a plain nop, the reload still runs and the
// worker's result (which adds r2 after every call) differs from the untraced reference; disabled
// with `b +8`, the reload is skipped and every schedule is transparent. The key is refused with a
// one-line error where it cannot be modelled.

#include "Corpus.h"
#include "FatalMessage.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <gtest/gtest.h>

namespace ftsim::verify {
namespace {

using test::corpusScenario;

ExploreResult exhaustive(const Scenario &s) {
  SiteHarness harness(s);
  ExploreOptions o;
  o.stopAtFirst = false;
  return explore(harness, o);
}

std::uint32_t wordAt(SiteHarness &h, std::uint64_t addr) {
  arch::Bytes b(4);
  h.machine().readText(addr, b);
  return std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3];
}

TEST(ModuleToc, SitesAreABlFollowedByTheTocReloadAndDisableAsThePublishedWords) {
  SiteHarness buggy(corpusScenario("ppc-module-tramp-toc"));
  SiteHarness fixed(corpusScenario("ppc-module-tramp-toc-fixed"));
  for (SiteHarness *h : {&buggy, &fixed}) {
    const PatchSiteInfo &site = h->sites().at(0);
    EXPECT_EQ(site.oldBytes[0] >> 2, 18u) << "a bl"; // opcode 18, LK = 1
    EXPECT_EQ(wordAt(*h, site.addr + 4), 0x8041000cu) << "lwz r2,12(r1) after the site";
  }
  EXPECT_EQ(buggy.sites()[0].newBytes, (arch::Bytes{0x60, 0x00, 0x00, 0x00})); // nop
  EXPECT_EQ(fixed.sites()[0].newBytes, (arch::Bytes{0x48, 0x00, 0x00, 0x08})); // b +8
}

TEST(ModuleToc, ANopOverTheBlLeavesTheReloadRunningAndTheResultDiffers) {
  const Scenario s = corpusScenario("ppc-module-tramp-toc");
  const ExploreResult r = exhaustive(s);
  ASSERT_TRUE(r.counterexample);
  EXPECT_EQ(r.counterexample->violation.oracle, "transparency");
  EXPECT_TRUE(r.stats.complete);
  EXPECT_EQ(s.expectVerdict, "violation");
}

TEST(ModuleToc, ABranchOverTheReloadIsTransparentInEverySchedule) {
  const Scenario s = corpusScenario("ppc-module-tramp-toc-fixed");
  const ExploreResult r = exhaustive(s);
  EXPECT_FALSE(r.counterexample) << formatViolation(r.counterexample->violation);
  EXPECT_TRUE(r.stats.complete);
  EXPECT_GE(r.stats.executions, 2u);
  EXPECT_EQ(s.expectVerdict, "verified");
}

// The violation needs the module site: the same call-to-nop without module_toc (no reload after
// the site, no TOC in the result) is transparent.
TEST(ModuleToc, WithoutModuleSitesTheNopIsTransparent) {
  Scenario s = corpusScenario("ppc-module-tramp-toc");
  s.moduleToc = Scenario::ModuleToc::None;
  EXPECT_FALSE(exhaustive(s).counterexample);
}

TEST(ModuleToc, TheKeyRoundTripsAndIsRefusedWhereItCannotBeModelled) {
  Scenario s = corpusScenario("ppc-module-tramp-toc-fixed");
  EXPECT_EQ(parseScenario(s.toToml(), "round-trip"), s);
  EXPECT_NE(s.describe().find("module TOC sites, disabled as b +8"), std::string::npos);
  const std::pair<const char *, const char *> cases[] = {
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[code]\nmodule_toc = \"nop\"\n",
       "module_toc: x86_64 has no module TOC sites to model"},
      {"arch = \"ppc32\"\nprotocol = \"patch-instruction\"\nstore = \"word\"\n[code]\n"
       "module_toc = \"maybe\"\n",
       "code.module_toc = 'maybe' (known: nop, skip)"},
      {"arch = \"ppc32\"\nprotocol = \"patch-instruction\"\nstore = \"word\"\nlinux = \"6.12\"\n"
       "[code]\nmodule_toc = \"skip\"\n",
       "module_toc: ppc64 ELFv1's module TOC sites modelled on ppc32"},
  };
  for (const auto &[text, expected] : cases) {
    const std::string &source = text;
    test::expectOneLineRefusal(
        "bad.toml", [&] { parseScenario(source, "bad.toml").validate("bad.toml"); }, expected);
  }
}

} // namespace
} // namespace ftsim::verify
