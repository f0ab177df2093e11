#pragma once
// ppc32 patch protocols as programs (ProtocolProgram.h), run by one interpreter (Ppc32Patch.cpp):
// Linux's `patch-instruction` (one word store per site, local cache maintenance, no IPI), its IPI
// variant, and the two-instruction protocols word-mflr, word-mflr-wrong-order and
// word-mflr-no-grace.
//
// The two-instruction site `mflr r0; bl ftrace_caller` (the -fpatchable-function-entry=2 layout,
// and ppc64 -mprofile-kernel's) with the mflr nopped out while tracing is off: the RFC series
// "powerpc/ftrace: Additionally nop out the preceding mflr with -mprofile-kernel" (Naveen N. Rao,
// May 2019, https://lkml.org/lkml/2019/5/20/293; whether it was merged is unconfirmed), after
// Michael Ellerman's race: a thread interrupted after executing the nopped mflr would run the
// newly written `bl` with r0 not holding its return address. Enabling therefore writes `mflr r0`,
// waits for an RCU-tasks grace period (every task has since passed a voluntary schedule, so none
// is stopped between the two words having executed the old nop), then writes the `bl`; disabling
// nops the `bl` first and the mflr after another grace period.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/ProtocolProgram.h"

#include <vector>

namespace ftsim::arch {

// Which word of a request a write step stores.
enum class Ppc32Part { Site, MflrRestore, BlWrite, BlRemove, MflrRemove };

struct Ppc32Step {
  enum class Op { Write, Sync, GracePeriod } op = Op::Sync;
  std::vector<Ppc32Part> parts; // Write only
  bool writes(Ppc32Part part) const {
    for (Ppc32Part p : parts)
      if (p == part)
        return true;
    return false;
  }
};

struct Ppc32Program {
  bool mflrSlot = false; // the word before each site holds `mflr r0` only while enabled
  std::vector<Ppc32Step> steps;
};

std::unique_ptr<PatchProtocol> makePpc32Patch(std::string name, std::string difference,
                                              Ppc32Program program);
ProtocolEntry compilePpc32Protocol(const ProtocolProgram &program);

// Whether `protocol` keeps the word before each site as a nop while the site is disabled (so boot
// must not patch `mflr r0` in, and enabling restores it).
bool patchesMflrSlot(const PatchProtocol &protocol);

} // namespace ftsim::arch
