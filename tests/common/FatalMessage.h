#pragma once
// The one-line error a call raises (FatalError's message), or "" when it returns: what tests of
// bad input compare against the exact text a user sees; and the expectation every such test makes.

#include "ftsim/arch/Error.h"

#include <gtest/gtest.h>

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

// `f` refuses its input with one line that starts with the input's name (`origin`) and says
// `expected`; no newline, carriage return or tab from the input gets into it.
inline void expectOneLineRefusal(const std::string &origin, const std::function<void()> &f,
                                 const std::string &expected) {
  const std::string message = fatalMessage(f);
  EXPECT_EQ(message.rfind(origin, 0), 0u) << message;
  EXPECT_NE(message.find(expected), std::string::npos) << expected << ": " << message;
  EXPECT_EQ(message.find_first_of("\n\r\t"), std::string::npos) << message;
}

} // namespace ftsim::test
