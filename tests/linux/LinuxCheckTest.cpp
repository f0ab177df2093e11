// The harness kind "linux" end to end: the 6.12 tree's own text_poke_queue/text_poke_finish and
// poke_int3_handler on the machine, explored exhaustively (LinuxHarness.h).

#include "LinuxTestSupport.h"

#include "Corpus.h"
#include "ftsim/arch/Error.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/harness/LinuxHarness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace ftsim::verify {
namespace {

Scenario linuxScenario(unsigned sites, const std::string &fetch, bool foreignInt3 = false) {
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  CheckRequest r;
  r.kernel = "6.12";
  r.sites = sites;
  r.fetch = fetch;
  r.store = "byte";
  r.foreignInt3 = foreignInt3;
  return buildCheckScenario(r);
}

TEST(LinuxCheck, OneSiteOn612IsVerifiedUnderAtomicFetch) {
  Scenario s = linuxScenario(1, "atomic");
  LinuxHarness h(s);
  EXPECT_NE(h.describeSetup().find("Linux 6.12."), std::string::npos) << h.describeSetup();
  CheckReport r = check(h, exploreOptionsFor(s));
  ASSERT_FALSE(r.found) << formatCheck(h, r, "");
  EXPECT_EQ(r.verdict, Verdict::Verified) << formatCheck(h, r, "");
  EXPECT_GT(r.result.stats.executions, 1u);
}

TEST(LinuxCheck, TheWorkloadReachesTheHandlerInSomeExecution) {
  // Not vacuous: with the site an int3 while the workload runs, the task enters the tree's
  // poke_int3_handler and returns through its emulation. The schedule: the patcher runs until the
  // site holds its int3, then the task runs as far as it can.
  Scenario s = linuxScenario(1, "atomic");
  LinuxHarness h(s);
  const std::uint64_t site = h.sites().front().addr;
  sim::FunctionScheduler scheduler(
      [&](const sim::Machine &m, const sim::DecisionPoint &p) -> std::uint32_t {
        std::uint8_t first = 0;
        const_cast<sim::Machine &>(m).readText(site, {&first, 1});
        if (p.kind != sim::DecisionKind::Event)
          return p.options - 1;
        for (std::uint32_t i = 0; i < p.options; ++i)
          if ((p.events[i].cpu == 1) == (first == 0xcc))
            return i;
        return 0;
      });
  h.runExecution(scheduler);
  bool entered = false;
  for (const sim::EventRecord &e : h.machine().events())
    entered = entered || e.pc == h.guest().symbol("poke_int3_handler");
  EXPECT_TRUE(entered);
  EXPECT_TRUE(h.findings().empty());
  EXPECT_EQ(h.machine().task(0).result, h.referenceResults().front());
}

} // namespace
} // namespace ftsim::verify

namespace ftsim::verify {
namespace {

TEST(LinuxCheck, AMutantThatClearsTheVectorBeforeTheCountIsCaughtInTheHandler) {
  // 285a54efe386's order on a modern tree: bp_desc.vec = NULL while a handler holds a reference;
  // the handler dereferences the cleared vector (a guest fault inside poke_int3_handler). The
  // same mutant with no foreign int3 is verified: the batch's own int3s are all handled before
  // its final text_poke_sync(), whose IPI waits for the handler's iret.
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  CheckRequest req;
  req.kernel = "6.12";
  req.sites = 1;
  req.fetch = "atomic";
  req.store = "byte";
  req.mutant = "clear-vector-before-count";
  req.foreignInt3 = true; // the int3 the batch does not own (a kprobe), as in 285a54efe386
  Scenario s = buildCheckScenario(req);
  LinuxHarness h(s);
  EXPECT_NE(h.describeSetup().find("source mutant clear-vector-before-count"), std::string::npos);
  CheckReport r = check(h, exploreOptionsFor(s));
  ASSERT_TRUE(r.minimised) << formatCheck(h, r, "");
  EXPECT_EQ(r.verdict, Verdict::Violation);
  const Violation &v = r.minimised->violation;
  EXPECT_NE(h.symbol(v.pc).find("poke_int3_handler"), std::string::npos) << formatViolation(v);
  EXPECT_NE(v.message.find("read of unmapped memory at 0x0"), std::string::npos) << v.message;
  EXPECT_NE(h.symbol(v.pc).find("arch/x86/kernel/alternative.c:"), std::string::npos)
      << h.symbol(v.pc);
}

} // namespace
} // namespace ftsim::verify

namespace ftsim::verify {
namespace {

Scenario refcountScenario(const std::string &mutant) {
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  Scenario s;
  s.code = CodeKind::Linux;
  s.kernel = "6.12";
  s.mutant = mutant;
  s.cpus = 2;
  s.calls = 2;
  s.store = sim::StoreModel::Byte;
  s.fetch = &sim::fetchModelByName("atomic");
  s.sites = {Transition::NopToCall};
  s.foreignInt3 = true;
  s.batches = 2;
  s.bounds.preemptions = 2;
  s.name = "refcount-" + (mutant.empty() ? std::string("tree") : mutant);
  s.validate(s.name);
  return s;
}

TEST(LinuxCheck, WithoutTheRefcountWaitALateHandlerClobbersTheNextBatchsCount) {
  // Before 1f676247f36a no one waited for handlers: a kprobe's handler still holding a reference
  // when the next batch sets bp_desc.refs to 1 drops it to 0 with its put_desc(), and that
  // batch's own int3 is then declined (try_get_desc() fails): Linux dies. The tree waits, and
  // verifies under the same bounds.
  Scenario tree = refcountScenario("");
  LinuxHarness ht(tree);
  CheckReport rt = check(ht, exploreOptionsFor(tree));
  EXPECT_EQ(rt.verdict, Verdict::Verified) << formatCheck(ht, rt, "");
  EXPECT_NE(ht.describeSetup().find("2 batches back to back"), std::string::npos);

  Scenario s = refcountScenario("no-refcount-wait");
  LinuxHarness h(s);
  CheckReport r = check(h, exploreOptionsFor(s));
  ASSERT_TRUE(r.minimised) << formatCheck(h, r, "");
  ASSERT_FALSE(h.findings().empty());
  EXPECT_NE(h.findings().front().message.find("unhandled int3 at site0"), std::string::npos)
      << h.findings().front().message;
  EXPECT_NE(r.minimised->violation.message.find("declined by the kernel's own handler"),
            std::string::npos)
      << r.minimised->violation.message;
}

TEST(LinuxCheck, TwoSitesAndAKprobeUseAThirdTracedFunction) {
  Scenario s = linuxScenario(2, "atomic", true);
  LinuxHarness h(s);
  EXPECT_NE(h.describeSetup().find("2 traced functions and a kprobe-like int3"), std::string::npos)
      << h.describeSetup();
  // The task reaches the kprobe on traced_c, armed throughout: poke_int3_handler declines it,
  // the kprobe emulates its nop, and the task ends with the untraced result.
  sim::RoundRobinScheduler rr;
  h.runExecution(rr);
  bool entered = false, pastKprobe = false;
  for (const sim::EventRecord &e : h.machine().events()) {
    entered = entered || e.pc == h.guest().symbol("poke_int3_handler");
    pastKprobe = pastKprobe || h.symbol(e.pc).rfind("traced_c+0x5", 0) == 0;
  }
  EXPECT_TRUE(entered);
  EXPECT_TRUE(pastKprobe);
  EXPECT_TRUE(h.findings().empty());
  EXPECT_EQ(h.machine().task(0).result, h.referenceResults().front());
  Scenario three = s;
  three.sites.push_back(Transition::NopToCall);
  EXPECT_THROW(three.validate("three"), FatalError);
}

} // namespace
} // namespace ftsim::verify

namespace ftsim::verify {
namespace {

TEST(LinuxCheck, PublishedLinuxScenariosHaveTheirExpectedVerdict) {
  // Every corpora scenario of kind linux (int3-handler-null-vec, int3-handler-late-put and their
  // fixed variants): the verdict and oracle its file expects, on the tree it names.
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  unsigned files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(test::corpusDir("scenarios"))) {
    if (entry.path().extension() != ".toml")
      continue;
    Scenario s = loadScenarioFile(entry.path().string());
    if (s.code != CodeKind::Linux)
      continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(parseScenario(s.toToml(), "round-trip"), s);
    LinuxHarness h(s);
    CheckReport r = check(h, exploreOptionsFor(s));
    if (s.expectVerdict == "verified") {
      EXPECT_EQ(r.verdict, Verdict::Verified) << formatCheck(h, r, "");
    } else {
      ASSERT_TRUE(r.found) << formatCheck(h, r, "");
      EXPECT_EQ(r.found->violation.oracle, s.expectOracle);
    }
  }
  EXPECT_GE(files, 4u);
}

} // namespace
} // namespace ftsim::verify
