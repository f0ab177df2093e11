// The releases' record rules (RecordRules.h). Each comes from that release's
// include/linux/ftrace.h (the flag enum, FTRACE_REF_MAX_SHIFT) and ftrace_check_record():
//  - v3.13: ENABLED, REGS, REGS_EN in bits 29..31 over a 29-bit count; disabling keeps REGS_EN;
//  - v4.19: + TRAMP/TRAMP_EN (v3.17), IPMODIFY (v3.19), DISABLED (module records until their text
//    is read-only); `if (rec->flags & FTRACE_FL_DISABLED) return FTRACE_UPDATE_IGNORE`;
//  - v6.1: + DIRECT/DIRECT_EN (v5.5); skip_record(), weak functions DISABLED at boot (v6.0);
//  - v6.12: + CALL_OPS/CALL_OPS_EN, TOUCHED, MODIFIED (v6.4..v6.6), FTRACE_NOCLEAR_FLAGS.

#include "ftsim/model/RecordRules.h"

#include "ftsim/arch/Error.h"
#include "ftsim/model/RecordFlags.h"

#include <fmt/format.h>

namespace ftsim::model {
namespace {

using namespace RecordFlag;

constexpr std::uint32_t kV3 = Enabled | Regs | RegsEn;
constexpr std::uint32_t kV4 = kV3 | Tramp | TrampEn | IpModify | Disabled;
constexpr std::uint32_t kV61 = kV4 | Direct | DirectEn;
constexpr std::uint32_t kV612 = kV61 | CallOps | CallOpsEn | Touched | Modified;

} // namespace

const RecordRules &RecordRules::v3_13() {
  static const RecordRules r{"v3.13", kV3, 29, true, false, 0, false, false};
  return r;
}

const RecordRules &RecordRules::v4_19() {
  static const RecordRules r{"v4.19", kV4, 25, false, true, 0, false, false};
  return r;
}

const RecordRules &RecordRules::v6_1() {
  static const RecordRules r{"v6.1", kV61, 23, false, true, Disabled, true, true};
  return r;
}

const RecordRules &RecordRules::v6_12() {
  static const RecordRules r{"v6.12", kV612, RecordFlag::RefMaxShift, false, true, NoClear,
                             true,    true};
  return r;
}

std::uint32_t RecordRules::encode(std::uint32_t flags) const {
  const std::uint32_t high = flags & ~RecordFlag::RefMax;
  if (high & ~known)
    FTSIM_PANIC("record flags {:#x} hold a flag {} does not have", flags, release);
  if (!legacyLayout)
    return flags;
  const std::optional<std::uint32_t> legacy = toLegacyRecordFlags(flags);
  if (!legacy)
    FTSIM_PANIC("record flags {:#x} have no {} layout", flags, release);
  return *legacy;
}

std::string RecordRules::describe() const {
  std::string names;
  for (const std::string &name : decodeRecordFlags(known, FlagsLayout::Current).names)
    names += (names.empty() ? "" : " ") + name;
  return fmt::format("{} record flags {}, {}-bit count", release, names, refMaxShift);
}

} // namespace ftsim::model
