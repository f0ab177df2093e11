// Kernel profiles (model/LinuxProfile.h) on scenarios and on `ftsim check --linux`: the registry,
// the published scenarios' claimed profiles (each buggy variant on the release that had the bug),
// a claim the scenario's choices contradict, and --linux applied to a request.

#include "ftsim/model/LinuxProfile.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "Corpus.h"
#include "FatalMessage.h"

#include <gtest/gtest.h>

#include <map>

namespace ftsim::verify {
namespace {

using test::corpusScenario;
using test::corpusScenarioPath;

// What `ftsim check --scenario PATH --linux PROFILE` runs.
Scenario checkedWithLinux(const std::string &path, const std::string &profile) {
  CheckRequest r;
  r.scenarioFile = path;
  r.linuxProfile = profile;
  return buildCheckScenario(r);
}

using test::fatalMessage;

TEST(LinuxProfile, NewestIsTheDefaultAndEveryProtocolExists) {
  const auto &profiles = model::linuxProfiles();
  ASSERT_GE(profiles.size(), 2u);
  EXPECT_EQ(model::defaultLinuxProfile().name, "6.12");
  for (const model::LinuxProfile &p : profiles)
    for (const char *isa : {"x86_64", "ppc32"}) {
      const std::string protocol(model::profileProtocol(p, isa));
      bool found = false;
      for (const arch::ProtocolInfo &info : arch::protocolsFor(arch::archByName(isa)))
        found |= info.name == protocol && info.correct == (protocol != "int3-skip");
      EXPECT_TRUE(found) << p.name << " " << isa << " " << protocol;
    }
  // A 4.x profile: ftrace's own breakpoint code, whose int3 handler skips the call.
  EXPECT_EQ(model::linuxProfileByName("4.19").x86Protocol, "int3-skip");
  EXPECT_EQ(model::linuxProfileByName("6.1").x86Protocol, "int3");
  // powerpc: Linux's patch_instruction() without IPI since v4.6.
  EXPECT_EQ(model::linuxProfileByName("4.19").ppc32Protocol, "patch-instruction");
  const std::string bad = fatalMessage([] { model::linuxProfileByName("5.99"); });
  EXPECT_NE(bad.find("'5.99'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("6.12"), std::string::npos) << bad;
  EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;
}

// Every published buggy variant runs on the profile of a release that had the bug, every fixed
// one on a release with the fix; loading validates the claim against the file's choices.
TEST(LinuxProfile, PublishedScenariosClaimTheirReleases) {
  const std::map<std::string, std::string> claimed = {
      {"list-to-single-race", "3.13"},
      {"list-to-single-race-fixed", "6.12"},
      {"op-func-switch-race", "3.13"},
      {"op-func-switch-race-fixed", "6.12"},
      {"int3-skips-call", "4.19"},
      {"int3-skips-call-fixed", "6.12"},
      {"ops-uaf-no-sync", "4.19"},
      {"ops-uaf-no-sync-fixed", "6.12"},
      {"ppc32-ops-uaf-no-sync", "4.19"},
      {"ppc32-ops-uaf-no-sync-fixed", "6.12"},
      {"tramp-free-rcu-tasks", "6.12"},
      {"ppc32-tramp-free-rcu-tasks", "6.12"},
      {"ppc-word", "6.12"},
      // A race Linux 6.12 still has (the order 405e1d834807 left), and the ops kind it spares.
      {"op-func-residual-race", "6.12"},
      {"ppc32-op-func-residual-race", "6.12"},
      {"ppc32-op-func-residual-race-dynamic", "6.12"},
  };
  for (const auto &[name, profile] : claimed) {
    SCOPED_TRACE(name);
    const Scenario s = corpusScenario(name);
    EXPECT_EQ(s.linuxProfile, profile);
    EXPECT_NE(describeScenarioProfile(s).find("Linux " + profile + " "), std::string::npos)
        << describeScenarioProfile(s);
  }
}

TEST(LinuxProfile, AClaimTheChoicesContradictIsAOneLineError) {
  const std::string text = "name = 'x'\narch = \"x86_64\"\nprotocol = \"int3\"\n";
  const std::string why =
      fatalMessage([&] { parseScenario("linux = \"4.19\"\n" + text, "x.toml"); });
  EXPECT_NE(why.find("x.toml: linux = \"4.19\" but protocol int3 is not Linux 4.19's (int3-skip)"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  Scenario s = parseScenario(text, "x.toml");
  // Without a claim, check's line names the newest matching release, or why none is.
  EXPECT_EQ(describeScenarioProfile(s).rfind("Linux 6.12 ", 0), 0u) << describeScenarioProfile(s);
  s.protocol = "int3-nosync";
  EXPECT_EQ(describeScenarioProfile(s).rfind("no Linux release: protocol int3-nosync", 0), 0u)
      << describeScenarioProfile(s);
}

// 405e1d834807 is in v3.14: a 3.13 claim needs the early function_trace_op, a 6.12 one refuses it.
TEST(LinuxProfile, TheFunctionTraceOpClaimIsChecked) {
  const std::string path = corpusScenarioPath("op-func-switch-race");
  Scenario s = corpusScenario("op-func-switch-race");
  s.linuxProfile = "6.12";
  s.protocol = "int3";
  s.engine.pre59338f754a55 = false;
  const std::string why = fatalMessage([&] { s.validate("x.toml"); });
  EXPECT_NE(why.find("x.toml: linux = \"6.12\" but function_trace_op is set as before "
                     "405e1d834807, Linux 6.12's as after"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  s.engine.pre405e1d834807 = false;
  // x86_64 has had per-ops trampolines since v3.17: a 6.12 claim without them is another kernel.
  const std::string noTrampolines = fatalMessage([&] { s.validate("x.toml"); });
  EXPECT_NE(noTrampolines.find("x.toml: linux = \"6.12\" but no per-ops trampolines, which Linux "
                               "6.12 has on x86_64 (f3bea49115b2; ops_trampolines = true)"),
            std::string::npos)
      << noTrampolines;
  s.engine.opsTrampolines = true;
  s.validate("x.toml");
  s.linuxProfile = "3.13";
  s.protocol = "int3-skip";
  s.engine.pre59338f754a55 = true;
  s.engine.opsTrampolines = false;
  EXPECT_NE(fatalMessage([&] {
              s.validate("x.toml");
            }).find("function_trace_op is set as after 405e1d834807, Linux 3.13's as before"),
            std::string::npos);
  const Scenario applied = checkedWithLinux(path, "6.12");
  EXPECT_FALSE(applied.engine.pre405e1d834807);
  EXPECT_TRUE(applied.engine.opsTrampolines); // the release's, as its order and protocol are
}

// No powerpc release has per-ops trampolines: a ppc32 kernel scenario with them claims none.
TEST(LinuxProfile, Ppc32KernelScenariosHaveNoPerOpsTrampolines) {
  Scenario s = corpusScenario("ppc32-op-func-residual-race");
  s.engine.opsTrampolines = true;
  const std::string why = fatalMessage([&] { s.validate("x.toml"); });
  EXPECT_NE(why.find("x.toml: linux = \"6.12\" but per-ops trampolines, which Linux 6.12 does "
                     "not have on ppc32 (f3bea49115b2)"),
            std::string::npos)
      << why;
  EXPECT_FALSE(checkedWithLinux(corpusScenarioPath("ppc32-op-func-residual-race"), "6.12")
                   .engine.opsTrampolines);
}

// function_trace_op_wait is ftsim's hypothesis: no release claims it, and --linux refuses it.
TEST(LinuxProfile, TheGracePeriodHypothesisIsNoRelease) {
  Scenario s = corpusScenario("ppc32-op-func-residual-race-wait");
  EXPECT_EQ(describeScenarioProfile(s).rfind("no Linux release: function_trace_op_wait", 0), 0u)
      << describeScenarioProfile(s);
  s.linuxProfile = "6.12";
  EXPECT_NE(fatalMessage([&] {
              s.validate("x.toml");
            }).find("x.toml: linux = \"6.12\" but function_trace_op_wait"),
            std::string::npos);
  const std::string why = fatalMessage(
      [&] { checkedWithLinux(corpusScenarioPath("ppc32-op-func-residual-race-wait"), "6.12"); });
  EXPECT_NE(why.find("--linux 6.12: the scenario waits for grace periods"), std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(LinuxProfile, CheckLinuxAppliesOneReleaseThroughout) {
  CheckRequest r;
  r.trampScenario = "ops-uaf-no-sync";
  r.linuxProfile = "4.19";
  Scenario s = buildCheckScenario(r);
  EXPECT_EQ(s.protocol, "int3-skip");
  EXPECT_EQ(s.trampoline.free, "rcu-tasks");
  EXPECT_FALSE(s.trampoline.syncWhenUnchanged); // before 0e792b89e680
  r.linuxProfile = "6.1";
  s = buildCheckScenario(r);
  EXPECT_EQ(s.protocol, "int3");
  EXPECT_TRUE(s.trampoline.syncWhenUnchanged);
  // Per-ops trampolines do not exist in 3.13.
  r.linuxProfile = "3.13";
  EXPECT_NE(fatalMessage([&] { buildCheckScenario(r); }).find("f3bea49115b2"), std::string::npos);
  // A protocol the release did not have is refused, not silently replaced.
  CheckRequest site;
  site.arch = "ppc32";
  site.protocol = "word-mflr";
  site.linuxProfile = "6.12";
  EXPECT_NE(fatalMessage([&] { buildCheckScenario(site); })
                .find("--protocol word-mflr is not Linux 6.12's patch protocol on ppc32 "
                      "(patch-instruction)"),
            std::string::npos);
  site.protocol.reset();
  EXPECT_EQ(buildCheckScenario(site).protocol, "patch-instruction");
}

} // namespace
} // namespace ftsim::verify
