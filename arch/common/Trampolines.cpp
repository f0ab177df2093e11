// The per-ISA table of guest trampoline generators (one explicit entry per target).

#include "ftsim/arch/Trampolines.h"
#include "../ppc32/Ppc32Trampolines.h"
#include "../x86_64/X86_64Trampolines.h"
#include "ftsim/arch/Error.h"

namespace ftsim::arch {

std::unique_ptr<FtraceTrampolines> makeFtraceTrampolines(const Arch &arch,
                                                         const TrampolineRequest &request) {
  if (arch.name() == "x86_64")
    return makeX86_64Trampolines(arch, request);
  if (arch.name() == "ppc32")
    return makePpc32Trampolines(arch, request);
  fatal("no guest ftrace trampolines for {} yet (available: x86_64, ppc32)", arch.name());
}

} // namespace ftsim::arch
