// `ftsim mutants --kernel 6.12`: every source mutation operator of linux/kbuild/mutate applied to
// the 6.12 tree is killed by its scenario, each with a counterexample that names the guest
// instruction by the tree's (or the workload's) file and line, and the unmutated tree passes
// every one of those scenarios (LinuxMutants.h).

#include "ftsim/verify/check/LinuxMutants.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

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
  // "… (traced_a+0x0, linux/guest/workload.c:11)" or "… (arch/x86/kernel/alternative.c:2361 …)"
  auto namesFileLine = [](const std::string &where) {
    for (const char *file : {"linux/guest/workload.c:", "arch/x86/kernel/alternative.c:"})
      if (auto at = where.find(file); at != std::string::npos)
        return std::isdigit(static_cast<unsigned char>(where[at + std::strlen(file)])) != 0;
    return false;
  };
  for (const LinuxMutantResult &r : score.results) {
    if (r.op.empty()) {
      EXPECT_EQ(r.verdict, Verdict::Verified) << r.description << ": " << r.evidence;
      continue;
    }
    EXPECT_TRUE(r.killed) << r.op << " survives: " << r.scenario;
    EXPECT_TRUE(namesFileLine(r.where)) << r.op << " at '" << r.where << "'";
  }
}

} // namespace
} // namespace ftsim::verify
