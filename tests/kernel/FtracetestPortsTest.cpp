// Ports of Linux's ftracetest cases (tools/testing/selftests/ftrace/test.d/ftrace/*.tc) onto the
// simulated tracefs of a guest running workloads on 4 CPUs. `sleep` is an RCU-tasks grace period
// of the patcher (the workloads run on meanwhile); every write patches text as scheduled events.
// Function names are the guest's: do_softirq and mutex_* do not exist there, so the glob cases
// use the guest's spinlocks instead (said where it happens).

#include "KernelFixture.h"

#include "ftsim/sim/RandomScheduler.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace ftsim::kernel {
namespace {

using testing::bootKernel;
using testing::fastConfigFor;

// Each port runs on x86-64 (fentry) and on ppc32 (-pg): the same tracefs, engine and tracers over
// each ISA's trampolines and patch protocol (int3 batch / aligned word store + icache sync).
class Ftracetest : public ::testing::TestWithParam<const char *> {};

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::size_t countLines(const std::string &text, const std::function<bool(const std::string &)> &p) {
  std::size_t n = 0;
  for (const std::string &l : lines(text))
    n += p(l);
  return n;
}

bool comment(const std::string &l) { return !l.empty() && l[0] == '#'; }

// Runs `body` as the patcher while the workloads run, to completion.
void scenario(Kernel &k, std::function<void(Kernel &, std::function<void()> sleep)> body,
              unsigned rounds = 1, int gracePeriods = 3) {
  k.watchPatchSites();
  for (unsigned round = 0; round < rounds; ++round)
    for (unsigned cpu = 1; cpu < 4; ++cpu)
      for (const char *w : {"sched", "mixed", "sched", "mixed", "sched", "sched", "sched", "sched"})
        k.addWorkload(w, cpu, cpu);
  // `sleep`: RCU-tasks grace periods (default three), so every task passes through schedule().
  // gracePeriods 0: sleep (one no-op publication at a time, the other CPUs running meanwhile)
  // until schedule()'s site has run again (seen in the event log): the shortest sleep after
  // which a probe on schedule must have fired.
  k.patcher([body, gracePeriods](Kernel &kk) {
    body(kk, [&kk, gracePeriods] {
      for (int i = 0; i < gracePeriods; ++i)
        kk.machine().synchronizeRcuTasks();
      if (gracePeriods)
        return;
      const std::uint64_t site = testing::siteOf(kk, "schedule");
      std::uint64_t scanned = kk.now();
      for (int i = 0; i < 100000; ++i) {
        kk.machine().publish("sleep", [] {}); // one event: the other CPUs run meanwhile
        const auto events = kk.machine().events();
        for (; scanned < events.size(); ++scanned)
          if (events[scanned].kind == sim::EventKind::Step && events[scanned].pc == site) {
            // Let the call reach its callbacks (the trampoline runs after the site).
            for (int j = 0; j < 400; ++j)
              kk.machine().publish("sleep", [] {});
            return;
          }
      }
      ADD_FAILURE() << "schedule() no longer runs";
    });
  });
  sim::RandomScheduler random(11);
  ASSERT_EQ(k.run(random).status, sim::RunResult::Status::Completed);
  ASSERT_TRUE(k.machine().findings().empty()) << sim::formatFinding(k.machine().findings().front());
}

// fgraph-filter.tc: with set_ftrace_filter = schedule, function_graph shows schedule() only.
TEST_P(Ftracetest, FgraphFilter) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
  std::string trace;
  scenario(*kernel, [&](Kernel &k, auto sleep) {
    auto &fs = k.tracefs();
    fs.write("tracing_on", "0");
    fs.write("trace", "");
    fs.write("set_ftrace_filter", "schedule");
    fs.write("current_tracer", "function_graph");
    fs.write("tracing_on", "1");
    sleep();
    trace = fs.read("trace");
  });
  EXPECT_EQ(countLines(trace,
                       [](const std::string &l) {
                         return l.find("()") != std::string::npos &&
                                l.find("schedule") == std::string::npos;
                       }),
            0u)
      << "Graph filtering not working by itself?\n"
      << trace;
  EXPECT_GT(
      countLines(trace,
                 [](const std::string &l) { return l.find("schedule()") != std::string::npos; }),
      0u)
      << "No schedule traces found?\n"
      << trace;
}

// A call that went through a site before a filter change took the site away can still be on its
// way through ftrace_caller, preempted, and be recorded when it reaches ftrace_call afterwards: as
// in Linux, the list function tests the hashes when the call reaches it, a trace function called
// directly from ftrace_call (one ops registered) tests none, and only dynamic ops wait for tasks
// still in the shared trampolines. The .tc files clear the trace at once and rely on such a call
// being rare (a real task is seldom preempted there); where the ports below must not see one, they
// clear or restart after a grace period, which every task preempted in a trampoline delays until
// it has left it. What they check is then what a user reads once the change is in effect.

// func_profiler.tc: the profiler runs with the function tracer, and filtering still works.
TEST_P(Ftracetest, FuncProfiler) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
  std::string onlySchedule, everything, stat;
  scenario(
      *kernel,
      [&](Kernel &k, auto sleep) {
        auto &fs = k.tracefs();
        fs.write("current_tracer", "function");
        fs.write("function_profile_enabled", "1");
        sleep();
        fs.write("set_ftrace_filter", "*schedule");
        stat = fs.read("trace_stat/function1") + fs.read("trace_stat/function2");
        fs.write("function_profile_enabled", "0");
        // Calls past a site the filter took away are done (see above).
        k.machine().synchronizeRcuTasks();
        fs.write("trace", "");
        sleep();
        onlySchedule = fs.read("trace");
        fs.write("set_ftrace_filter", "");
        fs.write("trace", "");
        sleep();
        everything = fs.read("trace");
      },
      2, 1); // two rounds of workloads, one grace period per sleep: some still run at the end
  auto notSchedule = [](const std::string &l) {
    return !comment(l) && l.find("schedule") == std::string::npos;
  };
  EXPECT_EQ(countLines(onlySchedule, notSchedule), 0u) << "more than schedule was found";
  EXPECT_GT(countLines(onlySchedule,
                       [](const std::string &l) {
                         return !comment(l) && l.find("schedule") != std::string::npos;
                       }),
            0u)
      << "can not find schedule in trace";
  EXPECT_GT(countLines(everything, notSchedule), 0u)
      << "no other functions besides schedule was found";
  EXPECT_NE(stat.find("  Function                               Hit    Time"), std::string::npos);
  EXPECT_GT(
      countLines(stat, [](const std::string &l) { return l.find(" us ") != std::string::npos; }),
      0u)
      << stat;
}

// func_traceonoff_triggers.tc: schedule:traceoff stops tracing, traceon restarts it, counts.
TEST_P(Ftracetest, FuncTraceonoffTriggers) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  KernelConfig config = fastConfigFor(GetParam());
  config.machine.maxTasks = 256; // enough workloads to keep calling schedule through every sleep
  auto kernel = bootKernel(GetParam(), config);
  scenario(
      *kernel,
      [&](Kernel &k, auto sleep) {
        auto &fs = k.tracefs();
        auto cntTrace = [&] {
          return countLines(fs.read("trace"), [](const std::string &l) { return !comment(l); });
        };
        auto grepSchedule = [&] {
          return countLines(fs.read("set_ftrace_filter"), [](const std::string &l) {
            return l.find("schedule") != std::string::npos;
          });
        };
        fs.write("current_tracer", "function");
        fs.write("tracing_on", "0");
        fs.write("trace", "");
        EXPECT_EQ(cntTrace(), 0u) << "Found junk in trace";
        fs.write("tracing_on", "1");
        sleep();
        EXPECT_GT(cntTrace(), 0u) << "Nothing found in trace";
        fs.write("set_ftrace_filter", "schedule:traceoff");
        EXPECT_EQ(grepSchedule(), 1u) << "Did not find traceoff trigger";
        sleep();
        const std::size_t cnt = cntTrace();
        sleep();
        EXPECT_EQ(cntTrace(), cnt) << "Tracing is not stopped";
        EXPECT_EQ(fs.read("tracing_on"), "0\n") << "Tracing is not off";
        const std::string csum1 = fs.read("trace");
        sleep();
        EXPECT_EQ(fs.read("trace"), csum1) << "Tracing file is still changing";
        fs.write("trace", "");
        EXPECT_EQ(cntTrace(), 0u) << "Tracing is still happening";
        fs.write("set_ftrace_filter", "!schedule:traceoff", true);
        EXPECT_EQ(grepSchedule(), 0u) << "traceoff trigger still exists";
        EXPECT_EQ(fs.read("tracing_on"), "0\n") << "Tracing is started again";
        fs.write("set_ftrace_filter", "schedule:traceon");
        EXPECT_EQ(grepSchedule(), 1u) << "traceon trigger not found";
        sleep();
        EXPECT_GT(cntTrace(), 0u) << "Tracing did not start";
        EXPECT_EQ(fs.read("tracing_on"), "1\n") << "Tracing was not enabled";
        fs.write("set_ftrace_filter", "!schedule:traceon", true);
        EXPECT_EQ(grepSchedule(), 0u) << "traceon trigger still exists";
        fs.write("set_ftrace_filter", "schedule:traceoff:3");
        for (const char *expected : {"0\n", "0\n", "0\n", "1\n"}) {
          sleep();
          EXPECT_EQ(fs.read("tracing_on"), expected) << "after " << k.now() << " events";
          fs.write("tracing_on", "1");
        }
        fs.write("set_ftrace_filter", "!schedule:traceoff:0");
        EXPECT_EQ(fs.read("set_ftrace_filter").find("trace"), std::string::npos)
            << "Tracing on and off triggers still exist";
      },
      2, 0);
}

// func_stack_tracer.tc: with stack_trace_filter '*lock*', the deepest stack's first entry is a
// lock function; the filter file lists only lock functions.
TEST_P(Ftracetest, FuncStackTracer) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
  std::string unfiltered, filtered, filterFile;
  scenario(
      *kernel,
      [&](Kernel &k, auto sleep) {
        auto &fs = k.tracefs();
        fs.write("stack_trace_filter", "");
        fs.write("stack_max_size", "0");
        fs.write("/proc/sys/kernel/stack_tracer_enabled", "1");
        sleep();
        unfiltered = fs.read("stack_trace");
        fs.write("/proc/sys/kernel/stack_tracer_enabled", "0");
        // No call begun unfiltered is left to reach the filtered tracer (see above).
        k.machine().synchronizeRcuTasks();
        fs.write("stack_trace_filter", "*lock*");
        filterFile = fs.read("stack_trace_filter");
        fs.write("stack_max_size", "0");
        fs.write("/proc/sys/kernel/stack_tracer_enabled", "1");
        sleep();
        filtered = fs.read("stack_trace");
        fs.write("/proc/sys/kernel/stack_tracer_enabled", "0");
      },
      2, 2); // two rounds of workloads, two grace periods per sleep: some still run after the
             // extra grace period
  EXPECT_EQ(countLines(filterFile, [](const std::string &) { return true; }),
            countLines(filterFile,
                       [](const std::string &l) { return l.find("lock") != std::string::npos; }));
  auto first = [](const std::string &t) {
    for (const std::string &l : lines(t))
      if (l.find("  0)") == 0)
        return l;
    return std::string();
  };
  EXPECT_NE(first(filtered).find("lock"), std::string::npos) << filtered;
  EXPECT_FALSE(first(unfiltered).empty()) << unfiltered;
  EXPECT_NE(filtered.find("        Depth    Size   Location    ("), std::string::npos);
}

// func-filter-glob.tc, on the guest's names ('mutex*try*' -> '_raw*try*', '[Ss]y[Ss]_*' ->
// '[Pp]ut_*': the guest has no mutexes nor syscalls).
TEST_P(Ftracetest, FuncFilterGlob) {
  FTSIM_REQUIRE_IMAGE(GetParam());
  auto kernel = bootKernel(GetParam(), fastConfigFor(GetParam()));
  auto &fs = kernel->tracefs();
  const std::vector<std::string> available = lines(fs.read("available_filter_functions"));
  auto check = [&](const std::string &glob, const std::string &regex) {
    fs.write("set_ftrace_filter", glob);
    std::vector<std::string> expected;
    const std::regex re(regex);
    for (const std::string &f : available)
      if (std::regex_search(f, re))
        expected.push_back(f);
    EXPECT_EQ(lines(fs.read("set_ftrace_filter")), expected) << glob;
  };
  check("*schedule", "^.*schedule$");
  check("*schedule*", "^.*schedule.*$");
  check("schedule*", "^schedule.*$");
  check("*pin*lock", ".*pin.*lock$");
  check("_raw*try*", "^_raw.*try.*");
  check("sch*ule", "^sch.*ule$");
  check("[Pp]ut_*", "^[Pp]ut_.*$");
  fs.write("set_ftrace_filter", "sch?dule");
  EXPECT_EQ(fs.read("set_ftrace_filter"), "schedule\n");
  fs.write("set_ftrace_filter", "");
}

INSTANTIATE_TEST_SUITE_P(Images, Ftracetest, FTSIM_KERNEL_IMAGES, testing::flavourName);

} // namespace
} // namespace ftsim::kernel
