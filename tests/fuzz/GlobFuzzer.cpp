// ftsim_fuzz_glob: the filter pattern language (model/src/Glob.cpp): filter_parse_regex(),
// glob_match(), ftrace_match() and kstrtoul(). The input is "pattern\0string"; without a NUL the
// pattern is matched against itself. These functions have no error path: any report is a finding.

#include "FuzzSupport.h"

#include "ftsim/model/Glob.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char *>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view pattern = input.substr(0, nul);
  const std::string_view str = nul == std::string_view::npos ? input : input.substr(nul + 1);
  using namespace ftsim::model;
  const FilterGlob glob = parseFilterRegex(pattern);
  (void)ftraceMatch(str, glob);
  (void)globMatch(pattern, str);
  (void)hasUnterminatedClass(pattern);
  (void)parseUnsigned(pattern);
  // A pattern without special characters matches itself, as the kernel's glob_match() does.
  if (pattern.find_first_of("*?[\\") == std::string_view::npos && !globMatch(pattern, pattern))
    ftsim::fuzz::finding("a plain pattern does not match itself");
  return 0;
}
