#pragma once
// Reading the JSON files a user hands to ftsim (replay files; subtree job, result and checkpoint
// files) and the subtree results MPI ranks send: the text parsed with a bound on nesting, and
// counts and indices that are whole numbers. nlohmann parses values nested to any depth, but its
// dump() and comparisons recurse (a file of 400,000 '[' crashed the digest check with a stack
// overflow); its get<T>() wraps a negative number modulo 2^N and converts a fraction or an
// out-of-range float by an undefined cast. Every refusal is one line naming the key or the file.

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace ftsim::verify::detail {

// How deep values may nest: ftsim's own files nest at most 5 deep.
inline constexpr int kMaxJsonDepth = 64;

// `text` as a Json value; FatalError "ORIGIN: not JSON (...)" for a syntax error, a number too
// large for a double, or values nested deeper than kMaxJsonDepth.
template <typename Json> Json parseJsonInput(const std::string &text, std::string_view origin) {
  struct TooDeep {};
  try {
    return Json::parse(text, [](int depth, typename Json::parse_event_t, Json &) {
      if (depth > kMaxJsonDepth)
        throw TooDeep{};
      return true;
    });
  } catch (const TooDeep &) {
    fatal("{}: not JSON of ftsim's (values nested more than {} deep)", origin, kMaxJsonDepth);
  } catch (const typename Json::exception &e) {
    // parse_error, and out_of_range for a number too large for a double ("1e400").
    fatal("{}: not JSON ({})", origin, e.what());
  }
}

// What a message quotes of a bad value: its JSON text, cut short.
template <typename Json> std::string quotedValue(const Json &value) {
  std::string text = value.dump(); // compact, and strings escaped: one line
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

// `value` as a T from 0 to T's maximum; FatalError "ORIGIN: 'KEY' must be ..." (no "ORIGIN: "
// when `origin` is empty).
template <typename T, typename Json>
T wholeNumber(const Json &value, std::string_view origin, std::string_view key) {
  if (!value.is_number_unsigned() ||
      value.template get<std::uint64_t>() > std::numeric_limits<T>::max())
    fatal("{}{}'{}' must be a whole number from 0 to {}, not {}", origin,
          origin.empty() ? "" : ": ", key, std::numeric_limits<T>::max(), quotedValue(value));
  return static_cast<T>(value.template get<std::uint64_t>());
}

// `value` as an int from `lowest` to INT_MAX (a bound where -1 means none).
template <typename Json>
int boundNumber(const Json &value, std::string_view origin, std::string_view key, int lowest) {
  constexpr int highest = std::numeric_limits<int>::max();
  const bool fits = value.is_number_unsigned()
                        ? value.template get<std::uint64_t>() <= std::uint64_t{highest}
                        : value.is_number_integer() &&
                              value.template get<std::int64_t>() >= lowest &&
                              value.template get<std::int64_t>() <= highest;
  if (!fits)
    fatal("{}{}'{}' must be a whole number from {} to {}, not {}", origin,
          origin.empty() ? "" : ": ", key, lowest, highest, quotedValue(value));
  return static_cast<int>(value.template get<std::int64_t>());
}

} // namespace ftsim::verify::detail
