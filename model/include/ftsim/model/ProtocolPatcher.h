#pragma once
// An ArchPatcher over one of arch/'s PatchProtocols (x86 int3 batch and its historical variants,
// ppc32 word store and the two-instruction mflr protocols): the core's per-record decisions become
// queued PatchRequests, finished once per update (text_poke_queue / text_poke_finish), and the
// ftrace_call retarget is a single immediate poke (text_poke_bp), as arch/x86/kernel/ftrace.c
// does. What differs per ISA beyond one encoding (the record's arch datum, ftrace_init_nop, calls
// through module long-branch stubs) comes from the target's SiteHooks.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SiteHooks.h"
#include "ftsim/model/ArchPatcher.h"

#include <functional>
#include <vector>

namespace ftsim::model {

class ProtocolPatcher : public ArchPatcher {
public:
  // `protocol` is attached to `port` here; `hooks` (made by the same Arch for this kernel) must
  // outlive the patcher. `functionAddress` maps the trace function to the guest address
  // ftrace_call must call; `ftraceCallSites` are the ftrace_call / ftrace_regs_call sites.
  ProtocolPatcher(arch::MachinePort &port, arch::PatchProtocol &protocol, arch::SiteHooks &hooks,
                  std::function<std::uint64_t(const TraceFunction &)> functionAddress = {},
                  std::vector<std::uint64_t> ftraceCallSites = {});

  const arch::Arch &arch() const override { return hooks_.arch(); }
  std::uint64_t recordDatum(const DynFtrace &rec,
                            const std::optional<SymbolInfo> &symbol) const override;
  // ftrace_call_replace(): empty (matches no site, so verification reports it) when the target
  // is out of reach (encodeCall says why).
  arch::Bytes callBytes(const DynFtrace &rec, std::uint64_t target) const override;
  arch::EncodeResult encodeCall(const DynFtrace &rec, std::uint64_t target) const;

  PatchOutcome initNop(DynFtrace &rec, std::uint64_t mcountAddr) override;
  // A call that cannot be encoded is -EINVAL (ftrace_bug "failed to modify").
  PatchOutcome makeCall(const DynFtrace &rec, std::uint64_t addr) override;
  PatchOutcome makeNop(const DynFtrace &rec, std::uint64_t oldAddr) override;
  PatchOutcome modifyCall(const DynFtrace &rec, std::uint64_t oldAddr, std::uint64_t addr) override;
  void finishBatch() override;
  PatchOutcome updateFtraceFunc(const TraceFunction &function) override;
  PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                          const arch::Bytes &replacement) override;

private:
  PatchOutcome queue(std::uint64_t ip, arch::Bytes old, arch::Bytes replacement);

  arch::MachinePort &port_;
  arch::PatchProtocol &protocol_;
  arch::SiteHooks &hooks_;
  std::function<std::uint64_t(const TraceFunction &)> functionAddress_;
  std::vector<std::uint64_t> ftraceCallSites_;
};

} // namespace ftsim::model
