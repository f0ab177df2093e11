// Counterexample timelines as a user reads them: `ftsim check` and `ftsim replay` show the
// relevance slice (the events that led to the violation, the rest elided), name the bytes a CPU
// fetched stale and since when, label only the patcher's own events "patcher", and
// `--full-timeline` gives every event.

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ftsim::test::CommandRun;
using ftsim::test::runFtsim;

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

// A file in this test process's own directory, removed if an earlier test left it.
std::string temp(const std::string &leaf) {
  static const ftsim::test::TempDir dir;
  const std::string path = dir / leaf;
  std::filesystem::remove(path);
  return path;
}

std::vector<std::string> linesOf(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The lines of the timeline `ftsim replay` prints (between "timeline:" and "VIOLATION").
std::vector<std::string> timelineOf(const std::string &replayOut) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string &line : linesOf(replayOut)) {
    if (line == "timeline:") {
      in = true;
      continue;
    }
    if (line.rfind("VIOLATION", 0) == 0)
      break;
    if (in)
      out.push_back(line);
  }
  return out;
}

// A "#N cpuK patcher ..." line whose event is not one of the patcher's kinds (a guest CPU's step,
// IPI, preemption or fetch labelled as the patcher).
void expectPatcherLabelsOnlyOnPatcherEvents(const std::vector<std::string> &lines) {
  const std::regex patcher(R"(#\d+ cpu\d+ patcher (\S+))");
  for (const std::string &line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, patcher)) {
      const std::string kind = m[1];
      EXPECT_TRUE(kind == "store" || kind == "publish" || kind == "alloc" || kind == "free")
          << line;
    }
  }
}

// list-to-single-race: an engine-level counterexample of thousands of events. The slice fits a
// screen and still tells the story: the site is patched to call ftrace_caller, the CPU takes it,
// ftrace_call still calls ops a directly, and ftrace_call is switched only afterwards.
TEST(CliTimeline, ListToSingleRaceSliceIsShortAndExplainsTheBug) {
  const std::string cex = temp("list-to-single-race.json");
  const CommandRun check = runFtsim("check --scenario list-to-single-race --quiet --cex " + cex);
  ASSERT_EQ(check.status, 1) << check.out;
  EXPECT_TRUE(has(check.out, "VIOLATION trace-completeness")) << check.out;
  const CommandRun replay = runFtsim("replay " + cex);
  ASSERT_EQ(replay.status, 1) << replay.out;
  const std::vector<std::string> slice = timelineOf(replay.out);
  EXPECT_LE(slice.size(), 60u) << replay.out;
  EXPECT_LE(linesOf(check.out).size(), 60u) << check.out;
  std::string text;
  for (const std::string &line : slice)
    text += line + "\n";
  // The violation, marked; the patcher's store of the int3 and of the call at decay_load; the
  // CPU's fetch of the call there; ftrace_call's direct call of a's callback; the later switch of
  // ftrace_call; and elided runs as single lines.
  EXPECT_TRUE(has(text, "callback a for decay_load  <- trace-completeness")) << text;
  // (decay_load's size is the compiler's: 0x29 bytes with GCC 12, 0x31 with GCC 14.)
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(patcher store decay_load\+0x0/0x[0-9a-f]+ \[cc\])")))
      << text;
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(patcher store decay_load\+0x0/0x[0-9a-f]+ \[e8\])")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(cpu\d task\d step decay_load\S* fetch)")))
      << text;
  EXPECT_TRUE(has(text, "fetch ftrace_caller+0x76/")) << text;
  EXPECT_TRUE(has(text, "patcher store ftrace_caller+0x76/")) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(… \d+ events of cpu\d.* elided)"))) << text;
  expectPatcherLabelsOnlyOnPatcherEvents(slice);

  const CommandRun full = runFtsim("replay " + cex + " --full-timeline");
  ASSERT_EQ(full.status, 1) << full.out;
  const std::vector<std::string> every = timelineOf(full.out);
  EXPECT_GT(every.size(), 10 * slice.size());
  EXPECT_FALSE(has(full.out, " elided ")) << full.out.substr(0, 2000);
  expectPatcherLabelsOnlyOnPatcherEvents(every);
}

// int3-missing-sync under the stale fetch model: the violation names the byte the CPU read stale,
// the value, and the patcher's store since which it was stale (after the CPU's last IPI).
TEST(CliTimeline, StaleFetchNamesTheStaleBytesAndSinceWhen) {
  const std::string cex = temp("int3-missing-sync.json");
  const CommandRun check = runFtsim("check --scenario int3-missing-sync --quiet --cex " + cex);
  ASSERT_EQ(check.status, 1) << check.out;
  const std::regex stale(
      R"(<- torn-fetch; stale bytes \(cpu1 last serialised at #(\d+)\): site0\+(\d) read ([0-9a-f]{2}), stale since #(\d+) \(the patcher stored ([0-9a-f]{2})\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(check.out, m, stale)) << check.out;
  // The store named is one the timeline shows, after the serialisation, to that byte, and it
  // wrote a value other than the one read.
  EXPECT_LT(std::stoul(m[1]), std::stoul(m[4]));
  EXPECT_NE(m[3], m[5]);
  const std::string store = "#" + std::string(m[4]) + " cpu0 patcher store site0+" +
                            std::string(m[2]) + " [" + std::string(m[5]);
  EXPECT_TRUE(has(check.out, store)) << store << "\n" << check.out;
  const CommandRun replay = runFtsim("replay " + cex);
  ASSERT_EQ(replay.status, 1) << replay.out;
  EXPECT_TRUE(std::regex_search(replay.out, stale)) << replay.out;
  expectPatcherLabelsOnlyOnPatcherEvents(linesOf(replay.out));
  // The full timeline says it too.
  const CommandRun full = runFtsim("replay " + cex + " --full-timeline");
  EXPECT_TRUE(std::regex_search(full.out, stale)) << full.out;
}

} // namespace
