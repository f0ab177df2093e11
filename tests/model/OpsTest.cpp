// ftrace_ops registration, per-record reference counts and flags, the update engine and the list
// function — starting with Rostedt's slides' example (function tracer on everything, perf on the
// scheduler).

#include "FakeKernel.h"

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/ProtocolPatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

namespace ftsim::model {
namespace {

using namespace RecordFlag;
using test::FakeKernel;

// The plain-store patcher, logging what ftrace_call is pointed at and the record flags each
// batch starts from (after the reference counts changed, before any site is patched).
class RecordingPatcher : public PlainStorePatcher {
public:
  using PlainStorePatcher::PlainStorePatcher;
  PatchOutcome updateFtraceFunc(const TraceFunction &function) override {
    functions.push_back(function.describe());
    return PlainStorePatcher::updateFtraceFunc(function);
  }
  void beginBatch() override {
    if (onBatch)
      onBatch();
  }
  std::vector<std::string> functions;
  std::function<void()> onBatch;
};

// The slides' available_filter_functions, mcount flavour: the call is 4 bytes into the function.
std::vector<FakeKernel::Function> slideFunctions() {
  return test::names({"put_page", "__get_page_tail", "put_pages_list", "get_kernel_pages",
                      "new_sync_read", "vfs_setpos", "fixed_size_llseek", "default_llseek",
                      "schedule", "preempt_schedule_irq", "_cond_resched", "yield"});
}

class OpsTest : public ::testing::Test {
protected:
  OpsTest() : kernel("x86_64", slideFunctions(), 4) {
    auto recording = std::make_unique<RecordingPatcher>(kernel.arch, kernel.port);
    patcher = recording.get();
    kernel.patcher = std::move(recording);
    core = test::bootedCore(kernel);
  }

  const DynFtrace &rec(std::string_view name) { return *core->lookupRecord(kernel.site(name)); }
  arch::Bytes callTo(std::string_view name, std::uint64_t target) {
    return kernel.arch.call(kernel.site(name), target).bytes;
  }
  arch::Bytes siteBytes(std::string_view name) { return kernel.port.bytesAt(kernel.site(name), 5); }

  FakeKernel kernel;
  RecordingPatcher *patcher = nullptr;
  std::unique_ptr<FtraceCore> core;
  std::vector<std::string> calls; // "<ops>@<function>"
  FtraceFunc logTo(const std::string &who) {
    return [this, who](std::uint64_t ip, std::uint64_t, FtraceOps &, arch::GuestContext *) {
      calls.push_back(who + "@" + core->recordName(*core->lookupRecord(ip)));
    };
  }
  void traceCall(std::string_view name, bool regs) {
    // What the trampoline at the site does: call the current ftrace_call target. A site calling
    // ftrace_regs_caller passes full regs (any non-null context stands for them here).
    static test::FakeMachinePort unused;
    CallSite site{kernel.site(name), 0x1234, nullptr, {}};
    arch::GuestContext *fakeRegs = reinterpret_cast<arch::GuestContext *>(&unused);
    site.regs = regs ? fakeRegs : nullptr;
    core->invoke(core->traceFunction(), site);
  }
};

TEST_F(OpsTest, SlidesExampleFunctionTracerOnAllAndPerfOnTheScheduler) {
  FtraceOps function("function_trace_call", logTo("function"));
  FtraceOps perf("perf_ftrace_function_call", logTo("perf"), OpsFlag::SaveRegs);
  core->setFilter(perf, "schedule", true);

  core->registerFunction(function);
  // One ops: ftrace_caller calls it directly.
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::OpsFunc);
  EXPECT_EQ(core->functionTraceOp(), &function);
  for (const char *name : {"put_page", "schedule", "yield"}) {
    EXPECT_EQ(rec(name).flags, Enabled | Touched | 1) << name;
    EXPECT_EQ(siteBytes(name), callTo(name, kernel.addresses.ftraceCaller)) << name;
  }

  core->registerFunction(perf);
  // schedule: both ops, regs wanted and in force, the site calls ftrace_regs_caller.
  EXPECT_EQ(rec("schedule").flags, Enabled | Regs | RegsEn | Touched | 2);
  EXPECT_EQ(decodeRecordFlags(rec("schedule").flags, FlagsLayout::Current).summary(),
            "0xe0100002 = count 2 | ENABLED REGS REGS_EN TOUCHED");
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", kernel.addresses.ftraceRegsCaller));
  EXPECT_EQ(rec("yield").flags, Enabled | Touched | 1);
  EXPECT_EQ(siteBytes("yield"), callTo("yield", kernel.addresses.ftraceCaller));
  // Two ops: the list function decides per call ("Want to trace schedule()? perf: Yep!").
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::ListFunc);
  // update_ftrace_function() does not bother setting function_trace_op for the list function
  // (which ignores it): the single ops stays there.
  EXPECT_EQ(core->functionTraceOp(), &function);
  traceCall("yield", false);
  traceCall("_cond_resched", false);
  traceCall("schedule", true);
  EXPECT_EQ(calls, (std::vector<std::string>{"function@yield", "function@_cond_resched",
                                             "perf@schedule", "function@schedule"}));
  EXPECT_EQ(core->enabledFunctions().substr(0, 23), "put_page (1)           ");
  EXPECT_NE(core->enabledFunctions().find("\nschedule (2) R         \n"), std::string::npos);

  core->unregisterFunction(perf);
  EXPECT_EQ(rec("schedule").flags, Enabled | Touched | 1);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", kernel.addresses.ftraceCaller));
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::OpsFunc);

  core->unregisterFunction(function);
  core->records().forEach([&](const DynFtrace &r) {
    EXPECT_EQ(r.flags, Touched) << std::hex << r.ip; // counts back to zero, history kept
    EXPECT_EQ(kernel.port.bytesAt(r.ip, 5), kernel.arch.nop());
  });
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::Stub);
  EXPECT_TRUE(core->warnings().empty());
  // ftrace_call: list function first on every switch, then the final function.
  EXPECT_EQ(patcher->functions,
            (std::vector<std::string>{"ftrace_ops_list_func", "function_trace_call",
                                      "ftrace_ops_list_func", "function_trace_call",
                                      "ftrace_ops_list_func", "ftrace_stub"}));
}

TEST_F(OpsTest, SlidesFlagsWalkThroughInThe3xEncoding) {
  // Slides: schedule traced by one ops -> 0x20000001; yield by a SAVE_REGS ops -> 0xe0000001.
  FtraceOps tracer("tracer", logTo("tracer"));
  FtraceOps regs("regs_user", logTo("regs"), OpsFlag::SaveRegs);
  core->setFilter(tracer, "schedule", true);
  core->setFilter(regs, "yield", true);
  core->registerFunction(tracer);
  std::optional<std::uint32_t> yieldBeforePatch;
  patcher->onBatch = [&] { yieldBeforePatch = rec("yield").flags; };
  core->registerFunction(regs);
  EXPECT_EQ(toLegacyRecordFlags(rec("schedule").flags), 0x20000001u);
  EXPECT_EQ(toLegacyRecordFlags(rec("yield").flags), 0xe0000001u);
  // Before its site is patched the engine holds REGS and the count only; the slide's 0xa0000001
  // (REGS_EN|ENABLED without REGS) is not a state the engine passes through.
  ASSERT_TRUE(yieldBeforePatch);
  EXPECT_EQ(toLegacyRecordFlags(*yieldBeforePatch), 0x40000001u);
  EXPECT_EQ(siteBytes("yield"), callTo("yield", kernel.addresses.ftraceRegsCaller));
}

TEST_F(OpsTest, VerifyBeforePatchAbortsOnAMismatchedSiteWithoutWritingAnything) {
  kernel.port.poke(kernel.site("schedule"), {0x0f, 0x1f, 0x2e, 0x00, 0x00});
  const std::size_t writesBefore = kernel.port.writes;
  FtraceOps function("function_trace_call", logTo("function"));
  try {
    core->registerFunction(function);
    FAIL() << "registration should fail";
  } catch (const FtraceError &error) {
    EXPECT_EQ(error.errnoValue(), ENODEV);
  }
  EXPECT_EQ(kernel.port.writes, writesBefore); // ftrace_verify_code ran before any write
  EXPECT_EQ(siteBytes("put_page"), kernel.arch.nop());
  ASSERT_EQ(core->bugs().size(), 1u);
  const std::string text = core->bugs()[0].text();
  EXPECT_NE(text.find("ftrace failed to modify \n[<ffffffff81000204>] schedule+0x4/0x40\n"
                      " actual:   0f:1f:2e:00:00\n"
                      " expected: 0f:1f:44:00:00\n"
                      "Setting ftrace call site to call ftrace function\n"),
            std::string::npos)
      << text;
  EXPECT_TRUE(core->dead());
}

TEST_F(OpsTest, FilterChangeOnALiveOpsMovesTheCallSites) {
  FtraceOps function("function_trace_call", logTo("function"));
  core->setFilter(function, "schedule", true);
  core->registerFunction(function);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", kernel.addresses.ftraceCaller));
  EXPECT_EQ(siteBytes("yield"), kernel.arch.nop());
  core->setFilter(function, "yield", true);
  EXPECT_EQ(siteBytes("schedule"), kernel.arch.nop());
  EXPECT_EQ(siteBytes("yield"), callTo("yield", kernel.addresses.ftraceCaller));
  EXPECT_EQ(rec("schedule").flags, Touched);
  core->setNotrace(function, "yield", true);
  EXPECT_EQ(siteBytes("yield"), kernel.arch.nop());
  EXPECT_EQ(rec("yield").count(), 0u);
  core->unregisterFunction(function);
}

TEST_F(OpsTest, DynamicOpsAlwaysGoesThroughTheListFunctionAndWaitsForQuiescence) {
  FtraceOps first("dyn1", logTo("dyn1"), OpsFlag::Dynamic);
  FtraceOps second("dyn2", logTo("dyn2"), OpsFlag::Dynamic);
  core->setFilter(first, "schedule", true);
  core->setFilter(second, "schedule", true);
  core->registerFunction(first);
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::ListFunc);
  core->registerFunction(second);
  const std::size_t writes = kernel.port.writes;
  // Removing the second of two identical ops changes no code, but the ops may be freed right
  // after: the core must still wait (0e792b89e680).
  core->unregisterFunction(second);
  EXPECT_EQ(kernel.port.writes, writes);
  EXPECT_EQ(kernel.port.scheduleOnEachCpuCalls, 1u);
  EXPECT_EQ(kernel.port.rcuTasksSyncs, 1u);
  core->unregisterFunction(first);
  EXPECT_EQ(kernel.port.rcuTasksSyncs, 2u);
}

TEST_F(OpsTest, RecursionProtectionAllowsOneTransitionLevel) {
  FtraceOps ops("recursive", nullptr, OpsFlag::Recursion);
  int depth = 0;
  int deepest = 0;
  ExecutionContext context; // the task running the callback
  ops.func = [&](std::uint64_t, std::uint64_t, FtraceOps &, arch::GuestContext *) {
    ++depth;
    deepest = std::max(deepest, depth);
    CallSite nested{kernel.site("schedule"), 0, nullptr, context}; // calls a traced function
    core->invoke(core->traceFunction(), nested);
    --depth;
  };
  core->setFilter(ops, "schedule", true);
  core->registerFunction(ops);
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::AssistFunc);
  traceCall("schedule", false);
  EXPECT_EQ(deepest, 2);
  EXPECT_EQ(core->recursionsBlocked(), 1u);
  // Another task is independent.
  context = {1, 7, ContextLevel::Normal};
  CallSite other{kernel.site("schedule"), 0, nullptr, context};
  deepest = 0;
  core->invoke(core->traceFunction(), other);
  EXPECT_EQ(deepest, 2);
  EXPECT_EQ(core->recursionsBlocked(), 2u);
  core->unregisterFunction(ops);
}

TEST_F(OpsTest, OpsTrampolineIsUsedOnlyWhileItsOpsIsAlone) {
  FtraceOps own("own_tramp", logTo("own"));
  own.trampoline = kernel.addresses.ftraceRegsCaller + 0x40; // inside the fake text
  core->setFilter(own, "schedule", true);
  core->registerFunction(own);
  EXPECT_EQ(rec("schedule").flags, Enabled | Tramp | TrampEn | Touched | 1);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", own.trampoline));

  FtraceOps other("other", logTo("other"));
  core->setFilter(other, "schedule", true);
  core->registerFunction(other);
  EXPECT_EQ(rec("schedule").flags, Enabled | Touched | 2);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", kernel.addresses.ftraceCaller));

  core->unregisterFunction(other);
  EXPECT_EQ(rec("schedule").flags, Enabled | Tramp | TrampEn | Touched | 1);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", own.trampoline));
  core->unregisterFunction(own); // the removed ops is found through its old hash
  EXPECT_EQ(siteBytes("schedule"), kernel.arch.nop());
  EXPECT_FALSE(core->dead());
}

TEST_F(OpsTest, TwoIpModifyOpsOnOneFunctionConflict) {
  FtraceOps livepatch1("klp1", logTo("klp1"), OpsFlag::IpModify | OpsFlag::SaveRegs);
  FtraceOps livepatch2("klp2", logTo("klp2"), OpsFlag::IpModify | OpsFlag::SaveRegs);
  core->setFilter(livepatch1, "schedule", true);
  core->setFilter(livepatch2, "schedule", true);
  core->registerFunction(livepatch1);
  EXPECT_TRUE(rec("schedule").has(IpModify));
  try {
    core->registerFunction(livepatch2);
    FAIL();
  } catch (const FtraceError &error) {
    EXPECT_EQ(error.errnoValue(), EBUSY);
  }
  EXPECT_EQ(core->opsList().size(), 1u);
  EXPECT_EQ(rec("schedule").count(), 1u);
  EXPECT_FALSE(livepatch2.has(OpsFlag::Enabled));
  core->unregisterFunction(livepatch1);
  EXPECT_EQ(rec("schedule").flags, Touched | Modified);
  // An IPMODIFY ops may not trace everything.
  FtraceOps everything("klp_all", logTo("all"), OpsFlag::IpModify);
  EXPECT_THROW(core->registerFunction(everything), FtraceError);
}

TEST_F(OpsTest, RegistrationErrorsCarryTheKernelsErrno) {
  FtraceOps ops("ops", logTo("ops"));
  core->registerFunction(ops);
  try {
    core->registerFunction(ops);
    FAIL();
  } catch (const FtraceError &error) {
    EXPECT_EQ(error.errnoValue(), EBUSY);
  }
  core->unregisterFunction(ops);
  EXPECT_THROW(core->unregisterFunction(ops), FtraceError);

  FakeKernel noRegs("ppc32", test::names({"schedule"}), 8);
  auto ppc = test::bootedCore(noRegs, false);
  FtraceOps wantsRegs("regs", logTo("regs"), OpsFlag::SaveRegs);
  EXPECT_THROW(ppc->registerFunction(wantsRegs), FtraceError);
  FtraceOps ifSupported("regs?", logTo("regs?"), OpsFlag::SaveRegsIfSupported);
  ppc->registerFunction(ifSupported);
  EXPECT_EQ(noRegs.port.bytesAt(noRegs.site("schedule"), 4),
            noRegs.arch.call(noRegs.site("schedule"), noRegs.addresses.ftraceCaller).bytes);
}

TEST_F(OpsTest, FtraceEnabledSysctlNopsAndRestoresEverySite) {
  FtraceOps function("function_trace_call", logTo("function"));
  core->registerFunction(function);
  core->setFtraceEnabled(false);
  EXPECT_EQ(siteBytes("schedule"), kernel.arch.nop());
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::Stub);
  core->setFtraceEnabled(true);
  EXPECT_EQ(siteBytes("schedule"), callTo("schedule", kernel.addresses.ftraceCaller));
  EXPECT_EQ(core->traceFunction().kind, TraceFunction::Kind::OpsFunc);
  core->unregisterFunction(function);
}

TEST(ProtocolPatcherTest, EnablingManySitesIsOneInt3BatchThroughArchProtocol) {
  FakeKernel kernel("x86_64", slideFunctions(), 4);
  std::unique_ptr<arch::PatchProtocol> int3 = arch::makePatchProtocol(kernel.arch, "int3");
  std::unique_ptr<arch::SiteHooks> hooks = kernel.arch.makeSiteHooks({});
  kernel.patcher = std::make_unique<ProtocolPatcher>(kernel.port, *int3, *hooks);
  auto core = test::bootedCore(kernel);
  FtraceOps function("function_trace_call", [](auto, auto, auto &, auto) {});
  core->registerFunction(function);
  for (std::uint64_t site : kernel.sites)
    EXPECT_EQ(kernel.port.bytesAt(site, 5),
              kernel.arch.call(site, kernel.addresses.ftraceCaller).bytes);
  EXPECT_EQ(int3->stats().sites, kernel.sites.size());
  EXPECT_EQ(int3->stats().batches, 1u);
  EXPECT_EQ(int3->stats().syncs, 3u); // int3, tails, first bytes: 3 syncs, not 3 per site
  core->unregisterFunction(function);
  EXPECT_EQ(kernel.port.bytesAt(kernel.sites[0], 5), kernel.arch.nop());
}

} // namespace
} // namespace ftsim::model
