#pragma once
// x86-64 ftrace trampolines generated as machine code (see ftsim/arch/Trampolines.h and the
// listing in X86_64Trampolines.cpp, which follows arch/x86/kernel/ftrace_64.S).

#include "ftsim/arch/Trampolines.h"

namespace ftsim::arch {

std::unique_ptr<FtraceTrampolines> makeX86_64Trampolines(const Arch &arch,
                                                         const TrampolineRequest &request);

} // namespace ftsim::arch
