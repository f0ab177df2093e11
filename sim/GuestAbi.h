#pragma once
// The executable ISA's GuestAbi (ftsim/arch/GuestAbi.h), as the machine needs it. Private to sim/.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/GuestAbi.h"

#include <cstdint>
#include <optional>

namespace ftsim::sim {

using GuestAbi = arch::GuestAbi;

// The target's GuestAbi; FatalError when `arch` is not executable.
const GuestAbi &guestAbi(const arch::Arch &arch);

// How far past the next instruction Unicorn leaves the pc after a step by the trace flag
// (GuestAbi::traceFlagReg), measured once per architecture in a bare engine (TraceCalibration.cpp);
// none when the architecture has no trace flag or the measurement failed (no trace-flag steps).
std::optional<std::uint64_t> traceStepSkew(const arch::Arch &arch);

} // namespace ftsim::sim
