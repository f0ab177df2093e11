#pragma once
// A FatalError is one line (Error.h). Messages that quote what a file or a user wrote (a value, a
// name, a parser's description of what it saw) pass it through oneLine().

#include "ftsim/arch/Error.h"

#include <string>
#include <string_view>

namespace ftsim {

// `text` with newlines, tabs and other control characters escaped: "a\nb" becomes a\nb.
std::string oneLine(std::string_view text);

// What `parse()` returns; a FatalError it throws comes out as one line (oneLine of its message).
// For a file's parser, whose messages quote keys, values and a library's description of what it
// saw ("saw '\n'") whatever the file holds.
template <typename F> auto withOneLineErrors(F &&parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const FatalError &e) {
    throw FatalError(oneLine(e.what()));
  }
}

} // namespace ftsim
