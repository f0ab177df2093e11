#include "ftsim/model/ProtocolPatcher.h"

namespace ftsim::model {

ProtocolPatcher::ProtocolPatcher(arch::MachinePort &port, arch::PatchProtocol &protocol,
                                 arch::SiteHooks &hooks,
                                 std::function<std::uint64_t(const TraceFunction &)> address,
                                 std::vector<std::uint64_t> ftraceCallSites)
    : port_(port), protocol_(protocol), hooks_(hooks), functionAddress_(std::move(address)),
      ftraceCallSites_(std::move(ftraceCallSites)) {
  protocol_.attach(port_);
}

std::uint64_t ProtocolPatcher::recordDatum(const DynFtrace &,
                                           const std::optional<SymbolInfo> &symbol) const {
  return hooks_.recordDatum(symbol ? std::string_view(symbol->module) : std::string_view());
}

arch::EncodeResult ProtocolPatcher::encodeCall(const DynFtrace &rec, std::uint64_t target) const {
  return hooks_.encodeCall(rec.ip, rec.arch, target);
}

arch::Bytes ProtocolPatcher::callBytes(const DynFtrace &rec, std::uint64_t target) const {
  return encodeCall(rec, target).bytes;
}

PatchOutcome ProtocolPatcher::initNop(DynFtrace &rec, std::uint64_t mcountAddr) {
  // Boot text is not live yet: a plain read-verify-write (text_poke_early, patch_instruction).
  return hooks_.initNop(port_, rec.ip, rec.arch, mcountAddr);
}

PatchOutcome ProtocolPatcher::queue(std::uint64_t ip, arch::Bytes old, arch::Bytes replacement) {
  // The core verified `old` at every site of the batch before the first queue (ftrace_verify_code).
  protocol_.queue(arch::PatchRequest{ip, std::move(old), std::move(replacement)});
  return {};
}

PatchOutcome ProtocolPatcher::makeCall(const DynFtrace &rec, std::uint64_t addr) {
  arch::EncodeResult call = encodeCall(rec, addr);
  if (!call.ok)
    return {PatchStatus::Mismatch, {}};
  return queue(rec.ip, nopBytes(rec), std::move(call.bytes));
}

PatchOutcome ProtocolPatcher::makeNop(const DynFtrace &rec, std::uint64_t oldAddr) {
  return queue(rec.ip, callBytes(rec, oldAddr), nopBytes(rec));
}

PatchOutcome ProtocolPatcher::modifyCall(const DynFtrace &rec, std::uint64_t oldAddr,
                                         std::uint64_t addr) {
  arch::EncodeResult oldCall = encodeCall(rec, oldAddr);
  arch::EncodeResult call = encodeCall(rec, addr);
  if (!oldCall.ok || !call.ok)
    return {PatchStatus::Mismatch, {}};
  return queue(rec.ip, std::move(oldCall.bytes), std::move(call.bytes));
}

void ProtocolPatcher::finishBatch() { protocol_.finish(); }

PatchOutcome ProtocolPatcher::updateFtraceFunc(const TraceFunction &function) {
  if (!functionAddress_)
    return {};
  const std::uint64_t target = functionAddress_(function);
  for (std::uint64_t site : ftraceCallSites_) {
    // ftrace_update_ftrace_func(): text_poke_bp() of the new call over whatever is there.
    arch::Bytes current(arch().siteSize());
    if (!port_.readText(site, current))
      return {PatchStatus::ReadFault, {}};
    protocol_.pokeNow(arch::PatchRequest{site, current, callBytes(DynFtrace{site, 0, 0}, target)});
  }
  return {};
}

PatchOutcome ProtocolPatcher::modifyCode(std::uint64_t ip, const arch::Bytes &old,
                                         const arch::Bytes &replacement) {
  protocol_.pokeNow(arch::PatchRequest{ip, old, replacement});
  return {};
}

} // namespace ftsim::model
