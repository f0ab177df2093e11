#pragma once
// An ArchPatcher over one of arch/'s PatchProtocols (x86 int3 batch and its historical variants,
// ppc32 word store): the core's per-record decisions become queued PatchRequests, finished once per
// update (text_poke_queue / text_poke_finish), and the ftrace_call retarget is a single immediate
// poke (text_poke_bp), as arch/x86/kernel/ftrace.c does.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/model/ArchPatcher.h"

#include <functional>
#include <vector>

namespace ftsim::model {

class ProtocolPatcher : public ArchPatcher {
public:
  // `protocol` is attached to `port` here. `functionAddress` maps the trace function to the guest
  // address ftrace_call must call; `ftraceCallSites` are the ftrace_call / ftrace_regs_call sites.
  ProtocolPatcher(const arch::Arch &isa, arch::MachinePort &port, arch::PatchProtocol &protocol,
                  std::function<std::uint64_t(const TraceFunction &)> functionAddress = {},
                  std::vector<std::uint64_t> ftraceCallSites = {});

  const arch::Arch &arch() const override { return arch_; }
  PatchOutcome initNop(DynFtrace &rec, std::uint64_t mcountAddr) override;
  PatchOutcome makeCall(const DynFtrace &rec, std::uint64_t addr) override;
  PatchOutcome makeNop(const DynFtrace &rec, std::uint64_t oldAddr) override;
  PatchOutcome modifyCall(const DynFtrace &rec, std::uint64_t oldAddr, std::uint64_t addr) override;
  void finishBatch() override;
  PatchOutcome updateFtraceFunc(const TraceFunction &function) override;
  PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                          const arch::Bytes &replacement) override;

private:
  PatchOutcome queue(std::uint64_t ip, arch::Bytes old, arch::Bytes replacement);

  const arch::Arch &arch_;
  arch::MachinePort &port_;
  arch::PatchProtocol &protocol_;
  std::function<std::uint64_t(const TraceFunction &)> functionAddress_;
  std::vector<std::uint64_t> ftraceCallSites_;
};

} // namespace ftsim::model
