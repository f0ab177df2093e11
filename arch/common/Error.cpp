#include "ftsim/arch/Error.h"

#include <cstdio>
#include <cstdlib>

namespace ftsim {

void panicMessage(const char *file, int line, const std::string &message) {
  std::fprintf(stderr, "ftsim: internal error at %s:%d: %s\n", file, line, message.c_str());
  std::abort();
}

} // namespace ftsim
