// The engine-level commands as a user runs them: `ftsim check --tramp-free`, `ftsim check
// --scenario` on an engine-level scenario then `ftsim replay FILE --chrome OUT.json`, and
// `ftsim fuzz` (deterministic with --runs/--seed; pointed at a broken protocol it saves a replay
// file `ftsim replay` reproduces). Exit statuses 0/1/2/3 (Verdict.h) and one-line errors.

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

using ftsim::test::CommandRun;
using ftsim::test::runFtsim;

std::size_t lines(const std::string &s) { return ftsim::test::countLines(s); }

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

// A file in this test process's own directory.
std::string temp(const std::string &leaf) {
  static const ftsim::test::TempDir dir;
  return dir / leaf;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --- check --tramp-free (tramp-free-preempted: f3bea49115b2 -> 0598e4f08e3d)

TEST(CliTrampFree, ImmediateFreeWithPreemptionRunsInFreedMemoryAndReplays) {
  const std::string cex = temp("tramp-free-immediate.json");
  std::filesystem::remove(cex);
  const CommandRun r =
      runFtsim("check --tramp-free immediate --preempt --arch x86_64 --quiet --cex " + cex);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "VIOLATION trampoline-lifetime cpu1")) << r.out;
  EXPECT_TRUE(has(r.out, "freed trampoline memory")) << r.out;
  EXPECT_TRUE(has(r.out, "ftrace_trampoline")) << r.out;
  EXPECT_TRUE(has(r.out, "patcher free 0x")) << r.out; // the trail shows the free
  EXPECT_TRUE(has(r.out, "timer preemptions <= 1 around round robin")) << r.out;
  EXPECT_TRUE(has(r.out, "models: store word, fetch atomic")) << r.out;
  // Like every violation, it is a replay file.
  const CommandRun replay = runFtsim("replay " + cex);
  EXPECT_EQ(replay.status, 1) << replay.out;
  EXPECT_TRUE(has(replay.out, "reproduced: event log hash 0x")) << replay.out;
  EXPECT_TRUE(has(replay.out, "VIOLATION trampoline-lifetime cpu1")) << replay.out;
}

TEST(CliTrampFree, RcuTasksWithPreemptionVerifiesWithinTheStatedBounds) {
  const CommandRun r = runFtsim("check --tramp-free rcu-tasks --preempt --arch x86_64 --quiet");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "\nVERIFIED: no violation; rr-bounded within bounds: timer preemptions "
                         "<= 1 around round robin; 2 CPUs (patcher on cpu0), 2 tasks on cpu1 x "
                         "16 calls"))
      << r.out;
  // Every schedule within one preemption around round robin: one execution per preemption point
  // (about 490 on the built-in guest; the exact count follows the guest's code).
  const std::size_t at = r.out.find("\nexecutions ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const unsigned long executions = std::stoul(r.out.substr(at + 12));
  EXPECT_GT(executions, 100u) << r.out;
  EXPECT_TRUE(has(r.out, "(" + std::to_string(executions) + " executions, 0 cut")) << r.out;
  EXPECT_FALSE(has(r.out, "freed trampoline")) << r.out;
}

TEST(CliTrampFree, BadValuesAndFlagsThatDoNotApplyAreOneLineErrors) {
  const std::pair<const char *, const char *> cases[] = {
      {"check --tramp-free bogus --preempt", "unknown trampoline free variant 'bogus'"},
      {"check --tramp-free immediate --explore random --bound 1", "--bound"},
      {"check --tramp-free immediate --bound -2", "--bound -2"},
      {"check --tramp-free immediate --tramp-scenario nosuch", "--tramp-scenario 'nosuch'"},
      {"check --tramp-free immediate --cpus 4", "--cpus does not apply"},
      {"check --tramp-free immediate --sites 2", "--sites does not apply"},
      {"check --tramp-free immediate --explore nosuch", "unknown explorer 'nosuch'"},
      {"check --tramp-free immediate --explore exhaustive --continuation sideways",
       "--continuation 'sideways': known are run-on, round-robin"},
      {"check --tramp-free immediate --continuation round-robin",
       "--continuation belongs to the exhaustive search"},
      {"check --protocol int3 --continuation round-robin",
       "not to exhaustive search of a snippet scenario"},
  };
  for (const auto &[args, message] : cases) {
    const CommandRun r = runFtsim(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, message)) << args << "\n" << r.out;
  }
}

// --- check --scenario (engine level), replay, --chrome -------------------------------------------

TEST(CliEngineScenario, CheckWritesAReplayThatReplaysWithAChromeTrace) {
  const std::string cex = temp("int3-skips-call.json");
  const std::string chrome = temp("int3-skips-call.chrome.json");
  std::filesystem::remove(cex);
  std::filesystem::remove(chrome);
  const CommandRun check = runFtsim("check --scenario " + std::string(FTSIM_CORPORA_DIR) +
                                    "/scenarios/int3-skips-call.toml --quiet --cex " + cex);
  ASSERT_EQ(check.status, 1) << check.out;
  EXPECT_TRUE(has(check.out, "VIOLATION transparency")) << check.out;
  EXPECT_TRUE(has(check.out, "returned 0x10, the reference run returned 0x1000")) << check.out;
  EXPECT_TRUE(has(check.out, "replay: ftsim replay " + cex)) << check.out;

  const CommandRun replay = runFtsim("replay " + cex + " --chrome " + chrome);
  ASSERT_EQ(replay.status, 1) << replay.out; // the violation, reproduced
  EXPECT_TRUE(has(replay.out, "VIOLATION transparency")) << replay.out;
  EXPECT_TRUE(has(replay.out, "reproduced: event log hash 0x")) << replay.out;
  EXPECT_TRUE(has(replay.out, "chrome trace: " + chrome)) << replay.out;

  const nlohmann::json j = nlohmann::json::parse(readFile(chrome));
  std::set<unsigned> tracks, xTids;
  std::map<unsigned, std::uint64_t> lastTs;
  bool monotone = true, finding = false;
  for (const auto &e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name")
      tracks.insert(e.at("tid").get<unsigned>());
    if (ph == "X") {
      const unsigned tid = e.at("tid");
      const std::uint64_t ts = e.at("ts");
      if (xTids.count(tid) && ts <= lastTs[tid])
        monotone = false;
      xTids.insert(tid);
      lastTs[tid] = ts;
    }
    if (ph == "i" && e.at("name") == "violation: transparency")
      finding = true;
  }
  EXPECT_EQ(tracks, (std::set<unsigned>{0, 1, 100})); // 2 CPUs and the patcher
  EXPECT_TRUE(xTids.count(1) && xTids.count(100));
  EXPECT_TRUE(monotone);
  EXPECT_TRUE(finding);

  // An edited file: one line, exit 2.
  std::string text = readFile(cex);
  const std::size_t at = text.find("\"log_fnv1a\": \"0x");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 400);
  char &digit = text[at + 16];
  digit = digit == '0' ? '1' : '0';
  const std::string edited = temp("edited.json");
  std::ofstream(edited, std::ios::binary | std::ios::trunc) << text;
  const CommandRun bad = runFtsim("replay " + edited);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_EQ(lines(bad.out), 1u) << bad.out;
  EXPECT_TRUE(has(bad.out, edited)) << bad.out;
}

// list-to-single-race as a user meets it: found by the engine-level exhaustive search, minimised to
// a few deviations that the replay file stores with the continuation's runs between them, replayed
// byte for byte (then the continuation); the fixed variant within the same bound says INCOMPLETE
// when the budget runs out before the bound is covered, and --naive is the search without
// visible-event scheduling, said so.
TEST(CliEngineScenario, AMinimisedEngineCounterexampleIsAFewStoredDecisionsAndReplays) {
  const std::string dir = std::string(FTSIM_CORPORA_DIR) + "/scenarios/";
  const std::string scenario = dir + "list-to-single-race.toml";
  const std::string cex = temp("list-to-single-race.json");
  std::filesystem::remove(cex);
  const CommandRun check = runFtsim("check --scenario " + scenario + " --cex " + cex);
  ASSERT_EQ(check.status, 1) << check.out;
  EXPECT_TRUE(has(check.out, "VIOLATION trace-completeness")) << check.out;
  EXPECT_TRUE(has(check.out, "deviating from the continuation, which follows them")) << check.out;
  EXPECT_TRUE(has(check.out, "switches only at visible events")) << check.out;
  const nlohmann::json j = nlohmann::json::parse(readFile(cex));
  EXPECT_EQ(j.at("then"), "continue");
  // A few decisions deviate from the continuation; the file stores them one by one and each run
  // of the continuation's decisions between them as one {"continue": N}.
  const std::size_t at = check.out.find(" deviating from the continuation");
  ASSERT_NE(at, std::string::npos) << check.out;
  const std::size_t from = check.out.rfind('(', at);
  const unsigned long deviating = std::stoul(check.out.substr(from + 1, at - from - 1));
  EXPECT_LE(deviating, 60u) << check.out;
  std::size_t stored = 0, runs = 0;
  for (const nlohmann::json &entry : j.at("choices"))
    (entry.is_object() ? runs : stored) += 1;
  EXPECT_EQ(stored, deviating) << j.at("choices").dump();
  EXPECT_GE(runs, 1u) << j.at("choices").dump();
  const CommandRun replay = runFtsim("replay " + cex);
  EXPECT_EQ(replay.status, 1) << replay.out;
  EXPECT_TRUE(has(replay.out, "reproduced: event log hash 0x")) << replay.out;

  const std::string fixed = dir + "list-to-single-race-fixed.toml";
  const CommandRun budget = runFtsim("check --scenario " + fixed + " --max-executions 3");
  EXPECT_EQ(budget.status, 3) << budget.out;
  EXPECT_TRUE(has(budget.out, "INCOMPLETE")) << budget.out;
  EXPECT_TRUE(has(budget.out, "exhaustive search (budget ran out)")) << budget.out;
  EXPECT_TRUE(has(budget.out, "visible-event scheduling")) << budget.out;
  const CommandRun naive = runFtsim("check --scenario " + fixed + " --naive --max-executions 3");
  EXPECT_EQ(naive.status, 3) << naive.out;
  EXPECT_TRUE(has(naive.out, "naive (no reduction")) << naive.out;
}

// --- fuzz ----------------------------------------------------------------------------------------

TEST(CliFuzz, SameRunsAndSeedPrintTheSameSummary) {
  const CommandRun a = runFtsim("fuzz --runs 3 --seed 11 --quiet");
  const CommandRun b = runFtsim("fuzz --runs 3 --seed 11 --quiet");
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.rfind("ftsim fuzz: NO VIOLATION in 3 runs (not a proof; ", 0), 0u) << a.out;
  EXPECT_TRUE(has(a.out, "seed 11, --runs 3")) << a.out;
  const CommandRun json = runFtsim("fuzz --runs 3 --seed 11 --quiet --json");
  ASSERT_EQ(json.status, 0) << json.out;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("runs"), 3);
  EXPECT_EQ(j.at("verdict"), "NO VIOLATION");
  EXPECT_TRUE(has(a.out, "; " + std::to_string(j.at("events").get<std::uint64_t>()) + " events"));
}

TEST(CliFuzz, ABrokenProtocolIsFoundShrunkAndReplayed) {
  const std::string cex = temp("fuzz-direct.json");
  std::filesystem::remove(cex);
  const CommandRun r = runFtsim("fuzz --runs 20 --seed 1 --protocol direct --quiet --cex " + cex);
  ASSERT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "ftsim fuzz: VIOLATION in run ")) << r.out;
  EXPECT_TRUE(has(r.out, "shrunk to: ")) << r.out;
  EXPECT_TRUE(has(r.out, "VIOLATION ")) << r.out;
  EXPECT_TRUE(has(r.out, "replay: ftsim replay " + cex)) << r.out;
  const CommandRun replay = runFtsim("replay " + cex);
  EXPECT_EQ(replay.status, 1) << replay.out;
  EXPECT_TRUE(has(replay.out, "reproduced: event log hash 0x")) << replay.out;
  EXPECT_TRUE(has(replay.out, "protocol direct") || has(replay.out, "direct")) << replay.out;

  const CommandRun bad = runFtsim("fuzz --runs 1 --protocol nosuch --quiet");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_EQ(lines(bad.out), 1u) << bad.out;
  EXPECT_TRUE(has(bad.out, "nosuch")) << bad.out;
}

} // namespace
