// The simulated kernel: boot on the machine, trampolines as guest code, engine operations as the
// machine's patcher, transparency of tracing, the breakpoint walk-through on another CPU's view.

#include "KernelFixture.h"

#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

namespace ftsim::verify {
namespace {

using testing::bootKernel;
using testing::fastConfig;

TEST(Kernel, BootsX86FentryAndPrintsTheAllocationLine) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto kernel = bootKernel("x86_64-fentry", fastConfig());
  const auto &report = kernel->bootReport();
  EXPECT_EQ(report.converted, report.entries);
  EXPECT_GT(report.entries, 30u);
  EXPECT_EQ(report.allocationLine(),
            fmt::format("ftrace: allocating {} entries in 1 pages", report.entries));
  // Every site is a nop on every CPU's view.
  const arch::Arch &isa = *kernel->image().arch;
  kernel->core().records().forEach([&](const model::DynFtrace &rec) {
    for (unsigned cpu = 0; cpu < 4; ++cpu)
      EXPECT_EQ(kernel->machine().viewBytes(cpu, rec.ip, 5), isa.nop());
  });
}

} // namespace
} // namespace ftsim::verify
