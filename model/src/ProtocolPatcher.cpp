#include "ftsim/model/ProtocolPatcher.h"

namespace ftsim::model {

ProtocolPatcher::ProtocolPatcher(const arch::Arch &isa, arch::MachinePort &port,
                                 arch::PatchProtocol &protocol,
                                 std::function<std::uint64_t(const TraceFunction &)> address,
                                 std::vector<std::uint64_t> ftraceCallSites)
    : arch_(isa), port_(port), protocol_(protocol), functionAddress_(std::move(address)),
      ftraceCallSites_(std::move(ftraceCallSites)) {
  protocol_.attach(port_);
}

PatchOutcome ProtocolPatcher::initNop(DynFtrace &rec, std::uint64_t mcountAddr) {
  // Boot text is not live yet: text_poke_early(), a plain read-verify-write.
  return modifyCodeDirect(port_, rec.ip, callBytes(rec, mcountAddr), nopBytes(rec));
}

PatchOutcome ProtocolPatcher::queue(std::uint64_t ip, arch::Bytes old, arch::Bytes replacement) {
  // The core verified `old` at every site of the batch before the first queue (ftrace_verify_code).
  protocol_.queue(arch::PatchRequest{ip, std::move(old), std::move(replacement)});
  return {};
}

PatchOutcome ProtocolPatcher::makeCall(const DynFtrace &rec, std::uint64_t addr) {
  return queue(rec.ip, nopBytes(rec), callBytes(rec, addr));
}

PatchOutcome ProtocolPatcher::makeNop(const DynFtrace &rec, std::uint64_t oldAddr) {
  return queue(rec.ip, callBytes(rec, oldAddr), nopBytes(rec));
}

PatchOutcome ProtocolPatcher::modifyCall(const DynFtrace &rec, std::uint64_t oldAddr,
                                         std::uint64_t addr) {
  return queue(rec.ip, callBytes(rec, oldAddr), callBytes(rec, addr));
}

void ProtocolPatcher::finishBatch() { protocol_.finish(); }

PatchOutcome ProtocolPatcher::updateFtraceFunc(const TraceFunction &function) {
  if (!functionAddress_)
    return {};
  const std::uint64_t target = functionAddress_(function);
  for (std::uint64_t site : ftraceCallSites_) {
    // ftrace_update_ftrace_func(): text_poke_bp() of the new call over whatever is there.
    arch::Bytes current(arch_.siteSize());
    if (!port_.readText(site, current))
      return {PatchStatus::ReadFault, {}};
    DynFtrace pseudo{site, 0, NoArchFtrace{}};
    protocol_.pokeNow(arch::PatchRequest{site, current, callBytes(pseudo, target)});
  }
  return {};
}

PatchOutcome ProtocolPatcher::modifyCode(std::uint64_t ip, const arch::Bytes &old,
                                         const arch::Bytes &replacement) {
  protocol_.pokeNow(arch::PatchRequest{ip, old, replacement});
  return {};
}

} // namespace ftsim::model
