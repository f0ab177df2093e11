// ftsim trace as a user runs it: Linux's trace formats, every call of a filtered function exactly
// once, the same output for the same seed.

#include "FtsimRun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

std::pair<int, std::string> trace(const std::string &args) {
  const ftsim::test::CommandRun r = ftsim::test::runFtsim("trace " + args);
  return {r.status, r.out};
}

std::vector<std::string> bodyLines(const std::string &out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      lines.push_back(line);
  return lines;
}

} // namespace

TEST(TraceCli, FunctionTracerPrintsEveryFilteredCallOnceInLinuxFormat) {
  const auto [status, out] =
      trace("--arch x86_64 --cpus 2 --tracer function --filter vfs_setpos --workload fs");
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(
      out.rfind("# tracer: function\n#\n# entries-in-buffer/entries-written: 18/18   #P:2\n", 0),
      0u)
      << out;
  EXPECT_NE(out.find("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"),
            std::string::npos);
  // workload_fs calls vfs_setpos 4 times directly and 5 times through default_llseek ->
  // fixed_size_llseek, both tail calls, so the parent shown is workload_fs (as Linux shows it).
  const auto lines = bodyLines(out);
  ASSERT_EQ(lines.size(), 18u);
  const std::regex line(
      R"( +workload_fs-[12] +\[00[01]\] \.{5} +\d+\.\d{6}: vfs_setpos <-workload_fs)");
  for (const auto &l : lines)
    EXPECT_TRUE(std::regex_match(l, line)) << "'" << l << "'";
  // Same seed, same bytes.
  EXPECT_EQ(
      trace("--arch x86_64 --cpus 2 --tracer function --filter vfs_setpos --workload fs").second,
      out);
}

TEST(TraceCli, FunctionGraphNestsCallsUnderTheGraphFunction) {
  const auto [status, out] = trace("--arch x86_64 --cpus 1 --tracer function_graph --workload fs "
                                   "--graph-function default_llseek");
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(
      out.rfind("# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n",
                0),
      0u)
      << out;
  const auto lines = bodyLines(out);
  // Five default_llseek calls, each: entry, fixed_size_llseek entry, vfs_setpos leaf, two '}'.
  ASSERT_EQ(lines.size(), 25u) << out;
  const std::regex entry(R"( 0\)               \|  default_llseek\(\) \{)");
  const std::regex nested(R"( 0\)               \|    fixed_size_llseek\(\) \{)");
  const std::regex leaf(R"( 0\) +\d+\.\d{3} us    \|      vfs_setpos\(\);)");
  const std::regex close(R"( 0\) +\d+\.\d{3} us    \|  (  )?\})");
  for (std::size_t i = 0; i < lines.size(); i += 5) {
    EXPECT_TRUE(std::regex_match(lines[i], entry)) << lines[i];
    EXPECT_TRUE(std::regex_match(lines[i + 1], nested)) << lines[i + 1];
    EXPECT_TRUE(std::regex_match(lines[i + 2], leaf)) << lines[i + 2];
    EXPECT_TRUE(std::regex_match(lines[i + 3], close)) << lines[i + 3];
    EXPECT_TRUE(std::regex_match(lines[i + 4], close)) << lines[i + 4];
  }
}

TEST(TraceCli, BadTracerOrFilterIsOneLineAndExitTwo) {
  for (const char *args : {"--arch x86_64 --tracer wakeup", "--arch x86_64 --filter 'sched[' "}) {
    const auto [status, out] = trace(args);
    EXPECT_EQ(status, 2) << args << "\n" << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << args << "\n" << out;
  }
}

// Enabling at scale: the function tracer on every site of a synthetic image costs Linux's 3 syncs
// per batch of at most 256 sites, whatever the number of CPUs; the counts are deterministic.
TEST(TraceCli, SyntheticEnablingCostsThreeSyncsPerBatch) {
  const auto [status, out] = trace("--synthetic 3000 --cpus 2");
  ASSERT_EQ(status, 0) << out;
  const std::regex summary(
      R"(synthetic-3000 \(2 CPUs, int3 protocol\): function tracer on 3000 records: (\d+) batches, (\d+) syncs, (\d+) stores, (\d+) sites patched, \d+ machine events\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out, m, summary)) << out;
  const unsigned long batches = std::stoul(m[1]), syncs = std::stoul(m[2]),
                      stores = std::stoul(m[3]), sites = std::stoul(m[4]);
  EXPECT_GE(sites, 3000u);
  EXPECT_EQ(syncs, 3 * batches);
  EXPECT_GE(batches, (sites + 255) / 256); // no batch holds more than 256 sites
  EXPECT_LT(batches, sites / 64);          // and they are batches, not one sync round per site
  EXPECT_EQ(stores, 3 * sites);            // int3, the tail, the first byte
  const auto [status4, out4] = trace("--synthetic 3000 --cpus 4");
  ASSERT_EQ(status4, 0) << out4;
  EXPECT_NE(out4.find(std::to_string(batches) + " batches, " + std::to_string(syncs) + " syncs"),
            std::string::npos)
      << out4;
  EXPECT_EQ(trace("--synthetic 3000 --cpus 2").second, out);
  // As Linux 4.19: ftrace's own breakpoint code passes over every record, so the 3000 sites are
  // one batch; the other four are ftrace_call and ftrace_regs_call, each switched to the list
  // function and then to the tracer (12 batches of sites and the same four with today's queue).
  const auto [status419, out419] = trace("--synthetic 3000 --cpus 2 --linux 4.19");
  ASSERT_EQ(status419, 0) << out419;
  EXPECT_EQ(batches, (3000u + 255) / 256 + 4) << out;
  EXPECT_NE(out419.find("(2 CPUs, int3-skip protocol)"), std::string::npos) << out419;
  EXPECT_NE(out419.find(": 5 batches, 15 syncs, " + std::to_string(stores) + " stores, "),
            std::string::npos)
      << out419;
  // Flags that belong to a trace of workloads are refused, naming both.
  const ftsim::test::CommandRun bad = ftsim::test::runFtsim("trace --synthetic 10 --workload fs");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--synthetic and --workload exclude each other"), std::string::npos)
      << bad.out;
}
