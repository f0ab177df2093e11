#include "ftsim/arch/Error.h"
#include "ftsim/arch/OneLine.h"

#include <cstdio>
#include <cstdlib>

namespace ftsim {

std::string oneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (byte < 0x20 || byte == 0x7f)
      out += fmt::format("\\x{:02x}", byte);
    else
      out += c;
  }
  return out;
}

void panicMessage(const char *file, int line, const std::string &message) {
  std::fprintf(stderr, "ftsim: internal error at %s:%d: %s\n", file, line, message.c_str());
  std::abort();
}

} // namespace ftsim
