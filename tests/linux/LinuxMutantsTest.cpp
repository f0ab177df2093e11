// `ftsim mutants --kernel 6.12`: every source mutation operator of linux/kbuild/mutate applied to
// the 6.12 tree is killed by its scenario, each with a counterexample that names the guest
// instruction by the tree's (or the workload's) file and line, and the unmutated tree passes
// every one of those scenarios (LinuxMutants.h).

#include "ftsim/verify/check/LinuxMutants.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

namespace ftsim::verify {
namespace {

TEST(LinuxMutants, EveryOperatorIsKilledOn612WithItsGuestInstructionAndTheTreePasses) {
  ::setenv("FTSIM_LINUX_CACHE", FTSIM_LINUX_TEST_CACHE, 1);
  const auto operators = linuxMutationOperators();
  ASSERT_GE(operators.size(), 7u);
  const LinuxMutationScore score = runLinuxMutants("6.12", "");
  EXPECT_NE(score.tree.find("Linux 6.12."), std::string::npos) << score.tree;
  EXPECT_TRUE(score.treeSurvives);
  EXPECT_EQ(score.mutants, operators.size());
  EXPECT_EQ(score.killed, score.mutants);
  const std::regex fileLine(R"((linux/guest/workload\.c|arch/x86/kernel/alternative\.c):\d+)");
  for (const LinuxMutantResult &r : score.results) {
    if (r.op.empty()) {
      EXPECT_EQ(r.verdict, Verdict::Verified) << r.description << ": " << r.evidence;
      continue;
    }
    EXPECT_TRUE(r.killed) << r.op << " survives: " << r.scenario;
    EXPECT_TRUE(std::regex_search(r.where, fileLine)) << r.op << " at '" << r.where << "'";
  }
}

} // namespace
} // namespace ftsim::verify
