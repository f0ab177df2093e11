#pragma once
// Running the ftsim binary as a user would, for the CLI tests.

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace ftsim::test {

struct CommandRun {
  int status = -1;
  std::string out; // stdout and stderr together
};

// A shell command line (stderr folded into stdout by the caller); its exit status and output.
inline CommandRun runCommand(const std::string &cmd) {
  CommandRun r;
  FILE *pipe = popen(cmd.c_str(), "r");
  if (!pipe)
    return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe))
    r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `ftsim ARGS` through the shell, in directory `cwd` when one is given, stopped after 60 s (a run
// that would not end is a failure, not a hung test); its exit status and output.
inline CommandRun runFtsim(const std::string &args, const std::string &cwd = "") {
  return runCommand((cwd.empty() ? "" : "cd '" + cwd + "' && ") + "timeout 60 " +
                    std::string(FTSIM_EXE) + " " + args + " 2>&1");
}

inline std::size_t countLines(const std::string &s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n';
  return n;
}

} // namespace ftsim::test
