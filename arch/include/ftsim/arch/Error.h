#pragma once
// Two kinds of failure, as in gem5 (src/base/logging.hh):
//  - FatalError: the user's mistake (bad input file, bad flag, bad scenario). It carries a one-line
//    message that names the input; the CLI prints it and exits non-zero. Never a crash.
//  - panic(): a bug in ftsim itself (a broken internal invariant). Aborts with a message.
// A guest fault is neither: it is a finding, recorded by the simulator and reported by the oracles.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ftsim {

class FatalError : public std::runtime_error {
public:
  explicit FatalError(const std::string &message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fatal(fmt::format_string<Args...> format, Args &&...args) {
  throw FatalError(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void panicMessage(const char *file, int line, const std::string &message);

} // namespace ftsim

#define FTSIM_PANIC(...) ::ftsim::panicMessage(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
#define FTSIM_ASSERT(cond)                                                                         \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      FTSIM_PANIC("assertion failed: {}", #cond);                                                  \
  } while (0)
