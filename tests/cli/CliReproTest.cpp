// ftsim repro as a kernel engineer runs it: the published scenarios listed, reproduced with their
// buggy and fixed variants, compared with the published outcome, and nothing written.

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ftsim::test {
namespace {

namespace fs = std::filesystem;

void writeFile(const fs::path &path, const std::string &text) { std::ofstream(path) << text; }

TEST(CliRepro, ListsEveryPublishedScenarioWithItsPage) {
  const CommandRun r = runFtsim("repro --list");
  ASSERT_EQ(r.status, 0) << r.out;
  unsigned listed = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line); ++listed) {
    const std::string name = line.substr(0, line.find(' '));
    EXPECT_TRUE(fs::exists(fs::path(FTSIM_PAPERS_DIR) / (name + ".md"))) << name;
  }
  EXPECT_GE(listed, 9u) << r.out;
  EXPECT_NE(r.out.find("tramp-free-preempted"), std::string::npos) << r.out;
}

TEST(CliRepro, ReproducesBuggyAndFixedVariantsAndWritesNothing) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const CommandRun r = runFtsim("repro --quiet torn-nop-to-call int3-missing-sync", dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("4 of 4 variants match the published outcome"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VIOLATION torn-fetch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VERIFIED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[model-hypothesis]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIFFERS"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "repro wrote a file";
}

// f48cb8b48b0b on ppc32 module TOC sites: the nop leaves the TOC reload running (the worker's
// result differs), `b +8` skips it (verified, exhaustively).
TEST(CliRepro, ModuleTrampolineTocBothVariantsMatch) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const CommandRun r = runFtsim("repro ppc-module-tramp-toc", dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2 of 2 variants match the published outcome"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VIOLATION transparency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VERIFIED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIFFERS"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "repro wrote a file";
}

// 405e1d834807 on the engine: on the 3.13 profile a callback gets another ops' op (the message is
// EngineScenarioTest's); with the fix the same bound is searched completely.
TEST(CliRepro, FunctionTraceOpRaceBothVariantsMatch) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const CommandRun r = runFtsim("repro op-func-switch-race", dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2 of 2 variants match the published outcome"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VIOLATION function-trace-op"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduced VERIFIED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIFFERS"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "repro wrote a file";
}

TEST(CliRepro, AnOutcomeThatDiffersFromThePublishedOneExitsOne) {
  // A "buggy" variant that runs today's correct protocol: its violation is not reproduced.
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const std::string head = "arch = \"x86_64\"\nsource = \"test\"\nfidelity = \"faithful\"\n"
                           "published = \"made-up\"\ncpus = 2\nstore = \"byte\"\n";
  writeFile(dir / "made-up.toml", head + "protocol = \"int3\"\n[expect]\nverdict = "
                                         "\"violation\"\noracle = \"torn-fetch\"\n");
  writeFile(dir / "made-up-fixed.toml", head + "protocol = \"int3\"\n[expect]\nverdict = "
                                               "\"verified\"\n");
  const CommandRun r = runFtsim("repro --quiet --dir " + dir.string() + " made-up");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("reproduced VERIFIED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DIFFERS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 2 variants match"), std::string::npos) << r.out;
}

TEST(CliRepro, BadRequestsAreOneLineErrors) {
  for (const std::string args : {"repro no-such-bug", "repro", "repro --all --list",
                                 "repro --dir /nonexistent-ftsim-dir --all"}) {
    const CommandRun r = runFtsim(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(countLines(r.out), 1u) << args << "\n" << r.out;
  }
  EXPECT_NE(runFtsim("repro no-such-bug").out.find("no-such-bug"), std::string::npos);
}

TEST(CliRepro, MarkdownIsOneTableRowPerVariant) {
  const CommandRun r = runFtsim("repro --quiet --markdown torn-nop-to-call");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(countLines(r.out), 4u) << r.out; // header, rule, buggy, fixed
  // The strawman is no release's protocol; the fixed variant claims none but has 6.12's choices.
  EXPECT_NE(r.out.find("| [torn-nop-to-call](torn-nop-to-call.md) | `torn-nop-to-call` | - | "
                       "teaching-strawman | violation torn-fetch | VIOLATION torn-fetch |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| `torn-nop-to-call-fixed` | 6.12 (unclaimed) | faithful | verified | "
                       "VERIFIED |"),
            std::string::npos)
      << r.out;
}

} // namespace
} // namespace ftsim::test
