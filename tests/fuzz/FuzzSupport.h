#pragma once
// Shared by the libFuzzer harnesses (one per parser of user input). A harness feeds the bytes to
// the parser as the CLI would; the parser's documented error path (ftsim::FatalError, which the
// CLI prints as one line and exit status 2) is a normal outcome. Everything else is a finding:
// a crash or sanitizer report, another exception type (uncaught: libFuzzer reports the abort),
// an error message of more than one line, a timeout or an allocation over the run's limits.

#include "ftsim/arch/Error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ftsim::fuzz {

[[noreturn]] inline void finding(std::string_view what) {
  std::fprintf(stderr, "ftsim fuzz finding: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// Runs `parse`; a FatalError is the expected rejection of bad input and must be one line.
template <typename F> bool accepts(F &&parse) {
  try {
    parse();
    return true;
  } catch (const FatalError &e) {
    const std::string_view message = e.what();
    if (message.empty() || message.find('\n') != std::string_view::npos)
      finding("the FatalError message is not one line: " + std::string(message));
    return false;
  }
}

// The input as a file for parsers that take a path: an anonymous in-memory file (memfd) named
// through /proc/self/fd, rewritten for every input.
class InputFile {
public:
  explicit InputFile(const char *name) {
    fd_ = ::memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0)
      finding("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  const std::string &assign(const std::uint8_t *data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0)
      finding("ftruncate failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0)
        finding("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }
  const std::string &path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

} // namespace ftsim::fuzz
