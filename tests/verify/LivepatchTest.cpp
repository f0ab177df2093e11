// Live kernel patching on the running x86-64 guest (Rostedt's slides, "Live Kernel Patching!" and
// "Another Solution"): posix_cpu_timer_set (returns version 1) is redirected to
// posix_cpu_timer_set_v2 (version 2) while tasks call it on two CPUs, either by an ftrace ops with
// IPMODIFY | SAVE_REGS whose callback sets regs->ip (klp_ftrace_handler), or by a `jmp` patched
// over the site. And int3-skips-call: the pre-2019 int3 handler skips a call that is
// being changed, so the old body runs although the livepatch is active.

#include "../kernel/KernelFixture.h"

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/RandomScheduler.h"

#include <gtest/gtest.h>

namespace ftsim::verify {
namespace {

using kernel::testing::bootKernel;

struct TaskCounts {
  unsigned v1 = 0, v2 = 0;
  bool regressed = false;
};
TaskCounts countsOf(std::uint64_t result) {
  return {static_cast<unsigned>(result & 0xff), static_cast<unsigned>(result >> 8 & 0xff),
          (result >> 16 & 1) != 0};
}

kernel::KernelConfig instructionGranular(unsigned cpus, bool trampolines,
                                         std::string protocol = "int3") {
  kernel::KernelConfig config;
  config.machine.cpus = cpus;
  config.opsTrampolines = trampolines;
  config.protocol = std::move(protocol);
  return config;
}

// klp_ftrace_handler(): klp_arch_set_pc(regs, new_func).
model::FtraceOps livepatchOps(std::uint64_t newFunction) {
  return model::FtraceOps(
      "klp_ops",
      [newFunction](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *regs) {
        if (regs)
          regs->setPc(newFunction);
      },
      model::OpsFlag::Dynamic | model::OpsFlag::SaveRegs | model::OpsFlag::IpModify);
}

enum class Method { IpModifyShared, IpModifyTrampoline, Jump };

struct LivepatchRun {
  std::uint64_t begin = 0, end = 0; // the patch is being applied in [begin, end)
  std::vector<TaskCounts> counts;
  std::vector<std::size_t> callsBefore, callsAfter; // site executions before begin / after end
  int insideTask = -1;                              // a task executing the old body across `end`
};

LivepatchRun livepatch(Method method, std::uint64_t seed) {
  auto kernel =
      bootKernel("x86_64-fentry", instructionGranular(3, method == Method::IpModifyTrampoline));
  kernel::Kernel &k = *kernel;
  const arch::ImageSymbol *old = k.image().findSymbol("posix_cpu_timer_set");
  const std::uint64_t v2 = k.symbolAddress("posix_cpu_timer_set_v2");
  model::FtraceOps klp = livepatchOps(v2);
  k.core().setFilter(klp, "posix_cpu_timer_set", true);
  k.machine().watchSite(old->addr, 5);
  const int t1 = k.addWorkload("timers", 1, seed);
  const int t2 = k.addWorkload("timers", 2, seed + 1);
  LivepatchRun run;
  k.patcher([&](kernel::Kernel &kk) {
    kk.machine().synchronizeRcuTasks(); // the tasks call the old version for a while
    run.begin = kk.now();
    if (method == Method::Jump) {
      // "Have this!": jmp posix_cpu2 over the (nop) fentry site, with text_poke_bp.
      kk.protocol().pokeNow(
          {old->addr, kk.image().arch->nop(), kk.image().arch->jump(old->addr, v2).bytes});
    } else {
      kk.core().registerFunction(klp);
    }
    run.end = kk.now();
  });
  sim::RandomScheduler random(seed);
  EXPECT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
  EXPECT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());
  for (int t : {t1, t2}) {
    EXPECT_EQ(k.machine().task(t).state, sim::TaskState::Exited);
    run.counts.push_back(countsOf(k.machine().task(t).result));
    std::size_t before = 0, after = 0;
    std::uint64_t lastCall = 0;
    bool sawBodyBefore = false;
    for (const sim::EventRecord &e : k.machine().events()) {
      if (e.kind != sim::EventKind::Step || e.task != t)
        continue;
      if (e.pc == old->addr) {
        before += e.index < run.begin;
        after += e.index >= run.end;
        lastCall = e.index;
        sawBodyBefore = false;
      } else if (e.pc > old->addr && e.pc < old->addr + old->size && lastCall) {
        if (e.index < run.end)
          sawBodyBefore = true;
        else if (sawBodyBefore)
          run.insideTask = t;
      }
    }
    run.callsBefore.push_back(before);
    run.callsAfter.push_back(after);
  }
  return run;
}

void checkLivepatch(Method method) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  bool sawInside = false;
  for (std::uint64_t seed = 1; seed <= 6 && !sawInside; ++seed) {
    const LivepatchRun run = livepatch(method, seed);
    for (std::size_t i = 0; i < run.counts.size(); ++i) {
      const TaskCounts &c = run.counts[i];
      EXPECT_EQ(c.v1 + c.v2, 16u) << "seed " << seed;
      // Once the new version ran on a CPU, the old one never runs there again...
      EXPECT_FALSE(c.regressed) << "seed " << seed;
      // ...every call made once the patch is in gets the new version's result, and every call
      // made before it started got the old one.
      EXPECT_GE(c.v2, run.callsAfter[i]) << "seed " << seed;
      EXPECT_GE(c.v1, run.callsBefore[i]) << "seed " << seed;
    }
    // A task that was inside the old body when the patch landed finished it without a fault
    // (no findings, the task exited with 16 results).
    sawInside = run.insideTask >= 0;
    if (sawInside) {
      // The patch landed mid-run: calls on both sides of it.
      EXPECT_GT(run.callsBefore[0] + run.callsBefore[1], 0u) << "seed " << seed;
      EXPECT_GT(run.callsAfter[0] + run.callsAfter[1], 0u) << "seed " << seed;
      ::testing::Test::RecordProperty("seed", static_cast<int>(seed));
    }
  }
  EXPECT_TRUE(sawInside) << "no schedule put a task inside the old function across the patch";
}

TEST(Livepatch, IpModifyOpsThroughTheSharedRegsCaller) { checkLivepatch(Method::IpModifyShared); }
TEST(Livepatch, IpModifyOpsThroughItsOwnTrampoline) { checkLivepatch(Method::IpModifyTrampoline); }
TEST(Livepatch, AnotherSolutionJmpOverTheSite) { checkLivepatch(Method::Jump); }

// int3-skips-call (2700fefdb2d9, 4b33dadf3766, 9e298e860408): the livepatch ops has the site to
// itself (call klp trampoline); a second ops on the function moves the site to
// ftrace_regs_caller (call -> call). A CPU that reaches the site while it holds the int3: today's
// handler emulates the new call (the list function runs the livepatch too); the old handler
// jumped over the site as if it were a nop, and the old, unpatched body ran.
TaskCounts int3DuringCallToCall(const std::string &protocol, bool &hitInt3) {
  auto kernel = bootKernel("x86_64-fentry", instructionGranular(2, true, protocol));
  kernel::Kernel &k = *kernel;
  const std::uint64_t site = k.symbolAddress("posix_cpu_timer_set");
  model::FtraceOps klp = livepatchOps(k.symbolAddress("posix_cpu_timer_set_v2"));
  k.core().setFilter(klp, "posix_cpu_timer_set", true);
  k.core().registerFunction(klp); // at boot: the site calls the klp trampoline
  EXPECT_EQ(k.siteTarget(site), klp.trampoline);
  model::FtraceOps counter(
      "counter", [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {});
  k.core().setFilter(counter, "posix_cpu_timer_set", true);
  const int task = k.addWorkload("timers", 1, 5);
  k.patcher([&](kernel::Kernel &kk) { kk.core().registerFunction(counter); });

  // The patcher (and its IPIs) first, except between the int3 landing on the site and CPU 1
  // hitting it, when CPU 1 runs.
  enum { Patch, Hit, Rest } phase = Patch;
  hitInt3 = false;
  sim::FunctionScheduler scheduler([&](const sim::Machine &m,
                                       const sim::DecisionPoint &p) -> std::uint32_t {
    if (p.kind == sim::DecisionKind::StaleByte)
      return p.options - 1;
    if (phase == Patch && m.viewBytes(0, site, 1)[0] == 0xcc)
      phase = Hit;
    if (phase == Hit && !m.events().empty()) {
      const sim::EventRecord &e = m.events().back();
      if (e.kind == sim::EventKind::Step && e.cpu == 1 &&
          e.outcome == sim::StepOutcome::TrapHandled && e.detail == site) {
        hitInt3 = true;
        phase = Rest;
      }
    }
    auto find = [&](auto pred) -> std::optional<std::uint32_t> {
      for (std::uint32_t i = 0; i < p.options; ++i)
        if (pred(p.events[i]))
          return i;
      return std::nullopt;
    };
    if (phase != Hit) {
      if (auto i = find([](const sim::EventChoice &e) {
            return e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish;
          }))
        return *i;
      if (auto i = find([](const sim::EventChoice &e) { return e.kind == sim::EventKind::Ipi; }))
        return *i;
    }
    if (phase == Hit)
      if (auto i = find([](const sim::EventChoice &e) {
            return e.cpu == 1 && e.kind == sim::EventKind::Step;
          }))
        return *i;
    return 0;
  });
  EXPECT_EQ(k.run(scheduler).status, sim::RunResult::Status::Completed);
  EXPECT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());
  EXPECT_EQ(k.machine().task(task).state, sim::TaskState::Exited);
  EXPECT_EQ(k.siteTarget(site), 0u); // now ftrace_regs_caller
  return countsOf(k.machine().task(task).result);
}

TEST(Int3SkipsCall, OldHandlerRunsTheOldBodyWhileTheLivepatchIsActive) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  bool hit = false;
  const TaskCounts fixed = int3DuringCallToCall("int3", hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(fixed.v1, 0u);
  EXPECT_EQ(fixed.v2, 16u);
  const TaskCounts skip = int3DuringCallToCall("int3-skip", hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(skip.v1, 1u) << "the skipped call ran the old version";
  EXPECT_EQ(skip.v2, 15u);
}

} // namespace
} // namespace ftsim::verify
