#pragma once
// ftrace_bug(): the one report for a call site that could not be modified. Three typed causes, as
// the arch code returns them: read fault (-EFAULT), unexpected bytes (-EINVAL), write fault
// (-EPERM).

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/PatchOutcome.h"
#include "ftsim/model/CheckRecord.h"
#include "ftsim/model/Symbolizer.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ftsim::model {

// The result of one read-verify-write (defined with the arch code that returns it).
using arch::PatchOutcome;
using arch::PatchStatus;

std::string_view toString(PatchStatus status);

struct FtraceBugReport {
  PatchStatus failure = PatchStatus::Ok;
  BugType bugType = BugType::Unknown;
  std::uint64_t ip = 0;
  unsigned wordSize = 8;
  std::optional<SymbolInfo> symbol;
  std::optional<arch::Bytes> actual;        // nullopt: reading the site faulted
  arch::Bytes expected;                     // empty when not known
  std::uint32_t recordFlags = 0;            // in the engine's layout (RecordFlags.h)
  RecordRules rules = RecordRules::v6_12(); // the release whose layout text() prints
  std::string trampolines;                  // "\ttramp: ..." parts for TRAMP_EN records
  std::uint64_t expectedTramp = 0;          // ftrace_get_addr_curr(rec)

  // The lines Linux prints, e.g.
  //   ------------[ ftrace bug ]------------
  //   ftrace failed to modify
  //   [<ffffffff810f45f4>] schedule+0x4/0x60
  //    actual:   0f:1f:2e:00:00
  //    expected: e8:37:2e:00:00
  //   Initializing ftrace call sites
  //   ftrace record flags: 0
  //    (0)
  //    expected tramp: ffffffff810f7430
  std::string text() const;
};

// print_ip_ins's "%*phC": "0f:1f:44:00:00"
std::string colonHex(const arch::Bytes &bytes);

} // namespace ftsim::model
