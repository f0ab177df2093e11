// Progress on stderr as a user sees it: with --progress into a file, lines with an estimate of
// what remains; without it (stderr not a terminal), nothing; stdout the same either way.

#include "TempDir.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Split {
  int status = -1;
  std::string out, err;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `ftsim ARGS` in `dir` with stdout and stderr kept apart (stderr into a file: not a terminal).
Split runSplit(const std::string &args, const std::filesystem::path &dir) {
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const std::string cmd = "cd '" + dir.string() + "' && timeout 60 " + std::string(FTSIM_EXE) +
                          " " + args + " >'" + out + "' 2>'" + err + "'";
  Split r;
  const int status = std::system(cmd.c_str());
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(out);
  r.err = readFile(err);
  return r;
}

// Every line of a --progress stderr is a report with an ETA; the last one says nothing remains.
void expectProgressLines(const std::string &command, const std::string &err) {
  const std::regex line("ftsim " + command +
                        R"(: \d+(/\d+)? [a-z ]+, \d+ s, ETA (\d+ s|unknown).*)");
  std::istringstream in(err);
  std::string l, last;
  int lines = 0;
  while (std::getline(in, l)) {
    EXPECT_TRUE(std::regex_match(l, line)) << l;
    last = l;
    ++lines;
  }
  EXPECT_GE(lines, 1) << err;
  EXPECT_NE(last.find("ETA 0 s"), std::string::npos) << err;
}

TEST(CliProgress, ForcedIntoAFileGivesLinesWithAnEtaAndOtherwiseStderrIsEmpty) {
  // repro: variants done of the variants chosen; prove: stages; fuzz: runs of --runs.
  for (const auto &[command, args] :
       {std::pair<std::string, std::string>{"repro", "repro int3-missing-sync"},
        {"prove", "prove --encodings"},
        {"fuzz", "fuzz --runs 2 --seed 1 --cex fuzz.json"}}) {
    const ftsim::test::TempDir dir;
    const Split quiet = runSplit(args, dir.path());
    EXPECT_EQ(quiet.status, 0) << args << "\n" << quiet.out << quiet.err;
    EXPECT_EQ(quiet.err, "") << args;
    std::filesystem::remove(dir / "fuzz.json");
    const Split shown = runSplit(args + " --progress", dir.path());
    EXPECT_EQ(shown.status, 0) << args << "\n" << shown.out << shown.err;
    expectProgressLines(command, shown.err);
    // No carriage returns into a file, and nothing of it on stdout.
    EXPECT_EQ(shown.err.find('\r'), std::string::npos) << shown.err;
    EXPECT_EQ(shown.out.find("ETA"), std::string::npos) << shown.out;
  }
}

} // namespace
