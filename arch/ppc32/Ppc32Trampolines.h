#pragma once
// ppc32 ftrace trampolines generated as machine code (see ftsim/arch/Trampolines.h and the
// listing in Ppc32Trampolines.cpp, after arch/powerpc/kernel/trace/ftrace_entry.S).

#include "ftsim/arch/Trampolines.h"

namespace ftsim::arch {

std::unique_ptr<FtraceTrampolines> makePpc32Trampolines(const Arch &arch,
                                                        const TrampolineRequest &request);

} // namespace ftsim::arch
