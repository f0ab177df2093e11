#pragma once
// struct ftrace_ops: a callback, its filter and notrace hashes, its flags and (for per-ops
// trampolines) the trampoline it owns. Flag values are those of include/linux/ftrace.h.

#include "ftsim/model/FtraceHash.h"

#include <any>
#include <cstdint>
#include <functional>
#include <string>

namespace ftsim::arch {
class GuestContext;
}

namespace ftsim::model {

namespace OpsFlag {
inline constexpr std::uint32_t Enabled = 1u << 0;  // registered and live
inline constexpr std::uint32_t Dynamic = 1u << 1;  // may be freed: never called directly
inline constexpr std::uint32_t SaveRegs = 1u << 2; // needs full pt_regs (ftrace_regs_caller)
inline constexpr std::uint32_t SaveRegsIfSupported = 1u << 3;
inline constexpr std::uint32_t Recursion = 1u << 4; // ftrace must protect it from recursion
inline constexpr std::uint32_t Stub = 1u << 5;      // ftrace_list_end & co: never called
inline constexpr std::uint32_t Initialized = 1u << 6;
inline constexpr std::uint32_t Deleted = 1u << 7;
inline constexpr std::uint32_t Adding = 1u << 8;
inline constexpr std::uint32_t Removing = 1u << 9;
inline constexpr std::uint32_t Modifying = 1u << 10;
inline constexpr std::uint32_t AllocTramp = 1u << 11; // its trampoline was allocated by ftrace
inline constexpr std::uint32_t IpModify = 1u << 12;   // may change regs->ip (livepatch)
inline constexpr std::uint32_t Pid = 1u << 13;
inline constexpr std::uint32_t Rcu = 1u << 14; // only call when RCU is watching
inline constexpr std::uint32_t TraceArray = 1u << 15;
inline constexpr std::uint32_t Permanent = 1u << 16;
inline constexpr std::uint32_t Direct = 1u << 17;
inline constexpr std::uint32_t Subop = 1u << 18;
inline constexpr std::uint32_t Graph = 1u << 19;
} // namespace OpsFlag

class FtraceOps;

// ftrace_func_t. `regs` is the guest CPU when the trampoline saved full pt_regs
// (ftrace_regs_caller), nullptr otherwise (ftrace_caller).
using FtraceFunc = std::function<void(std::uint64_t ip, std::uint64_t parentIp, FtraceOps &op,
                                      arch::GuestContext *regs)>;

class FtraceOps {
public:
  FtraceOps() = default;
  FtraceOps(std::string opsName, FtraceFunc callback, std::uint32_t opsFlags = 0)
      : name(std::move(opsName)), func(std::move(callback)), flags(opsFlags) {}
  FtraceOps(const FtraceOps &) = delete; // the engine keeps pointers to registered ops
  FtraceOps &operator=(const FtraceOps &) = delete;

  std::string name; // for listings and logs only
  FtraceFunc func;
  std::uint32_t flags = 0;
  std::any privateData;   // ops->private
  FtraceOpsHash funcHash; // ops->func_hash (local_hash)

  // Per-ops trampoline (arch_ftrace_update_trampoline); 0 when the ops uses the shared ones.
  std::uint64_t trampoline = 0;
  std::uint64_t trampolineSize = 0;

  // Engine-owned state.
  FtraceOpsHash oldHash; // ops->old_hash, valid while Modifying or Removing
  FtraceFunc savedFunc;  // ops->saved_func

  bool has(std::uint32_t flag) const { return (flags & flag) != 0; }
};

} // namespace ftsim::model
