// One Linux release's own code throughout a kernel (model/LinuxProfile.h, ReleaseCode): the record
// flags its ftrace_check_record() keeps, how function_graph enters, powerpc's boot-time nops and
// the call-site flavours the release builds.

#include "KernelFixture.h"

#include "ftsim/arch/Error.h"
#include "ftsim/model/LinuxProfile.h"
#include "ftsim/model/RecordFlags.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <algorithm>

namespace ftsim::kernel {
namespace {

using testing::bootKernel;
using testing::fastConfig;
using testing::guestImagePath;

KernelConfig asRelease(const std::string &linux, const std::string &isa) {
  KernelConfig config = fastConfig(2, "");
  applyLinuxProfile(config, linux, isa);
  return config;
}

// Runs the sched workload on CPU 1 while CPU 0 switches the tracer on; the trace afterwards.
std::string traceWhileRunning(Kernel &kernel, const std::string &tracer) {
  kernel.watchPatchSites();
  kernel.addWorkload("sched", 1, 1);
  kernel.patcher([tracer](Kernel &k) {
    k.tracefs().write("set_ftrace_filter", "schedule");
    k.tracefs().write("current_tracer", tracer);
  });
  sim::RoundRobinScheduler rr;
  EXPECT_EQ(kernel.run(rr).status, sim::RunResult::Status::Completed);
  EXPECT_TRUE(kernel.machine().findings().empty())
      << sim::formatFinding(kernel.machine().findings().front());
  return kernel.tracefs().read("trace");
}

struct GraphCase {
  const char *flavour;
  const char *isa;
  const char *linux;
  bool patchedJump; // the release patches ftrace_graph_call (before CONFIG_..._WITH_ARGS)
};

class FunctionGraphEntry : public ::testing::TestWithParam<GraphCase> {};

// v6.1 and v6.12 enter function_graph through graph_ops' callback ftrace_graph_func(): their
// trampolines have no ftrace_graph_call and return straight after ftrace_call. v4.19 patches the
// ftrace_graph_call jump to ftrace_graph_caller. Either way every traced call is entered and
// returns (the workload completes without a finding and the trace has schedule()).
TEST_P(FunctionGraphEntry, TracesThroughTheReleasesOwnEntry) {
  const GraphCase &c = GetParam();
  FTSIM_REQUIRE_IMAGE(c.flavour);
  auto kernel = bootKernel(c.flavour, asRelease(c.linux, c.isa));
  const arch::TrampolineCode &code = kernel->trampolines();
  EXPECT_EQ(code.ftraceGraphCall != 0, c.patchedJump);
  EXPECT_EQ(code.prepareReturnStub != 0, c.patchedJump);
  const std::string trace = traceWhileRunning(*kernel, "function_graph");
  EXPECT_NE(trace.find("schedule()"), std::string::npos) << trace;
  if (c.patchedJump) {
    const arch::Arch &isa = *kernel->image().arch;
    EXPECT_EQ(kernel->machine().viewBytes(1, code.ftraceGraphCall, code.siteSize),
              isa.jump(code.ftraceGraphCall, code.ftraceGraphCaller).bytes)
        << "ftrace_graph_call still jumps to the stub with function_graph on";
  }
  // The graph tracer is an ops in every release; it has a callback of its own only with
  // ftrace_graph_func.
  bool graphCallback = false;
  for (const CallbackEvent &e : kernel->callbacks())
    graphCallback |= e.function.find("graph_ops") != std::string::npos;
  EXPECT_EQ(graphCallback, !c.patchedJump);
}

INSTANTIATE_TEST_SUITE_P(Releases, FunctionGraphEntry,
                         ::testing::Values(GraphCase{"x86_64-fentry", "x86_64", "6.12", false},
                                           GraphCase{"x86_64-fentry", "x86_64", "4.19", true},
                                           GraphCase{"x86_64-mcount", "x86_64", "4.19", true},
                                           GraphCase{"ppc32-mcount", "ppc32", "6.1", false},
                                           GraphCase{"ppc32-mcount", "ppc32", "4.19", true}),
                         [](const auto &p) {
                           std::string n = std::string(p.param.flavour) + "_" + p.param.linux;
                           std::replace(n.begin(), n.end(), '-', '_');
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

// The flags a release's check_record sets are the ones it has: TOUCHED (v6.6 on) marks a record
// an ops was attached to only where the release has it, and no record ever holds a flag its
// release lacks (the release's own layout encodes it).
TEST(ReleaseCode, EnabledRecordsCarryOnlyTheirReleasesFlags) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  for (const model::LinuxProfile &profile : model::linuxProfiles()) {
    SCOPED_TRACE(profile.name);
    auto kernel = bootKernel("x86_64-fentry", asRelease(std::string(profile.name), "x86_64"));
    traceWhileRunning(*kernel, "function");
    const model::RecordRules &rules = *profile.code.records;
    std::size_t enabled = 0, touched = 0;
    kernel->core().records().forEach([&](const model::DynFtrace &rec) {
      EXPECT_EQ(rec.flags & ~model::RecordFlag::RefMax & ~rules.known, 0u)
          << kernel->core().recordName(rec);
      enabled += rec.has(model::RecordFlag::Enabled);
      touched += rec.has(model::RecordFlag::Touched);
    });
    EXPECT_GT(enabled, 0u);
    EXPECT_EQ(touched > 0, rules.has(model::RecordFlag::Touched));
  }
}

// The ppc32 -pg image with the word before its first site changed from `stw r0,4(r1)` to a nop.
arch::Image ppc32WithoutTheFirstSitesStw() {
  arch::Image image = arch::loadImage(guestImagePath("ppc32-mcount"));
  std::uint64_t first = UINT64_MAX;
  for (std::uint64_t loc : image.mcountLocs)
    if (loc)
      first = std::min(first, loc);
  for (arch::ImageSegment &segment : image.segments)
    if (first - 4 >= segment.addr && first < segment.addr + segment.bytes.size()) {
      auto word = segment.bytes.begin() + static_cast<std::ptrdiff_t>(first - 4 - segment.addr);
      const std::uint8_t nop[] = {0x60, 0x00, 0x00, 0x00};
      std::copy(std::begin(nop), std::end(nop), word);
    }
  return image;
}

// powerpc's ftrace_init_nop() (v6.6) verifies `mflr r0; stw r0,4(r1)` before a -pg site; v6.1's
// boot-time ftrace_make_nop() reads the `bl _mcount` alone.
TEST(ReleaseCode, Ppc32BootChecksTheWordsBeforeAPgSiteFromV66On) {
  FTSIM_REQUIRE_IMAGE("ppc32-mcount");
  try {
    Kernel k(ppc32WithoutTheFirstSitesStw(), asRelease("6.12", "ppc32"));
    ADD_FAILURE() << "v6.12 booted a -pg site without its stw r0,4(r1)";
  } catch (const FatalError &e) {
    EXPECT_NE(std::string(e.what()).find("ftrace boot failed"), std::string::npos) << e.what();
  }
  Kernel k(ppc32WithoutTheFirstSitesStw(), asRelease("6.1", "ppc32"));
  EXPECT_EQ(k.bootReport().converted, k.bootReport().entries);
}

// Images of call sites a release does not build are refused, naming what is missing.
TEST(ReleaseCode, ImagesOfSitesTheReleaseDoesNotBuildAreRefused) {
  FTSIM_REQUIRE_IMAGE("ppc32-pfe");
  FTSIM_REQUIRE_IMAGE("x86_64-mcount");
  auto refused = [](const std::string &flavour, const KernelConfig &config) {
    try {
      bootKernel(flavour, config);
    } catch (const FatalError &e) {
      return std::string(e.what());
    }
    return std::string("booted");
  };
  EXPECT_NE(refused("ppc32-pfe", asRelease("6.1", "ppc32")).find("-fpatchable-function-entry"),
            std::string::npos);
  EXPECT_NE(refused("x86_64-mcount", fastConfig(2)).find("fentry sites only"), std::string::npos);
  EXPECT_EQ(refused("ppc32-pfe", asRelease("6.12", "ppc32")), "booted");
  EXPECT_EQ(refused("x86_64-mcount", asRelease("4.19", "x86_64")), "booted");
}

} // namespace
} // namespace ftsim::kernel
