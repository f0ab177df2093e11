// The exact-target oracle (SiteTargets.h): each record site's legal states come from the records
// and the engine's pending updates, so a patcher that writes a call to the wrong trampoline is a
// torn-fetch/target finding where a CPU fetches it, although that trampoline is a legal target of
// other sites at other moments (the old "any trampoline" states accepted it).

#include "KernelFixture.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/RandomScheduler.h"

#include <gtest/gtest.h>

namespace ftsim::kernel {
namespace {

using testing::bootKernel;
using testing::fastConfigFor;

arch::Bytes b(std::initializer_list<std::uint8_t> bytes) { return arch::Bytes(bytes); }

TEST(SiteTargets, PendingUpdateAllowsOldAndNewUntilEveryCpuSynchronised) {
  std::map<std::uint64_t, std::vector<arch::Bytes>> published;
  arch::Bytes text; // what the site holds in memory
  SiteTargets t([&](std::uint64_t ip, const std::vector<arch::Bytes> &s) { published[ip] = s; },
                [&](std::uint64_t, std::size_t) { return text; });
  const arch::Bytes nop = b({0x60}), callA = b({0xa}), callB = b({0xb});
  t.rest(0x100, nop);
  EXPECT_EQ(t.legal(0x100), std::vector<arch::Bytes>{nop});
  t.update(0x100, nop, callA);
  EXPECT_EQ(t.legal(0x100), (std::vector<arch::Bytes>{nop, callA}));
  // A second update before any sync (powerpc: no IPI): a CPU may still fetch any of the three.
  t.update(0x100, callA, callB);
  EXPECT_EQ(t.legal(0x100), (std::vector<arch::Bytes>{nop, callA, callB}));
  // A sync before the new state is stored (a protocol's earlier phase) narrows nothing.
  text = callA;
  t.contextSynchronised();
  EXPECT_EQ(t.legal(0x100), (std::vector<arch::Bytes>{nop, callA, callB}));
  text = callB;
  t.contextSynchronised();
  EXPECT_EQ(t.legal(0x100), std::vector<arch::Bytes>{callB});
  EXPECT_EQ(published[0x100], std::vector<arch::Bytes>{callB});
  EXPECT_TRUE(t.legal(0x200).empty());
}

// An engine mutation: ftrace_make_call() writes a call to ftrace_regs_caller where the record
// (no SAVE_REGS ops: REGS clear) wants ftrace_caller. Both trampolines trace the function, so
// trace completeness and transparency cannot see it; the exact-target oracle reports it.
class WrongTrampoline final : public model::ArchPatcher {
public:
  WrongTrampoline(model::ArchPatcher &inner, const std::pair<std::uint64_t, std::uint64_t> &swap)
      : inner_(inner), swap_(swap) {}
  const arch::Arch &arch() const override { return inner_.arch(); }
  arch::Bytes callBytes(const model::DynFtrace &rec, std::uint64_t target) const override {
    return inner_.callBytes(rec, target);
  }
  model::PatchOutcome initNop(model::DynFtrace &rec, std::uint64_t mcount) override {
    return inner_.initNop(rec, mcount);
  }
  model::PatchOutcome makeCall(const model::DynFtrace &rec, std::uint64_t addr) override {
    return inner_.makeCall(rec, addr == swap_.first ? swap_.second : addr);
  }
  model::PatchOutcome makeNop(const model::DynFtrace &rec, std::uint64_t old) override {
    return inner_.makeNop(rec, old);
  }
  model::PatchOutcome modifyCall(const model::DynFtrace &rec, std::uint64_t old,
                                 std::uint64_t addr) override {
    return inner_.modifyCall(rec, old, addr);
  }
  void finishBatch() override { inner_.finishBatch(); }
  model::PatchOutcome updateFtraceFunc(const model::TraceFunction &f) override {
    return inner_.updateFtraceFunc(f);
  }
  model::PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                                 const arch::Bytes &replacement) override {
    return inner_.modifyCode(ip, old, replacement);
  }

private:
  model::ArchPatcher &inner_;
  const std::pair<std::uint64_t, std::uint64_t> &swap_;
};

class WrongTrampolineTest : public ::testing::TestWithParam<const char *> {};

std::vector<sim::Finding> runFunctionTracer(const char *flavour, bool mutate, Kernel **out,
                                            std::unique_ptr<Kernel> &keep) {
  // Filled once the kernel's trampolines exist (the mutation is built during boot, used after).
  static std::pair<std::uint64_t, std::uint64_t> swap;
  KernelConfig config = fastConfigFor(flavour, 3);
  if (mutate)
    config.patcherMutation = [](model::ArchPatcher &inner) {
      return std::make_unique<WrongTrampoline>(inner, swap);
    };
  keep = bootKernel(flavour, config);
  Kernel &k = *keep;
  *out = &k;
  swap = {k.trampolines().ftraceCaller, k.trampolines().ftraceRegsCaller};
  k.watchPatchSites();
  for (unsigned cpu = 1; cpu <= 2; ++cpu)
    k.addWorkload("sched", cpu, cpu * 7);
  k.patcher([](Kernel &kk) {
    kk.machine().synchronizeRcuTasks();
    kk.tracefs().write("current_tracer", "function");
    kk.machine().synchronizeRcuTasks();
  });
  sim::RandomScheduler random(1);
  k.run(random);
  const auto f = k.machine().findings();
  return {f.begin(), f.end()};
}

TEST_P(WrongTrampolineTest, ACallToTheWrongTrampolineIsReportedAtTheSite) {
  const char *flavour = GetParam();
  FTSIM_REQUIRE_IMAGE(flavour);
  std::unique_ptr<Kernel> keep;
  Kernel *k = nullptr;
  // The correct engine: no finding.
  const std::vector<sim::Finding> clean = runFunctionTracer(flavour, false, &k, keep);
  EXPECT_TRUE(clean.empty()) << sim::formatFinding(clean.front());
  // The mutation: the first finding is a torn-fetch/target one at a record site that calls
  // ftrace_regs_caller.
  const std::vector<sim::Finding> found = runFunctionTracer(flavour, true, &k, keep);
  ASSERT_FALSE(found.empty()) << "the call to the wrong trampoline was not reported";
  const sim::Finding &f = found.front();
  EXPECT_EQ(f.kind, sim::FindingKind::TornFetch) << sim::formatFinding(f);
  ASSERT_NE(k->core().lookupRecord(f.addr), nullptr) << sim::formatFinding(f);
  const arch::Arch &isa = *k->image().arch;
  EXPECT_EQ(isa.callTarget(f.addr, f.bytes),
            std::optional<std::uint64_t>(k->trampolines().ftraceRegsCaller))
      << sim::formatFinding(f);
}

INSTANTIATE_TEST_SUITE_P(Images, WrongTrampolineTest, FTSIM_KERNEL_IMAGES, testing::flavourName);

} // namespace
} // namespace ftsim::kernel
