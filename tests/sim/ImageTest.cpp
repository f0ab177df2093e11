// The built guest kernels (corpora/) boot on the machine: every workload task exits with a
// result, none faults, and the result does not depend on the interleaving.

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "ftsim/arch/Image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace ftsim::sim {
namespace {

std::vector<std::uint64_t> runWorkloads(const arch::Image &image, Scheduler &sched,
                                        std::string *log) {
  MachineConfig c;
  c.cpus = 2;
  Machine m(*image.arch, c);
  m.loadImage(image);
  int n = 0;
  for (const arch::ImageSymbol &sym : image.symbols)
    if (sym.function && sym.name.rfind("workload_", 0) == 0)
      m.addTask({sym.name, static_cast<unsigned>(n++ % 2), sym.addr, 12345});
  EXPECT_GT(n, 0);
  EXPECT_EQ(m.run(sched, 20'000'000).status, RunResult::Status::Completed);
  EXPECT_TRUE(m.findings().empty()) << m.logText().substr(0, 4000);
  std::vector<std::uint64_t> results;
  for (int t = 0; t < n; ++t) {
    EXPECT_EQ(m.task(t).state, TaskState::Exited) << m.task(t).name;
    results.push_back(m.task(t).result);
  }
  if (log)
    *log = m.logText();
  return results;
}

class BuiltImage : public ::testing::TestWithParam<const char *> {};

TEST_P(BuiltImage, WorkloadsExitWithInterleavingIndependentResults) {
  const std::string path = std::string(FTSIM_GUEST_DIR) + "/" + GetParam() + "/kernel.elf";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is not built (target ftsim-guests)";
  arch::Image image = arch::loadImage(path);
  RoundRobinScheduler rr;
  RandomScheduler random(3);
  auto a = runWorkloads(image, rr, nullptr);
  auto b = runWorkloads(image, random, nullptr);
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Corpora, BuiltImage,
                         ::testing::Values("x86_64-fentry", "x86_64-mcount", "ppc32-mcount"),
                         [](const auto &p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

} // namespace
} // namespace ftsim::sim
