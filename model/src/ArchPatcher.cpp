#include "ftsim/model/ArchPatcher.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::model {

arch::Bytes ArchPatcher::callBytes(const DynFtrace &rec, std::uint64_t target) const {
  arch::EncodeResult encoded = arch().call(rec.ip, target);
  if (!encoded.ok)
    FTSIM_PANIC("cannot encode a call at {:#x} to {:#x}: {}", rec.ip, target, encoded.error);
  return encoded.bytes;
}

arch::Bytes ArchPatcher::nopBytes(const DynFtrace &) const { return arch().nop(); }

PlainStorePatcher::PlainStorePatcher(const arch::Arch &isa, arch::MachinePort &port,
                                     std::function<std::uint64_t(const TraceFunction &)> address,
                                     std::vector<std::uint64_t> ftraceCallSites)
    : arch_(isa), port_(port), functionAddress_(std::move(address)),
      ftraceCallSites_(std::move(ftraceCallSites)) {}

PatchOutcome PlainStorePatcher::write(std::uint64_t ip, const arch::Bytes &old,
                                      const arch::Bytes &replacement) {
  PatchOutcome outcome = modifyCodeDirect(port_, ip, old, replacement);
  if (outcome.ok()) {
    ++writes_;
    dirty_ = true;
  }
  return outcome;
}

PatchOutcome PlainStorePatcher::initNop(DynFtrace &rec, std::uint64_t mcountAddr) {
  // ftrace_make_nop(mod, rec, MCOUNT_ADDR) with text_poke_early(): boot text is not live, no sync.
  PatchOutcome outcome = modifyCodeDirect(port_, rec.ip, callBytes(rec, mcountAddr), nopBytes(rec));
  if (outcome.ok())
    ++writes_;
  return outcome;
}

PatchOutcome PlainStorePatcher::makeCall(const DynFtrace &rec, std::uint64_t addr) {
  return write(rec.ip, nopBytes(rec), callBytes(rec, addr));
}

PatchOutcome PlainStorePatcher::makeNop(const DynFtrace &rec, std::uint64_t oldAddr) {
  return write(rec.ip, callBytes(rec, oldAddr), nopBytes(rec));
}

PatchOutcome PlainStorePatcher::modifyCall(const DynFtrace &rec, std::uint64_t oldAddr,
                                           std::uint64_t addr) {
  return write(rec.ip, callBytes(rec, oldAddr), callBytes(rec, addr));
}

void PlainStorePatcher::finishBatch() {
  if (dirty_)
    port_.syncCores();
  dirty_ = false;
}

PatchOutcome PlainStorePatcher::updateFtraceFunc(const TraceFunction &function) {
  if (functionAddress_) {
    const std::uint64_t target = functionAddress_(function);
    for (std::uint64_t site : ftraceCallSites_) {
      DynFtrace pseudo{site, 0, 0};
      arch::Bytes current(arch_.siteSize());
      if (!port_.readText(site, current))
        return {PatchStatus::ReadFault, {}};
      if (!port_.writeText(site, callBytes(pseudo, target)))
        return {PatchStatus::WriteFault, {}};
      ++writes_;
    }
    if (!ftraceCallSites_.empty())
      port_.syncCores();
  }
  current_ = function;
  return {};
}

} // namespace ftsim::model
