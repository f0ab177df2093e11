#include "ftsim/model/Glob.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace ftsim::model {

std::optional<unsigned long> parseUnsigned(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    text.remove_prefix(1);
  }
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

// filter_parse_regex() (kernel/trace/trace_events_filter.c). A '*' at the start makes it an end
// match, at the end a front match, at both ends a middle match; a '*' elsewhere, or any of "[?\",
// needs the full glob matcher.
FilterGlob parseFilterRegex(std::string_view text) {
  FilterGlob glob;
  if (!text.empty() && text.front() == '!') {
    glob.negate = true;
    text.remove_prefix(1);
  }
  std::string buff(text);
  glob.search = buff;
  if (!buff.empty() && std::isdigit(static_cast<unsigned char>(buff[0]))) {
    glob.type = MatchType::Index;
    return glob;
  }
  MatchType type = MatchType::Full;
  const std::size_t len = buff.size();
  for (std::size_t i = 0; i < len; ++i) {
    if (buff[i] == '*') {
      if (i == 0) {
        type = MatchType::EndOnly;
      } else if (i == len - 1) {
        type = type == MatchType::EndOnly ? MatchType::MiddleOnly : MatchType::FrontOnly;
        buff.resize(i);
        break;
      } else {
        glob.type = MatchType::Glob; // pattern continues: full glob, search is the whole text
        return glob;
      }
    } else if (std::strchr("[?\\", buff[i]) != nullptr) {
      glob.type = MatchType::Glob;
      return glob;
    }
  }
  glob.search = (!buff.empty() && buff[0] == '*') ? buff.substr(1) : buff;
  glob.type = type;
  return glob;
}

// lib/glob.c glob_match(), with the same backtracking to the last '*'.
bool globMatch(std::string_view pattern, std::string_view str) {
  std::size_t p = 0, s = 0;
  std::size_t backPat = std::string_view::npos, backStr = 0;
  auto pat = [&](std::size_t i) -> unsigned char {
    return i < pattern.size() ? static_cast<unsigned char>(pattern[i]) : '\0';
  };
  auto chr = [&](std::size_t i) -> unsigned char {
    return i < str.size() ? static_cast<unsigned char>(str[i]) : '\0';
  };
  for (;;) {
    unsigned char c = chr(s++);
    unsigned char d = pat(p++);
    bool literal = false;
    bool backtrack = false;
    switch (d) {
    case '?': // anything but the end
      if (c == '\0')
        return false;
      break;
    case '*':
      if (pat(p) == '\0') // trailing '*'
        return true;
      backPat = p;
      backStr = --s; // allow a zero-length match
      break;
    case '[': {
      const bool inverted = pat(p) == '!';
      std::size_t cls = p + (inverted ? 1 : 0);
      unsigned char a = pat(cls++);
      bool match = false;
      bool malformed = false;
      // Each span is a single character or a range a-b; the first may be ']'.
      do {
        unsigned char b = a;
        if (a == '\0') {
          malformed = true;
          break;
        }
        if (pat(cls) == '-' && pat(cls + 1) != ']') {
          b = pat(cls + 1);
          if (b == '\0') {
            malformed = true;
            break;
          }
          cls += 2;
        }
        match |= (a <= c && c <= b);
      } while ((a = pat(cls++)) != ']');
      if (malformed) {
        literal = true; // the '[' is an ordinary character
      } else if (match == inverted) {
        backtrack = true;
      } else {
        p = cls;
      }
      break;
    }
    case '\\':
      d = pat(p++);
      literal = true;
      break;
    default:
      literal = true;
      break;
    }
    if (literal) {
      if (c == d) {
        if (d == '\0')
          return true;
        continue;
      }
      backtrack = true;
    }
    if (backtrack) {
      if (c == '\0' || backPat == std::string_view::npos)
        return false;
      p = backPat;
      s = ++backStr;
    }
  }
}

bool ftraceMatch(std::string_view str, const FilterGlob &glob) {
  switch (glob.type) {
  case MatchType::Full:
    return str == glob.search;
  case MatchType::FrontOnly:
    return str.substr(0, glob.search.size()) == glob.search;
  case MatchType::MiddleOnly:
    return str.find(glob.search) != std::string_view::npos;
  case MatchType::EndOnly:
    return str.size() >= glob.search.size() &&
           str.substr(str.size() - glob.search.size()) == glob.search;
  case MatchType::Glob:
    return globMatch(glob.search, str);
  case MatchType::Index:
    return false; // handled by add_rec_by_index
  }
  return false;
}

bool hasUnterminatedClass(std::string_view pattern) {
  bool inClass = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && !inClass) {
      ++i;
    } else if (pattern[i] == '[' && !inClass) {
      inClass = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '!')
        ++i;
      if (i + 1 < pattern.size() && pattern[i + 1] == ']')
        ++i; // a leading ']' is a member
    } else if (pattern[i] == ']' && inClass) {
      inClass = false;
    }
  }
  return inClass;
}

} // namespace ftsim::model
