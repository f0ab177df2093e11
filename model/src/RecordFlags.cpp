#include "ftsim/model/RecordFlags.h"

#include <fmt/format.h>

#include <utility>

namespace ftsim::model {
namespace {

struct FlagName {
  std::uint32_t bit;
  const char *name;
};

constexpr FlagName kCurrentNames[] = {
    {RecordFlag::Enabled, "ENABLED"},       {RecordFlag::Regs, "REGS"},
    {RecordFlag::RegsEn, "REGS_EN"},        {RecordFlag::Tramp, "TRAMP"},
    {RecordFlag::TrampEn, "TRAMP_EN"},      {RecordFlag::IpModify, "IPMODIFY"},
    {RecordFlag::Disabled, "DISABLED"},     {RecordFlag::Direct, "DIRECT"},
    {RecordFlag::DirectEn, "DIRECT_EN"},    {RecordFlag::CallOps, "CALL_OPS"},
    {RecordFlag::CallOpsEn, "CALL_OPS_EN"}, {RecordFlag::Touched, "TOUCHED"},
    {RecordFlag::Modified, "MODIFIED"},
};

constexpr FlagName kLegacyNames[] = {
    {LegacyRecordFlag::RegsEn, "REGS_EN"},
    {LegacyRecordFlag::Regs, "REGS"},
    {LegacyRecordFlag::Enabled, "ENABLED"},
};

// The rules below follow from ftrace_check_record() (kernel/trace/ftrace.c), which is the only
// place that sets an _EN flag: it sets ENABLED together with them and clears them whenever it
// clears ENABLED; and from __ftrace_hash_rec_update(), which changes the count and the wanted flags
// before the code update runs.
void addNotes(DecodedRecordFlags &decoded, bool enabled, bool regs, bool regsEn, bool trampEn,
              bool tramp) {
  if ((regsEn || trampEn) && !enabled)
    decoded.notes.push_back("impossible: an _EN flag without ENABLED (ftrace_check_record sets "
                            "the _EN flags only together with ENABLED and clears them with it)");
  if (regsEn && !regs && enabled)
    decoded.notes.push_back("transient only: REGS_EN without REGS means the site still calls "
                            "ftrace_regs_caller although no ops wants regs any more; it exists "
                            "between the removal of a SAVE_REGS ops and the code update");
  if (trampEn && !tramp && enabled)
    decoded.notes.push_back("transient only: TRAMP_EN without TRAMP (the ops trampoline is still "
                            "called until the code update)");
  if (enabled && decoded.count == 0)
    decoded.notes.push_back("transient only: ENABLED with count 0 (the last ops is gone; the code "
                            "update will nop the site and clear the flags)");
}

} // namespace

std::string DecodedRecordFlags::summary() const {
  std::string text = fmt::format("{:#010x} = count {}", raw, count);
  if (!names.empty()) {
    text += " |";
    for (const auto &name : names)
      text += " " + name;
  }
  return text;
}

DecodedRecordFlags decodeRecordFlags(std::uint32_t flags, FlagsLayout layout) {
  DecodedRecordFlags decoded;
  decoded.layout = layout;
  decoded.raw = flags;
  if (layout == FlagsLayout::Current) {
    decoded.count = recordCount(flags);
    for (const auto &flag : kCurrentNames)
      if (flags & flag.bit)
        decoded.names.emplace_back(flag.name);
    addNotes(decoded, flags & RecordFlag::Enabled, flags & RecordFlag::Regs,
             flags & RecordFlag::RegsEn, flags & RecordFlag::TrampEn, flags & RecordFlag::Tramp);
  } else {
    decoded.count = flags & LegacyRecordFlag::RefMax;
    for (const auto &flag : kLegacyNames)
      if (flags & flag.bit)
        decoded.names.emplace_back(flag.name);
    addNotes(decoded, flags & LegacyRecordFlag::Enabled, flags & LegacyRecordFlag::Regs,
             flags & LegacyRecordFlag::RegsEn, false, false);
  }
  return decoded;
}

std::optional<std::uint32_t> toLegacyRecordFlags(std::uint32_t currentFlags) {
  constexpr std::uint32_t inexpressible =
      RecordFlag::Tramp | RecordFlag::TrampEn | RecordFlag::IpModify | RecordFlag::Disabled |
      RecordFlag::Direct | RecordFlag::DirectEn | RecordFlag::CallOps | RecordFlag::CallOpsEn;
  if (currentFlags & inexpressible)
    return std::nullopt;
  std::uint32_t legacy = recordCount(currentFlags);
  if (currentFlags & RecordFlag::Enabled)
    legacy |= LegacyRecordFlag::Enabled;
  if (currentFlags & RecordFlag::Regs)
    legacy |= LegacyRecordFlag::Regs;
  if (currentFlags & RecordFlag::RegsEn)
    legacy |= LegacyRecordFlag::RegsEn;
  return legacy;
}

} // namespace ftsim::model
