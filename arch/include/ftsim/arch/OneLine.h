#pragma once
// A FatalError is one line (Error.h). Messages that quote what a file or a user wrote (a value, a
// name, a parser's description of what it saw) pass it through oneLine().

#include <string>
#include <string_view>

namespace ftsim {

// `text` with newlines, tabs and other control characters escaped: "a\nb" becomes a\nb.
std::string oneLine(std::string_view text);

} // namespace ftsim
