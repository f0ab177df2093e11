// The per-ISA table of guest trampoline generators (one explicit entry per target).

#include "../x86_64/X86_64Trampolines.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Trampolines.h"

namespace ftsim::arch {

std::unique_ptr<FtraceTrampolines> makeFtraceTrampolines(const Arch &arch,
                                                         const TrampolineRequest &request) {
  if (arch.name() == "x86_64")
    return makeX86_64Trampolines(arch, request);
  fatal("no guest ftrace trampolines for {} yet (available: x86_64)", arch.name());
}

} // namespace ftsim::arch
