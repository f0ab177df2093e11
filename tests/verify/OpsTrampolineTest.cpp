// Per-ops dynamic trampolines (f3bea491) on the running x86-64 guest: f3bea49115b2's
// point (with the function tracer on everything and a kprobe-like ops on one function, only that
// function's site goes through the list function), kprobes on ftrace sharing a site with the
// function tracer, and records moving between trampoline, list function and nop. The
// trampoline-lifetime scenarios of every flavour are in TrampolineLifetimeTest.cpp.

#include "../kernel/KernelFixture.h"

#include "ftsim/model/RecordFlags.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

namespace ftsim::verify {
namespace {

using kernel::testing::bootKernel;
using kernel::testing::fastConfig;
using kernel::testing::guestImagePath;

kernel::KernelConfig trampolineConfig(unsigned cpus) {
  kernel::KernelConfig config = fastConfig(cpus);
  config.opsTrampolines = true;
  return config;
}

// f3bea49115b2: "if you are tracing all functions in the kernel and then add a kprobe to a
// function ... the kprobes ftrace_ops is checked for every function being traced!" — no longer.
// Both ops are registered before the tasks run (boot-time patching), so every call is traced.
TEST(OpsTrampoline, OnlyTheProbedFunctionGoesThroughTheListFunction) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto kernel = bootKernel("x86_64-fentry", trampolineConfig(3));
  kernel::Kernel &k = *kernel;
  const std::uint64_t scheduleIp = k.symbolAddress("schedule");
  const arch::TrampolineCode &code = k.trampolines();

  // kprobe_ftrace_ops: SAVE_REGS | IPMODIFY, static; kprobe_ftrace_handler() gives the
  // pre-handler regs with regs->ip at the probed address + 1 (the int3 it emulates) and restores
  // it afterwards.
  std::size_t probeHits = 0;
  std::vector<std::string> probeErrors;
  model::FtraceOps kprobe("kprobe_ftrace_ops", {},
                          model::OpsFlag::SaveRegs | model::OpsFlag::IpModify);
  kprobe.func = [&](std::uint64_t ip, std::uint64_t, model::FtraceOps &, arch::GuestContext *regs) {
    if (!regs) {
      probeErrors.push_back("no pt_regs");
      return;
    }
    const std::uint64_t orig = regs->pc();
    if (orig != ip + 5)
      probeErrors.push_back(fmt::format("regs->ip {:#x} for ip {:#x}", orig, ip));
    regs->setPc(ip + 1); // instruction_pointer_set(regs, ip + sizeof(kprobe_opcode_t))
    if (regs->pc() == ip + 1 && ip == scheduleIp)
      ++probeHits; // the pre-handler
    regs->setPc(orig);
  };
  k.core().setFilter(kprobe, "schedule", true);
  k.tracefs().write("current_tracer", "function");
  k.core().registerFunction(kprobe);

  model::FtraceOps &tracer = *k.core().opsList().back();
  ASSERT_NE(tracer.trampoline, 0u);
  ASSERT_NE(kprobe.trampoline, 0u);
  EXPECT_TRUE(tracer.has(model::OpsFlag::AllocTramp));
  EXPECT_EQ(k.core().traceFunction().describe(), "ftrace_ops_list_func");

  // Site targets: schedule -> ftrace_regs_caller (two users, one wants regs); every other enabled
  // record -> the function tracer's own trampoline (TRAMP, TRAMP_EN).
  std::size_t onTracerTrampoline = 0, enabled = 0;
  k.core().records().forEach([&](const model::DynFtrace &rec) {
    if (!rec.has(model::RecordFlag::Enabled))
      return;
    ++enabled;
    arch::Bytes site(5);
    ASSERT_TRUE(k.machine().readText(rec.ip, site));
    const std::uint64_t target = *k.image().arch->callTarget(rec.ip, site);
    if (rec.ip == scheduleIp) {
      EXPECT_EQ(target, code.ftraceRegsCaller);
      EXPECT_FALSE(rec.has(model::RecordFlag::TrampEn));
      EXPECT_EQ(model::recordCount(rec.flags), 2u);
    } else {
      EXPECT_EQ(target, tracer.trampoline) << k.core().recordName(rec);
      EXPECT_TRUE(rec.has(model::RecordFlag::TrampEn));
      ++onTracerTrampoline;
    }
  });
  EXPECT_EQ(enabled, k.core().records().size());
  EXPECT_EQ(onTracerTrampoline, enabled - 1);
  EXPECT_NE(k.core().enabledFunctions().find("tramp: ftrace_trampoline"), std::string::npos);

  k.watchPatchSites();
  for (unsigned cpu = 1; cpu <= 2; ++cpu)
    for (const char *w : {"sched", "mixed"})
      k.addWorkload(w, cpu, cpu);
  sim::RandomScheduler random(7);
  ASSERT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
  ASSERT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());
  EXPECT_TRUE(probeErrors.empty()) << probeErrors.front();

  // Every call: through the tracer's trampoline straight to function_trace_call, except
  // schedule's, which go through ftrace_regs_caller and the list function.
  const auto sites = k.siteExecutions();
  std::size_t scheduleCalls = 0;
  for (const kernel::SiteExecution &s : sites)
    scheduleCalls += s.ip == scheduleIp;
  std::size_t viaTrampoline = 0, viaList = 0;
  for (const kernel::CallbackEvent &c : k.callbacks()) {
    if (c.ip == scheduleIp) {
      EXPECT_EQ(c.function, "ftrace_ops_list_func");
      EXPECT_TRUE(c.fullRegs);
      EXPECT_EQ(c.trampoline, 0u);
      ++viaList;
    } else {
      EXPECT_EQ(c.trampoline, tracer.trampoline);
      EXPECT_EQ(c.function, tracer.name);
      EXPECT_FALSE(c.fullRegs);
      ++viaTrampoline;
    }
  }
  EXPECT_GT(scheduleCalls, 0u);
  EXPECT_EQ(viaList, scheduleCalls);
  EXPECT_EQ(viaTrampoline + viaList, sites.size());
  // kprobes on ftrace: the probe fired once per call of schedule, and the function trace has
  // every call, schedule's included.
  EXPECT_EQ(probeHits, scheduleCalls);
  const auto &buffer = k.tracefs().buffer();
  ASSERT_EQ(buffer.written(), buffer.entries());
  std::size_t traced = 0, tracedSchedule = 0;
  for (unsigned cpu = 0; cpu < buffer.cpus(); ++cpu)
    for (const model::TraceRecord &r : buffer.cpuBuffer(cpu)) {
      ++traced;
      tracedSchedule += r.ip == scheduleIp;
    }
  EXPECT_EQ(traced, sites.size());
  EXPECT_EQ(tracedSchedule, scheduleCalls);
}

// Records move between a trampoline, the list function and nop through the patch protocol while
// tasks run: adding the probe turns schedule's call into ftrace_regs_caller (MODIFY_CALL), removing
// it turns it back, and removing the tracer nops everything.
TEST(OpsTrampoline, RecordsMoveBetweenTrampolineListAndNop) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto kernel = bootKernel("x86_64-fentry", trampolineConfig(3));
  kernel::Kernel &k = *kernel;
  const std::uint64_t scheduleIp = k.symbolAddress("schedule");
  model::FtraceOps probe(
      "probe", [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {},
      model::OpsFlag::SaveRegs);
  k.core().setFilter(probe, "schedule", true);
  for (unsigned cpu = 1; cpu <= 2; ++cpu)
    k.addWorkload("mixed", cpu, cpu);
  std::vector<std::pair<std::string, std::uint64_t>> targets; // (step, schedule's target)
  auto target = [&](kernel::Kernel &kk) {
    arch::Bytes site(5);
    kk.machine().readText(scheduleIp, site);
    if (site == kk.image().arch->nop())
      return std::string("nop");
    const std::uint64_t t = *kk.image().arch->callTarget(scheduleIp, site);
    return kk.symbolName(t, false);
  };
  std::vector<std::string> seen;
  k.patcher([&](kernel::Kernel &kk) {
    kk.tracefs().write("current_tracer", "function");
    seen.push_back(target(kk));
    kk.core().registerFunction(probe);
    seen.push_back(target(kk));
    kk.core().unregisterFunction(probe);
    seen.push_back(target(kk));
    kk.tracefs().write("current_tracer", "nop");
    seen.push_back(target(kk));
  });
  sim::RandomScheduler random(3);
  ASSERT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
  ASSERT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());
  EXPECT_EQ(seen, (std::vector<std::string>{"ftrace_trampoline", "ftrace_regs_caller",
                                            "ftrace_trampoline", "nop"}));
}

// The trampoline-freeing scenarios are files: TrampolineCheckTest.cpp.

} // namespace
} // namespace ftsim::verify
