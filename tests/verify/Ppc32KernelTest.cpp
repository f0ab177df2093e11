// Issue 7 on ppc32 and the ppc32 mutation score: per-ops dynamic trampolines on the big-endian
// powerpc guest (x86's create_trampoline() ported to the ppc32 listing, allocated within `bl`
// reach of kernel text as powerpc's module_alloc() first tries, 2ec13df16704), and every ppc32
// mutant killed by some checker while the correct protocols survive. The trampoline-lifetime
// scenarios of every flavour are in TrampolineLifetimeTest.cpp.

#include "../kernel/KernelFixture.h"

#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/verify/check/Mutants.h"
#include "ppc32/Ppc32Code.h"

#include <gtest/gtest.h>

#include <iostream>

namespace ftsim::verify {
namespace {

using kernel::testing::bootKernel;
using kernel::testing::fastConfigFor;
using kernel::testing::guestImagePath;
using kernel::testing::siteOf;

// f3bea49115b2's example on ppc32: the function tracer on everything and a probe-like SAVE_REGS ops
// on schedule; only schedule's site calls ftrace_regs_caller (and the list function), every other
// site `bl`s the function tracer's own trampoline, every call is traced once.
TEST(Ppc32OpsTrampoline, OnlyTheProbedFunctionGoesThroughTheListFunction) {
  FTSIM_REQUIRE_IMAGE("ppc32-mcount");
  kernel::KernelConfig config = fastConfigFor("ppc32-mcount", 3);
  config.opsTrampolines = true;
  auto kernel = bootKernel("ppc32-mcount", config);
  kernel::Kernel &k = *kernel;
  const arch::Arch &isa = *k.image().arch;
  const std::uint64_t scheduleIp = siteOf(k, "schedule");
  std::size_t probeHits = 0;
  model::FtraceOps probe("probe", {}, model::OpsFlag::SaveRegs);
  probe.func = [&](std::uint64_t ip, std::uint64_t, model::FtraceOps &, arch::GuestContext *regs) {
    EXPECT_NE(regs, nullptr);
    if (regs) {
      EXPECT_EQ(regs->pc(), ip + 4) << "regs->nip is the return address into the function";
    }
    probeHits += ip == scheduleIp;
  };
  k.core().setFilter(probe, "schedule", true);
  k.tracefs().write("current_tracer", "function");
  k.core().registerFunction(probe);
  k.watchPatchSites();
  for (unsigned cpu = 1; cpu <= 2; ++cpu)
    k.addWorkload("mixed", cpu, cpu);
  sim::RandomScheduler random(5);
  ASSERT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
  ASSERT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());

  // The function tracer's own trampoline (ops get one when registered, f3bea491), allocated
  // within `bl` reach below the fixed trampolines.
  const model::FtraceOps &tracer = *k.core().opsList().back();
  ASSERT_NE(tracer.trampoline, 0u);
  const kernel::OpsTrampoline *found = nullptr;
  for (const kernel::OpsTrampoline &t : k.opsTrampolines())
    if (t.addr == tracer.trampoline)
      found = &t;
  ASSERT_NE(found, nullptr);
  const kernel::OpsTrampoline &tramp = *found;
  EXPECT_LT(tramp.addr, k.trampolines().base);
  EXPECT_TRUE(isa.call(scheduleIp, tramp.addr).ok);
  std::size_t viaTrampoline = 0, viaList = 0;
  k.core().records().forEach([&](const model::DynFtrace &rec) {
    arch::Bytes site(4);
    ASSERT_TRUE(k.machine().readText(rec.ip, site));
    const auto target = isa.callTarget(rec.ip, site);
    ASSERT_TRUE(target) << k.core().recordName(rec);
    if (rec.ip == scheduleIp)
      EXPECT_EQ(*target, k.trampolines().ftraceRegsCaller);
    else
      EXPECT_EQ(*target, tramp.addr) << k.core().recordName(rec);
  });
  for (const kernel::CallbackEvent &c : k.callbacks()) {
    if (c.ip == scheduleIp) {
      EXPECT_EQ(c.function, "ftrace_ops_list_func");
      ++viaList;
    } else {
      EXPECT_EQ(c.trampoline, tramp.addr);
      ++viaTrampoline;
    }
  }
  EXPECT_GT(viaTrampoline, 100u);
  EXPECT_GT(viaList, 0u);
  EXPECT_EQ(probeHits, viaList);
  // Every call of every function traced exactly once (the machine's own count of site executions).
  EXPECT_EQ(k.callbacks().size(), k.siteExecutions().size());
}

// A guest module more than 32 MiB from kernel text (ppc-branch-range, dyn_arch_ftrace.mod): the
// Kernel loads it with the kernel, writes mod->arch.tramp / tramp_regs, and its sites reach
// ftrace_caller through them. Boot-time enabled: every call of mod_scale is traced once; enabled
// live on 4 CPUs under random schedules: the module computes its untraced results.
TEST(Ppc32Module, ModuleSitesReachFtraceCallerThroughTheModuleTrampolines) {
  FTSIM_REQUIRE_IMAGE("ppc32-mcount");
  const std::string module = std::string(FTSIM_GUEST_DIR) + "/ppc32-module/module.elf";
  auto boot = [&](unsigned cpus) {
    kernel::KernelConfig config = fastConfigFor("ppc32-mcount", cpus);
    config.modules = {module};
    return bootKernel("ppc32-mcount", config);
  };
  auto run = [](kernel::Kernel &k, std::uint64_t schedulerSeed) {
    sim::RandomScheduler random(schedulerSeed);
    EXPECT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
    EXPECT_TRUE(k.machine().findings().empty())
        << sim::formatFinding(k.machine().findings().front());
  };
  std::vector<std::uint64_t> reference;
  {
    auto k = boot(4);
    for (unsigned cpu = 1; cpu <= 3; ++cpu)
      k->machine().addTask({"mod", cpu, k->symbolAddress("mod_compute"), 7 + cpu});
    run(*k, 1);
    for (int t = 0; t < 3; ++t)
      reference.push_back(k->machine().task(t).result);
  }
  {
    auto k = boot(2);
    EXPECT_NE(k->tracefs().read("available_filter_functions").find("mod_scale [ftsim_mod]"),
              std::string::npos);
    k->tracefs().write("set_ftrace_filter", "mod_scale");
    k->tracefs().write("current_tracer", "function");
    const std::uint64_t site = siteOf(*k, "mod_scale");
    arch::Bytes bytes(4);
    ASSERT_TRUE(k->machine().readText(site, bytes));
    const auto target = k->image().arch->callTarget(site, bytes);
    ASSERT_TRUE(target);
    EXPECT_EQ(*target, k->symbolAddress("ftsim_mod_ftrace_tramp"));
    EXPECT_FALSE(k->image().arch->call(site, k->trampolines().ftraceCaller).ok);
    k->watchPatchSites();
    k->machine().addTask({"mod", 1, k->symbolAddress("mod_compute"), 8});
    run(*k, 2);
    EXPECT_EQ(k->machine().task(0).result, reference[0]);
    std::size_t calls = 0;
    for (const kernel::CallbackEvent &c : k->callbacks())
      calls += c.ip == site;
    EXPECT_EQ(calls, 6u); // mod_compute calls mod_scale six times
    EXPECT_NE(k->tracefs().read("trace").find("mod_scale <-mod_compute"), std::string::npos);
  }
  for (std::uint64_t seed : {3, 4}) {
    auto k = boot(4);
    k->watchPatchSites();
    for (unsigned cpu = 1; cpu <= 3; ++cpu)
      k->machine().addTask({"mod", cpu, k->symbolAddress("mod_compute"), 7 + cpu});
    k->patcher([](kernel::Kernel &kk) {
      kk.tracefs().write("current_tracer", "function");
      kk.tracefs().write("current_tracer", "function_graph");
      kk.tracefs().write("current_tracer", "nop");
    });
    run(*k, seed);
    for (int t = 0; t < 3; ++t)
      EXPECT_EQ(k->machine().task(t).result, reference[static_cast<std::size_t>(t)]) << seed;
  }
}

// A livepatched function on ppc32 (klp_ftrace_handler: klp_arch_set_pc(regs, new_func); Linux
// has HAVE_LIVEPATCH on PPC32 since v5.17): an IPMODIFY|SAVE_REGS ops on posix_cpu_timer_set sets
// pt_regs->nip to posix_cpu_timer_set_v2, and ftrace_regs_caller's exit (mtctr of the saved nip;
// bctr) enters the new version with LR still the caller's. With or without the ops' own
// trampoline, instruction-granular on 3 CPUs: every call after the patch is in returns the new
// result, none before it does, no CPU regresses, and a task that was inside the old body when the
// patch landed finishes it without a fault.
class Ppc32Livepatch : public ::testing::TestWithParam<bool> {};

TEST_P(Ppc32Livepatch, NewVersionEverywhereOnceInAndTheOldBodyFinishes) {
  FTSIM_REQUIRE_IMAGE("ppc32-mcount");
  bool sawInside = false;
  unsigned newCalls = 0;
  for (std::uint64_t seed = 1; seed <= 6 && !sawInside; ++seed) {
    kernel::KernelConfig config;
    config.machine.cpus = 3;
    config.protocol = "patch-instruction";
    config.opsTrampolines = GetParam();
    auto kernel = bootKernel("ppc32-mcount", config);
    kernel::Kernel &k = *kernel;
    const arch::ImageSymbol *old = k.image().findSymbol("posix_cpu_timer_set");
    ASSERT_NE(old, nullptr);
    const std::uint64_t site = siteOf(k, "posix_cpu_timer_set");
    const std::uint64_t v2 = k.symbolAddress("posix_cpu_timer_set_v2");
    model::FtraceOps klp(
        "klp_ops",
        [v2](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *regs) {
          if (regs)
            regs->setPc(v2);
        },
        model::OpsFlag::Dynamic | model::OpsFlag::SaveRegs | model::OpsFlag::IpModify);
    k.core().setFilter(klp, "posix_cpu_timer_set", true);
    // Step every execution of the site (its legal states include a trampoline not allocated yet).
    k.machine().watchSite(site, 4);
    const int t1 = k.addWorkload("timers", 1, seed);
    const int t2 = k.addWorkload("timers", 2, seed + 1);
    std::uint64_t begin = 0, end = 0;
    k.patcher([&](kernel::Kernel &kk) {
      kk.machine().synchronizeRcuTasks(); // the tasks call the old version for a while
      begin = kk.now();
      kk.core().registerFunction(klp);
      end = kk.now();
    });
    sim::RandomScheduler random(seed);
    ASSERT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
    ASSERT_TRUE(k.machine().findings().empty())
        << sim::formatFinding(k.machine().findings().front());
    for (int t : {t1, t2}) {
      const std::uint64_t r = k.machine().task(t).result;
      const unsigned v1Calls = r & 0xff, v2Calls = r >> 8 & 0xff;
      EXPECT_EQ(v1Calls + v2Calls, 16u) << "seed " << seed;
      EXPECT_EQ(r >> 16 & 1, 0u) << "the old version ran after the new one, seed " << seed;
      std::size_t before = 0, after = 0;
      bool inOld = false, insideAcross = false;
      for (const sim::EventRecord &e : k.machine().events()) {
        if (e.kind != sim::EventKind::Step || e.task != t)
          continue;
        if (e.pc == site) {
          before += e.index < begin;
          after += e.index >= end;
          inOld = false;
        } else if (e.pc > site && e.pc < old->addr + old->size) {
          if (e.index < end)
            inOld = true;
          else if (inOld)
            insideAcross = true;
        }
      }
      EXPECT_GE(v2Calls, after) << "seed " << seed;
      newCalls += v2Calls;
      EXPECT_GE(v1Calls, before) << "seed " << seed;
      sawInside = sawInside || insideAcross;
    }
  }
  EXPECT_TRUE(sawInside) << "no schedule put a task inside the old function across the patch";
  EXPECT_GT(newCalls, 0u) << "the new version never ran";
}

INSTANTIATE_TEST_SUITE_P(SharedRegsCallerOrOwnTrampoline, Ppc32Livepatch, ::testing::Bool());

// The trampoline-freeing scenarios on ppc32 are files: TrampolineCheckTest.cpp.

// Every ppc32 mutant is killed, each by the checker the issue names, and the correct protocols
// (Linux's patch-instruction without an IPI, patch-instruction-ipi, word-mflr) survive every
// checker.
TEST(Ppc32Mutants, EveryMutantIsKilledAndTheCorrectProtocolsSurvive) {
  const arch::Arch &isa = arch::archByName("ppc32");
  const MutationScore score = runMutants(isa, defaultMutantCheckers(isa));
  std::map<std::string, std::string> killer;
  std::string table;
  for (const MutantResult &r : score.results) {
    table += r.protocol + ": " + (r.killedBy.empty() ? "-" : r.killedBy.front()) + "\n";
    if (!r.killedBy.empty())
      killer[r.protocol] = r.killedBy.front();
    if (r.correct) {
      EXPECT_TRUE(r.killedBy.empty()) << r.protocol << " killed: " << r.evidence.front();
    }
  }
  EXPECT_EQ(score.mutants, 4u) << table; // mflr order, mflr grace, trap, truncation
  EXPECT_EQ(score.killed, score.mutants) << table;
  EXPECT_TRUE(score.correctSurvives) << table;
  EXPECT_EQ(killer.count("patch-instruction"), 0u) << table; // Linux's: no IPI, not killed
  EXPECT_EQ(killer["word-trap-first"], "cmodx:enable-modify-disable") << table;
  EXPECT_EQ(killer["bl-truncate"], "z3:bl-range") << table;
  EXPECT_TRUE(killer.count("word-mflr-wrong-order")) << table;
  EXPECT_TRUE(killer.count("word-mflr-no-grace")) << table;
  std::cout << table;
}

} // namespace
} // namespace ftsim::verify
