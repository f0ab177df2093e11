#pragma once
// The one-line error a call raises (FatalError's message), or "" when it returns: what tests of
// bad input compare against the exact text a user sees.

#include "ftsim/arch/Error.h"

#include <functional>
#include <string>

namespace ftsim::test {

inline std::string fatalMessage(const std::function<void()> &f) {
  try {
    f();
  } catch (const FatalError &e) {
    return e.what();
  }
  return "";
}

} // namespace ftsim::test
