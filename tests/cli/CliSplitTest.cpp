// Split trees as a user runs them: `check --split N DIR`, `check --subtree FILE`, `merge DIR`, and
// a run killed with SIGKILL then `--resume`d — each giving the verdict, the counts and the replay
// file of one uninterrupted run.

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using ftsim::test::CommandRun;
using ftsim::test::runFtsim;

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The JSON report without what differs between equal searches run differently: the replay path
// and the number of subtrees resumed from a checkpoint.
nlohmann::json comparable(const std::string &out) {
  nlohmann::json j = nlohmann::json::parse(out);
  j.erase("replay");
  j["stats"].erase("subtrees_resumed");
  return j;
}

void splitRunMerge(const std::string &args, int status) {
  SCOPED_TRACE(args);
  const ftsim::test::TempDir dTemp;
  const std::filesystem::path &d = dTemp.path();
  const CommandRun one = runFtsim("check " + args + " --json --quiet --cex one.json", d.string());
  ASSERT_EQ(one.status, status) << one.out;
  const CommandRun split = runFtsim("check " + args + " --split 3 jobs", d.string());
  ASSERT_EQ(split.status, 0) << split.out;
  unsigned files = 0;
  for (const auto &e : fs::directory_iterator(d / "jobs")) {
    ++files;
    const CommandRun r = runFtsim("check --subtree " + e.path().string() + " --jobs 1");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  EXPECT_EQ(files, 3u);
  const CommandRun merged = runFtsim("merge jobs --json --cex merged.json", d.string());
  ASSERT_EQ(merged.status, status) << merged.out;
  EXPECT_EQ(comparable(one.out), comparable(merged.out));
  if (status == 1) {
    EXPECT_EQ(slurp(d / "one.json"), slurp(d / "merged.json")); // byte for byte
  }
}

} // namespace

TEST(CliSplit, SubtreeFilesRunSeparatelyMergeIntoTheVerdictOfOneRun) {
  splitRunMerge("--protocol int3 --cpus 2 --sites 2", 0);
  splitRunMerge("--protocol direct --cpus 3 --sites 2", 1);
  splitRunMerge("--protocol int3-nosync2 --cpus 2 --sites 2 --bound 1", 1);
}

TEST(CliSplit, EditedOrForeignResultFilesAreRefused) {
  const ftsim::test::TempDir dTemp;
  const std::filesystem::path &d = dTemp.path();
  ASSERT_EQ(runFtsim("check --protocol int3 --cpus 2 --split 2 a", d.string()).status, 0);
  ASSERT_EQ(runFtsim("check --protocol int3 --cpus 2 --sites 2 --split 2 b", d.string()).status, 0);
  ASSERT_EQ(runFtsim("check --subtree a/subtree-000.json --jobs 1", d.string()).status, 0);
  ASSERT_EQ(runFtsim("check --subtree b/subtree-001.json --jobs 1", d.string()).status, 0);
  // A result of another tree in the directory.
  fs::copy_file(d / "b/subtree-001.result.json", d / "a/subtree-001.result.json");
  CommandRun r = runFtsim("merge a", d.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(ftsim::test::countLines(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("another tree"), std::string::npos) << r.out;
  // A result edited by hand.
  fs::remove(d / "a/subtree-001.result.json");
  std::string text = slurp(d / "a/subtree-000.result.json");
  const auto at = text.find("\"executions\": ");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 14, "1");
  std::ofstream(d / "a/subtree-000.result.json", std::ios::trunc) << text;
  r = runFtsim("merge a", d.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("digest"), std::string::npos) << r.out;
  // A missing subtree: INCOMPLETE, naming it.
  ASSERT_EQ(runFtsim("check --subtree a/subtree-000.json --jobs 1", d.string()).status, 0);
  r = runFtsim("merge a", d.string());
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("has no result file"), std::string::npos) << r.out;
  // A job file given scenario flags.
  r = runFtsim("check --subtree a/subtree-000.json --cpus 3", d.string());
  EXPECT_EQ(r.status, 2) << r.out;
  // A job file whose version is not a number (nlohmann's type_error aborted the command).
  text = slurp(d / "a/subtree-000.json");
  const auto version = text.find("\"version\": 1");
  ASSERT_NE(version, std::string::npos) << text;
  text.replace(version, 12, "\"version\": \"1\"");
  std::ofstream(d / "a/subtree-000.json", std::ios::trunc) << text;
  r = runFtsim("check --subtree a/subtree-000.json", d.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(ftsim::test::countLines(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("a/subtree-000.json: version \"1\""), std::string::npos) << r.out;
}

TEST(CliSplit, KilledAtHalfAndResumedGivesTheTotalsOfOneRun) {
  const ftsim::test::TempDir dTemp;
  const std::filesystem::path &d = dTemp.path();
  const std::string args = "check --protocol int3 --cpus 2 --sites 3 --quiet --json --jobs 1";
  const CommandRun whole = runFtsim(args, d.string());
  ASSERT_EQ(whole.status, 0) << whole.out;
  const unsigned count = nlohmann::json::parse(whole.out)["stats"]["subtrees"].get<unsigned>();
  ASSERT_GE(count, 8u);

  const fs::path cp = d / "cp.json";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(FTSIM_EXE, "ftsim", "check", "--protocol", "int3", "--cpus", "2", "--sites", "3",
            "--quiet", "--jobs", "1", "--checkpoint", cp.c_str(), "--checkpoint-every", "0.02",
            static_cast<char *>(nullptr));
    ::_exit(127);
  }
  // SIGKILL once the checkpoint holds half of the subtrees.
  unsigned saved = 0;
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 60000 && saved < count / 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    if (fs::exists(cp))
      saved = nlohmann::json::parse(slurp(cp))["results"].size();
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before half of its subtrees were saved";
  saved = nlohmann::json::parse(slurp(cp))["results"].size();
  ASSERT_GT(saved, 0u);
  ASSERT_LT(saved, count);

  const CommandRun resumed = runFtsim(args + " --resume cp.json", d.string());
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_EQ(comparable(whole.out), comparable(resumed.out));
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["stats"]["subtrees_resumed"].get<unsigned>(), saved);
  // The checkpoint now holds every subtree: resuming again searches nothing.
  EXPECT_EQ(nlohmann::json::parse(slurp(cp))["results"].size(), count);
  const CommandRun again = runFtsim(
      "check --protocol int3 --cpus 2 --sites 3 --quiet --jobs 1 --resume cp.json", d.string());
  EXPECT_NE(again.out.find(std::to_string(count) + " resumed from the checkpoint"),
            std::string::npos)
      << again.out;
  // A checkpoint of another tree is refused.
  const CommandRun other =
      runFtsim("check --protocol int3 --cpus 2 --quiet --resume cp.json", d.string());
  EXPECT_EQ(other.status, 2) << other.out;
}
