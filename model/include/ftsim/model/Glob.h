#pragma once
// The pattern language of set_ftrace_filter / set_ftrace_notrace: filter_parse_regex()
// (kernel/trace/trace_events_filter.c), ftrace_match() (kernel/trace/ftrace.c) and glob_match()
// (lib/glob.c).

#include <optional>
#include <string>
#include <string_view>

namespace ftsim::model {

// kstrtoul(s, 0, &v): a 0x/0 prefix selects the base; the whole string must be the number.
std::optional<unsigned long> parseUnsigned(std::string_view text);

enum class MatchType { Full, FrontOnly, MiddleOnly, EndOnly, Glob, Index };

struct FilterGlob {
  std::string search; // the pattern with the '!' and the simple-case '*'s removed
  MatchType type = MatchType::Full;
  bool negate = false; // leading '!': remove matches instead of adding them
};

// filter_parse_regex(): "!*sched*" -> {search "sched", MiddleOnly, negate}. A leading digit makes
// it an index into available_filter_functions.
FilterGlob parseFilterRegex(std::string_view text);

// lib/glob.c glob_match(): '*', '?', '[...]' with ranges and '!' negation, '\' escapes. A malformed
// class ('[' without ']') matches literally, as in the kernel.
bool globMatch(std::string_view pattern, std::string_view str);

// ftrace_match()
bool ftraceMatch(std::string_view str, const FilterGlob &glob);

// True when `pattern` opens a '[' class that never closes (used to explain a no-match error).
bool hasUnterminatedClass(std::string_view pattern);

} // namespace ftsim::model
