#include "ftsim/arch/PatchOutcome.h"

namespace ftsim::arch {

PatchOutcome modifyCodeDirect(MachinePort &port, std::uint64_t ip, const Bytes &old,
                              const Bytes &replacement) {
  // Read, verify, then write: the three typed failures of ftrace_modify_code_direct().
  Bytes current(old.size());
  if (!port.readText(ip, current))
    return {PatchStatus::ReadFault, old};
  if (current != old)
    return {PatchStatus::Mismatch, old};
  if (!port.writeText(ip, replacement))
    return {PatchStatus::WriteFault, old};
  return {};
}

} // namespace ftsim::arch
