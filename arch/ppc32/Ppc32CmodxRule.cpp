// The ppc32 target's live-patching rule: CMODX (Ppc32Cmodx.h), as a machine-port watch (what
// `ftsim check` runs as the live-patching oracle) and as a protocol-only check (`ftsim mutants`).

#include "Ppc32Cmodx.h"
#include "Ppc32Code.h"
#include "Ppc32Protocols.h"
#include "Ppc32Target.h"

#include "ftsim/arch/StoppedPort.h"

#include <fmt/format.h>

namespace ftsim::arch {
namespace {

namespace ppc = ppc32;

class CmodxRule final : public LivePatchingRule {
public:
  explicit CmodxRule(const Arch &arch) : arch_(arch) {}
  std::string_view name() const override { return "cmodx:enable-modify-disable"; }
  std::unique_ptr<RuleCheckedPort> watch(MachinePort &port) const override {
    return std::make_unique<CmodxCheckedPort>(port);
  }
  std::optional<std::string> checkProtocol(PatchProtocol &protocol) const override;

private:
  const Arch &arch_;
};

// The protocol enables, retargets and disables a site while other CPUs may run it; every live
// write must be patch class, or the admitted mflr-slot write in the admitted order (Ppc32Cmodx.h,
// rules 1 and 2). Kills non-patch-class writes (word-trap-first) and the two-instruction
// order/grace mutants. Rule 3 (freeing what an old branch reached before the other CPUs
// context-synchronised) concerns the engine's frees, not the protocol: the watch checks it on
// every kernel and trampoline scenario. A protocol need not make other CPUs synchronise before
// it returns: Linux's does not (c96f83856f56).
std::optional<std::string> CmodxRule::checkProtocol(PatchProtocol &protocol) const {
  constexpr std::uint64_t kSite = 0xc0001008, kCaller = 0xbfff0100, kRegsCaller = 0xbfff0040;
  ByteMapPort text; // every store lands at once, syncs and grace periods at once
  const bool slot = patchesMflrSlot(protocol);
  text.writeText(kSite - 4, ppc::wordBytes(slot ? ppc::kNop : ppc::kMflrR0));
  text.writeText(kSite, ppc::wordBytes(ppc::kNop));
  CmodxCheckedPort cmodx(text);
  protocol.attach(cmodx);
  const Bytes nop = ppc::wordBytes(ppc::kNop);
  const Bytes call = arch_.call(kSite, kCaller).bytes;
  const Bytes regs = arch_.call(kSite, kRegsCaller).bytes;
  for (const auto &[from, to] :
       {std::pair{nop, call}, std::pair{call, regs}, std::pair{regs, nop}}) {
    protocol.queue({kSite, from, to});
    protocol.finish();
  }
  if (cmodx.violations().empty())
    return std::nullopt;
  const CmodxViolation &v = cmodx.violations().front();
  return fmt::format("{:#x}: {:08x} -> {:08x}: {}", v.addr, v.oldWord, v.newWord, v.reason);
}

} // namespace

std::unique_ptr<LivePatchingRule> makePpc32CmodxRule(const Arch &arch) {
  return std::make_unique<CmodxRule>(arch);
}

} // namespace ftsim::arch
