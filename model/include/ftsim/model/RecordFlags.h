#pragma once
// dyn_ftrace.flags: a reference count in the low bits and paired wanted/in-force flags in the high
// bits. Two layouts are modelled:
//  - the current kernel's (include/linux/ftrace.h since v6.4, commit "ftrace: Add MODIFIED flag"):
//    ENABLED 31, REGS 30, REGS_EN 29, TRAMP 28, TRAMP_EN 27, IPMODIFY 26, DISABLED 25, DIRECT 24,
//    DIRECT_EN 23, CALL_OPS 22, CALL_OPS_EN 21, TOUCHED 20, MODIFIED 19, 19-bit count;
//  - the 3.x layout of Rostedt's "Ftrace Kernel Hooks" slides (v3.7..v3.16): 29-bit count, ENABLED
//  29, REGS 30, REGS_EN 31.
// The engine works in the current layout only; the 3.x one is a decoder for the slides' values.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::model {

namespace RecordFlag {
inline constexpr std::uint32_t Enabled = 1u << 31;   // the site calls a trampoline
inline constexpr std::uint32_t Regs = 1u << 30;      // some ops wants pt_regs
inline constexpr std::uint32_t RegsEn = 1u << 29;    // the site calls ftrace_regs_caller
inline constexpr std::uint32_t Tramp = 1u << 28;     // one ops with its own trampoline
inline constexpr std::uint32_t TrampEn = 1u << 27;   // the site calls that trampoline
inline constexpr std::uint32_t IpModify = 1u << 26;  // an IPMODIFY ops (livepatch) owns it
inline constexpr std::uint32_t Disabled = 1u << 25;  // not ready (module loading, weak function)
inline constexpr std::uint32_t Direct = 1u << 24;    // a direct trampoline is attached
inline constexpr std::uint32_t DirectEn = 1u << 23;  // the site calls it
inline constexpr std::uint32_t CallOps = 1u << 22;   // may use call-site-specific ops
inline constexpr std::uint32_t CallOpsEn = 1u << 21; // it does
inline constexpr std::uint32_t Touched = 1u << 20;   // a callback was attached since boot
inline constexpr std::uint32_t Modified = 1u << 19;  // IPMODIFY or DIRECT was attached
inline constexpr unsigned RefMaxShift = 19;          // FTRACE_REF_MAX_SHIFT
inline constexpr std::uint32_t RefMax = (1u << RefMaxShift) - 1;
// FTRACE_NOCLEAR_FLAGS (kernel/trace/ftrace.c): survive the record going back to count 0.
inline constexpr std::uint32_t NoClear = Disabled | Touched | Modified;
} // namespace RecordFlag

// ftrace_rec_count()
inline std::uint32_t recordCount(std::uint32_t flags) { return flags & RecordFlag::RefMax; }

namespace LegacyRecordFlag {
inline constexpr std::uint32_t Enabled = 1u << 29;
inline constexpr std::uint32_t Regs = 1u << 30;
inline constexpr std::uint32_t RegsEn = 1u << 31;
inline constexpr std::uint32_t RefMax = (1u << 29) - 1;
} // namespace LegacyRecordFlag

enum class FlagsLayout { Current, Legacy3x };

// One decoded flags word: count, the names of the set flags (high bit first) and notes on states
// that ftrace_check_record() / __ftrace_hash_rec_update() can never produce or produce only
// transiently (between the reference-count update and the code update).
struct DecodedRecordFlags {
  FlagsLayout layout = FlagsLayout::Current;
  std::uint32_t raw = 0;
  std::uint32_t count = 0;
  std::vector<std::string> names;
  std::vector<std::string> notes;
  // "0xe0000002 = count 2 | ENABLED REGS REGS_EN"
  std::string summary() const;
};

DecodedRecordFlags decodeRecordFlags(std::uint32_t flags, FlagsLayout layout);

// The same record state in the 3.x layout, when it is expressible there (no TRAMP, IPMODIFY,
// DISABLED, DIRECT, CALL_OPS bits and a count below 2^29). TOUCHED and MODIFIED are history
// bits with no 3.x equivalent and are dropped.
std::optional<std::uint32_t> toLegacyRecordFlags(std::uint32_t currentFlags);

} // namespace ftsim::model
