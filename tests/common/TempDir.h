#pragma once
// A fresh directory for one test: made by mkdtemp, so that tests run at once (ctest -j, two build
// trees' suites side by side) never share a file, and removed with everything in it when the
// test ends, so that a run leaves nothing behind in the temporary directory.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace ftsim::test {

class TempDir {
public:
  // `base`: where to make it (the system's temporary directory unless said).
  explicit TempDir(const std::filesystem::path &base = std::filesystem::temp_directory_path()) {
    std::string pattern = (base / "ftsim-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()))
      path_ = pattern;
    else
      ADD_FAILURE() << "cannot make a directory in " << base;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::filesystem::path &path() const { return path_; }
  std::string string() const { return path_.string(); }
  // The path of `leaf` inside it, as a string (what commands and loaders take).
  std::string operator/(const std::string &leaf) const { return (path_ / leaf).string(); }

private:
  std::filesystem::path path_;
};

} // namespace ftsim::test
