#pragma once
// The executable ISA's GuestAbi (ftsim/arch/GuestAbi.h), as the machine needs it. Private to sim/.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/GuestAbi.h"

namespace ftsim::sim {

using GuestAbi = arch::GuestAbi;

// The target's GuestAbi; FatalError when `arch` is not executable.
const GuestAbi &guestAbi(const arch::Arch &arch);

} // namespace ftsim::sim
