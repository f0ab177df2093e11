#pragma once
// The result of one read-verify-write of a patch site: the three typed failures the ftrace arch
// code returns (-EFAULT, -EINVAL, -EPERM), and the plain read-verify-write itself.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"

#include <cstdint>

namespace ftsim::arch {

enum class PatchStatus {
  Ok,
  ReadFault,  // -EFAULT: the site could not be read
  Mismatch,   // -EINVAL: the site does not hold the expected instruction
  WriteFault, // -EPERM: the site could not be written
};

struct PatchOutcome {
  PatchStatus status = PatchStatus::Ok;
  Bytes expected; // what the site should have held (ftrace_expected), for Mismatch
  bool ok() const { return status == PatchStatus::Ok; }
};

// Read `old.size()` bytes at `ip`, compare with `old`, write `replacement` through the port
// (ftrace_modify_code_direct on x86, ftrace_modify_code on powerpc). No synchronisation.
PatchOutcome modifyCodeDirect(MachinePort &port, std::uint64_t ip, const Bytes &old,
                              const Bytes &replacement);

} // namespace ftsim::arch
