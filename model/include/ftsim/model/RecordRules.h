#pragma once
// One Linux release's struct dyn_ftrace and ftrace_check_record(): which record flags the release
// has, what check_record clears when it disables a record, which DISABLED records it skips, and how
// the release lays the flags word out. Read from include/linux/ftrace.h and kernel/trace/ftrace.c
// of each release (v3.13, v4.19, v6.1, v6.12).
//
// The engine keeps a record's flags in the newest layout (RecordFlags.h) whatever the release; a
// release's rules decide which of those bits it ever sets (a flag it lacks is never set, so its
// check_record never compares or clears it) and encode() gives the word as that release holds it
// (what ftrace_bug() prints). Who uses it: FtraceCore (FtraceConfig::records), chosen by the
// kernel profile (LinuxProfile::records).

#include <cstdint>
#include <string>
#include <string_view>

namespace ftsim::model {

struct RecordRules {
  std::string_view release; // "v6.12"
  // The RecordFlag bits the release has.
  std::uint32_t known = 0;
  // FTRACE_REF_MAX_SHIFT: the reference count's width.
  unsigned refMaxShift = 0;
  // v3.x: ENABLED is bit 29, REGS 30, REGS_EN 31 (RecordFlags.h, LegacyRecordFlag).
  bool legacyLayout = false;
  // Disabling a record that still has users clears its _EN flags with ENABLED (v4.x on: "keep the
  // ops TRAMP and REGS states. The _EN flags must be disabled though."); v3.x clears ENABLED alone
  // ("Just disable the record (keep REGS state)").
  bool disableClearsEn = true;
  // The flags a record keeps when its count drops to zero: none before v6.0 (`rec->flags = 0`),
  // DISABLED in v6.0..v6.5, FTRACE_NOCLEAR_FLAGS (DISABLED | TOUCHED | MODIFIED) since.
  std::uint32_t noClear = 0;
  // skip_record() (v6.0 on): a DISABLED record that is ENABLED is still processed, so the
  // accounting of a weak function's record stays right; before, every DISABLED record is ignored.
  bool skipRecordKeepsEnabled = true;
  // FTRACE_MCOUNT_MAX_OFFSET (v6.0 on): records past a function's first instruction belong to
  // discarded weak functions and are DISABLED at boot.
  bool weakFunctionCheck = true;

  bool has(std::uint32_t flag) const { return (known & flag) == flag; }
  // The flags word in the release's own layout.
  std::uint32_t encode(std::uint32_t flags) const;
  // "v4.19 flags: ENABLED REGS REGS_EN TRAMP TRAMP_EN IPMODIFY DISABLED, 25-bit count"
  std::string describe() const;

  static const RecordRules &v3_13();
  static const RecordRules &v4_19();
  static const RecordRules &v6_1();
  static const RecordRules &v6_12();
};

} // namespace ftsim::model
