// The simulated kernel: boot on the machine, trampolines as guest code, engine operations as the
// machine's patcher, transparency of tracing, the breakpoint walk-through on another CPU's view.

#include "KernelFixture.h"

#include "ftsim/arch/Error.h"

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

namespace ftsim::kernel {
namespace {

using testing::bootKernel;
using testing::fastConfig;
using testing::fastConfigFor;

const char *const kWorkloads[] = {"sched", "mm", "fs", "mixed"};

TEST(Kernel, BootsX86FentryAndPrintsTheAllocationLine) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto kernel = bootKernel("x86_64-fentry", fastConfig());
  const auto &report = kernel->bootReport();
  EXPECT_EQ(report.converted, report.entries);
  EXPECT_GT(report.entries, 30u);
  EXPECT_EQ(report.allocationLine(),
            fmt::format("ftrace: allocating {} entries in 1 pages", report.entries));
  const arch::Arch &isa = *kernel->image().arch;
  kernel->core().records().forEach([&](const model::DynFtrace &rec) {
    for (unsigned cpu = 0; cpu < 4; ++cpu)
      EXPECT_EQ(kernel->machine().viewBytes(cpu, rec.ip, 5), isa.nop());
  });
}

// One workload task per CPU 1..3 (CPU 0 is the patcher's); the results, in task order.
std::vector<std::uint64_t> results(Kernel &kernel, std::size_t tasks) {
  std::vector<std::uint64_t> out;
  for (std::size_t t = 0; t < tasks; ++t) {
    EXPECT_EQ(kernel.machine().task(static_cast<int>(t)).state, sim::TaskState::Exited)
        << kernel.machine().task(static_cast<int>(t)).name;
    out.push_back(kernel.machine().task(static_cast<int>(t)).result);
  }
  return out;
}

std::size_t addWorkloads(Kernel &kernel, std::uint64_t seed) {
  std::size_t n = 0;
  for (const char *w : kWorkloads) {
    kernel.addWorkload(w, static_cast<unsigned>(1 + n % 3), seed + n);
    ++n;
  }
  return n;
}

class Transparency : public ::testing::TestWithParam<const char *> {};

// The transparency oracle: the same checksums untraced, and traced while the patcher switches the
// function tracer, function_graph and the profiler on and off under random schedules; no finding.
TEST_P(Transparency, WorkloadsComputeTheSameChecksumsTracedAndUntraced) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  std::vector<std::uint64_t> reference;
  {
    auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
    const std::size_t n = addWorkloads(*kernel, 7);
    sim::RoundRobinScheduler rr;
    ASSERT_EQ(kernel->run(rr).status, sim::RunResult::Status::Completed);
    EXPECT_TRUE(kernel->machine().findings().empty()) << kernel->machine().logText();
    reference = results(*kernel, n);
  }
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
    kernel->watchPatchSites();
    const std::size_t n = addWorkloads(*kernel, 7);
    kernel->patcher([](Kernel &k) {
      auto &fs = k.tracefs();
      fs.write("current_tracer", "function");
      fs.write("set_ftrace_filter", "*sched* put_page");
      fs.write("current_tracer", "function_graph");
      fs.write("set_ftrace_filter", "");
      fs.write("current_tracer", "nop");
      fs.write("function_profile_enabled", "1");
      fs.write("current_tracer", "function");
    });
    sim::RandomScheduler random(seed);
    ASSERT_EQ(kernel->run(random).status, sim::RunResult::Status::Completed);
    EXPECT_TRUE(kernel->machine().findings().empty())
        << sim::formatFinding(kernel->machine().findings().front());
    EXPECT_EQ(results(*kernel, n), reference) << "seed " << seed;
    EXPECT_FALSE(kernel->callbacks().empty());
    EXPECT_GT(kernel->tracefs().buffer().written(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(X86, Transparency, ::testing::Values("x86_64-fentry", "x86_64-mcount"),
                         [](const auto &p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });
// ppc32 BE, both call-site layouts (gcc -pg; -fpatchable-function-entry=2), word protocol.
INSTANTIATE_TEST_SUITE_P(Ppc32, Transparency, ::testing::Values("ppc32-mcount", "ppc32-pfe"),
                         testing::flavourName);

// ppc32 on the machine: the trampolines below kernel text, every site a nop in every CPU's view
// (gcc -pg: the `bl _mcount`; -fpatchable-function-entry=2: the second nop, with `mflr r0`
// patched in before it), and the allocation line.
TEST(Kernel, BootsPpc32BothLayouts) {
  for (const char *flavour : {"ppc32-mcount", "ppc32-pfe"}) {
    SCOPED_TRACE(flavour);
    auto kernel = bootKernel(flavour, fastConfigFor(flavour));
    const auto &report = kernel->bootReport();
    EXPECT_EQ(report.converted, report.entries);
    EXPECT_GT(report.entries, 30u);
    EXPECT_EQ(report.allocationLine(),
              fmt::format("ftrace: allocating {} entries in 1 pages", report.entries));
    const arch::Arch &isa = *kernel->image().arch;
    EXPECT_EQ(kernel->trampolines().base, (kernel->image().textStart() & ~0xfffull) - 0x10000);
    const bool pfe = std::string(flavour) == "ppc32-pfe";
    EXPECT_TRUE(kernel->trampolines().base > 0 &&
                kernel->machine().config().moduleBase < kernel->trampolines().base);
    kernel->core().records().forEach([&](const model::DynFtrace &rec) {
      for (unsigned cpu = 0; cpu < 4; ++cpu) {
        EXPECT_EQ(kernel->machine().viewBytes(cpu, rec.ip, 4), isa.nop());
        // pfe: mflr r0 right before the site; -pg: mflr r0; stw r0,4(r1) before it.
        EXPECT_EQ(kernel->machine().viewBytes(cpu, rec.ip - (pfe ? 4 : 8), 4),
                  (arch::Bytes{0x7c, 0x08, 0x02, 0xa6}));
        if (!pfe) {
          EXPECT_EQ(kernel->machine().viewBytes(cpu, rec.ip - 4, 4),
                    (arch::Bytes{0x90, 0x01, 0x00, 0x04}));
        }
      }
    });
  }
}

} // namespace
} // namespace ftsim::kernel

namespace ftsim::kernel {
namespace {

// The slides' breakpoint walk-through on the machine: while the patcher enables `schedule` with the
// int3 protocol, CPU 1's instruction view of the site passes through exactly the slides' states
// (0f 1f 44 00 00 -> cc 1f 44 00 00 -> cc <call tail> -> e8 <call>), observed at every decision.
TEST(KernelWalkThrough, CpuOneSeesTheSlidesByteStatesWhileScheduleIsEnabled) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto kernel = bootKernel("x86_64-fentry", fastConfig(2));
  Kernel &k = *kernel;
  const std::uint64_t site = k.symbolAddress("schedule");
  const arch::Arch &isa = *k.image().arch;
  k.addWorkload("sched", 1, 3);
  k.tracefs().write("set_ftrace_filter", "schedule");
  k.patcher([](Kernel &kk) { kk.tracefs().write("current_tracer", "function"); });
  std::vector<arch::Bytes> states;
  sim::FunctionScheduler observe([&](const sim::Machine &m, const sim::DecisionPoint &point) {
    arch::Bytes now = m.viewBytes(1, site, 5);
    if (states.empty() || states.back() != now)
      states.push_back(now);
    // Prefer the patcher's events, so the walk-through happens while CPU 1 is mid-workload.
    for (std::uint32_t i = 0; i < point.options; ++i)
      if (point.kind == sim::DecisionKind::Event &&
          (point.events[i].kind == sim::EventKind::Store ||
           point.events[i].kind == sim::EventKind::Publish))
        return i;
    return std::uint32_t{0};
  });
  ASSERT_EQ(k.run(observe).status, sim::RunResult::Status::Completed);
  EXPECT_TRUE(k.machine().findings().empty());
  const arch::Bytes call = isa.call(site, k.trampolines().ftraceCaller).bytes;
  arch::Bytes int3Nop = isa.nop();
  int3Nop[0] = 0xcc;
  arch::Bytes int3Call = call;
  int3Call[0] = 0xcc;
  // The slides' four states in order; under the word store model the 4-byte tail may land in
  // more than one store (the site is not 8-byte aligned), adding states between the 2nd and 3rd,
  // all of them behind the int3.
  std::string walk;
  for (const auto &s : states)
    walk += arch::hexBytes(s) + " = " + arch::describeBytes(isa, s, site) + "\n";
  ASSERT_GE(states.size(), 4u) << walk;
  EXPECT_EQ(states.front(), isa.nop()) << walk;
  EXPECT_EQ(states[1], int3Nop) << walk;
  EXPECT_EQ(states[states.size() - 2], int3Call) << walk;
  EXPECT_EQ(states.back(), call) << walk;
  for (std::size_t i = 1; i + 1 < states.size(); ++i)
    EXPECT_EQ(states[i][0], 0xcc) << walk;
  RecordProperty("walk", walk);
}

// A Linux profile on a kernel (what `ftsim trace --linux` does): the release's protocol for the
// image's ISA, its update order and trampoline freeing, applied by the booted core; a protocol the
// release did not have is refused.
TEST(KernelProfile, LinuxProfileSetsProtocolOrderAndFreeing) {
  KernelConfig config;
  applyLinuxProfile(config, "3.13", "x86_64");
  EXPECT_EQ(config.protocol, "int3-skip");
  EXPECT_TRUE(config.pre59338f754a55);
  EXPECT_TRUE(config.pre405e1d834807);
  EXPECT_EQ(config.freePolicy.free, model::TrampolineFree::Immediate);
  KernelConfig ppc;
  applyLinuxProfile(ppc, "6.12", "ppc32");
  EXPECT_EQ(ppc.protocol, "patch-instruction");
  EXPECT_FALSE(ppc.pre59338f754a55);
  EXPECT_FALSE(ppc.pre405e1d834807);
  EXPECT_TRUE(ppc.freePolicy.syncWhenUnchanged);
  KernelConfig conflicting;
  conflicting.protocol = "int3";
  std::string message;
  try {
    applyLinuxProfile(conflicting, "4.19", "x86_64");
  } catch (const FatalError &e) {
    message = e.what();
  }
  EXPECT_NE(
      message.find("--protocol int3 is not Linux 4.19's patch protocol on x86_64 (int3-skip)"),
      std::string::npos)
      << message;
  // The booted engine uses the order the profile chose.
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto k = bootKernel("x86_64-fentry", config);
  EXPECT_TRUE(k->core().pre59338f754a55Order());
  EXPECT_TRUE(k->core().pre405e1d834807());
}

} // namespace
} // namespace ftsim::kernel

namespace ftsim::kernel {
namespace {

// ftrace_caller loads function_trace_op into its third argument as guest code: with one static
// ops, ftrace_call calls its func directly and every call sees that ops in %rdx.
TEST(FunctionTraceOp, TheTrampolineLoadsItIntoTheThirdArgument) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  auto k = testing::bootKernel("x86_64-fentry", testing::fastConfig(2));
  model::FtraceOps a("static_ops_a",
                     [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {});
  k->core().setFilter(a, "posix_cpu_timer_set", true);
  k->core().registerFunction(a);
  EXPECT_EQ(k->core().traceFunction().kind, model::TraceFunction::Kind::OpsFunc);
  k->addWorkload("timers", 1, 1);
  sim::RoundRobinScheduler rr;
  const sim::RunResult r = k->run(rr, 200000);
  if (r.status != sim::RunResult::Status::Completed) {
    const auto events = k->machine().events();
    for (std::size_t i = events.size() > 40 ? events.size() - 40 : 0; i < events.size(); ++i)
      ADD_FAILURE() << sim::formatEvent(events[i]) << " " << k->symbolName(events[i].pc, true);
  }
  ASSERT_EQ(r.status, sim::RunResult::Status::Completed);
  EXPECT_EQ(k->callbacks().size(), 16u);
  EXPECT_TRUE(k->opMismatches().empty());
}

} // namespace
} // namespace ftsim::kernel

namespace ftsim::kernel {
namespace {

// 405e1d834807: before it, registering a second ops set function_trace_op (to ftrace_list_end) at
// once, while ftrace_call still called the first ops' func. A CPU that runs ftrace_caller in that
// window loads the new op and passes it to the old function. The schedule is pinned: the patcher
// runs until it publishes function_trace_op (before the fix: its first event), then CPU 1 runs.
TEST(FunctionTraceOp, Before405e1d834807TheOldFunctionCanGetTheNewOp) {
  FTSIM_REQUIRE_IMAGE("x86_64-fentry");
  for (bool pre : {true, false}) {
    auto k = testing::bootKernel("x86_64-fentry", testing::fastConfig(2));
    auto noop = [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {};
    model::FtraceOps a("static_ops_a", noop), b("static_ops_b", noop);
    k->core().setFilter(a, "posix_cpu_timer_set", true);
    k->core().setFilter(b, "posix_cpu_timer_set", true);
    k->core().setPre405e1d834807(pre);
    k->core().registerFunction(a);
    k->addWorkload("timers", 1, 1);
    k->patcher([&b](Kernel &kk) { kk.core().registerFunction(b); });
    sim::FunctionScheduler sched([&](const sim::Machine &m, const sim::DecisionPoint &p) {
      bool published = false;
      for (const sim::EventRecord &e : m.events())
        published = published || (e.kind == sim::EventKind::Publish &&
                                  m.publishName(e.detail) == "function_trace_op");
      for (std::uint32_t i = 0; i < p.options; ++i) {
        const bool patcher = p.events[i].kind == sim::EventKind::Store ||
                             p.events[i].kind == sim::EventKind::Publish;
        const bool cpu1 = p.events[i].cpu == 1 && p.events[i].kind != sim::EventKind::Ipi;
        if (published ? cpu1 : patcher)
          return i;
      }
      return 0u;
    });
    ASSERT_EQ(k->run(sched, 400000).status, sim::RunResult::Status::Completed) << pre;
    EXPECT_EQ(k->machine().task(0).state, sim::TaskState::Exited);
    if (pre) {
      ASSERT_FALSE(k->opMismatches().empty());
      EXPECT_EQ(k->opMismatches()[0].function, "static_ops_a");
      EXPECT_EQ(k->opMismatches()[0].op, "ftrace_list_end");
    } else {
      EXPECT_TRUE(k->opMismatches().empty()) << k->opMismatches()[0].op;
    }
  }
}

} // namespace
} // namespace ftsim::kernel
