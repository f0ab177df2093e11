#include "ftsim/arch/SiteHooks.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"

namespace ftsim::arch {

std::uint64_t SiteHooks::recordDatum(std::string_view) const { return 0; }

EncodeResult SiteHooks::encodeCall(std::uint64_t ip, std::uint64_t, std::uint64_t target) const {
  return arch_.call(ip, target);
}

PatchOutcome SiteHooks::initNop(MachinePort &port, std::uint64_t &ip, std::uint64_t datum,
                                std::uint64_t mcountAddr) {
  // text_poke_early(): a plain read-verify-write of the call to the profiling hook.
  // A hook out of reach of the site (an image's text more than 2 GiB from it) cannot be what the
  // site calls: -EINVAL, as powerpc's ftrace_make_nop() says "Branch out of range".
  const EncodeResult call = encodeCall(ip, datum, mcountAddr);
  if (!call.ok)
    return {PatchStatus::Mismatch, {}};
  return modifyCodeDirect(port, ip, call.bytes, arch_.nop());
}

ModuleLoad SiteHooks::loadModule(const Image &module) {
  fatal("{}: guest modules are not modelled on {} (they need long-branch stubs)", module.name,
        arch_.name());
}

std::vector<ExtraSite> SiteHooks::extraSites(std::uint64_t) const { return {}; }

} // namespace ftsim::arch
