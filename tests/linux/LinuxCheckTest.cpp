// The harness kind "linux" end to end: the 6.12 tree's own text_poke_queue/text_poke_finish and
// poke_int3_handler on the machine, explored exhaustively (LinuxHarness.h).

#include "LinuxTestSupport.h"

#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/CheckRequest.h"
#include "ftsim/verify/harness/LinuxHarness.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ftsim::verify {
namespace {

Scenario linuxScenario(unsigned sites, const std::string &fetch) {
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  CheckRequest r;
  r.kernel = "6.12";
  r.sites = sites;
  r.fetch = fetch;
  r.store = "byte";
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
  // Not vacuous: with the site an int3 while the workload runs, some schedule enters the tree's
  // poke_int3_handler and returns through its emulation.
  Scenario s = linuxScenario(1, "atomic");
  LinuxHarness h(s);
  bool entered = false;
  for (unsigned seed = 0; seed < 50 && !entered; ++seed) {
    sim::RandomScheduler random(seed);
    h.runExecution(random);
    for (const sim::EventRecord &e : h.machine().events())
      entered = entered || e.pc == h.guest().symbol("poke_int3_handler");
  }
  EXPECT_TRUE(entered);
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
