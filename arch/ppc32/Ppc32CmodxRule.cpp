// The ppc32 target's live-patching rule: CMODX (Ppc32Cmodx.h) plus "the other CPUs are made to
// context-synchronise before the protocol returns".

#include "Ppc32Cmodx.h"
#include "Ppc32Code.h"
#include "Ppc32Protocols.h"
#include "Ppc32Target.h"

#include <fmt/format.h>

#include <map>

namespace ftsim::arch {
namespace {

namespace ppc = ppc32;

// Text as a flat map of words, for driving a protocol outside a machine: every store lands at
// once, syncs and grace periods complete at once (the CMODX checker counts them).
class WordTextPort final : public MachinePort {
public:
  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override {
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto it = bytes_.find(addr + i);
      if (it == bytes_.end())
        return false;
      out[i] = it->second;
    }
    return true;
  }
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes_[addr + i] = bytes[i];
    ++unsynced_;
    return true;
  }
  void syncCores() override { unsynced_ = 0; }
  // Stores no syncCores() has followed yet.
  unsigned unsynced() const { return unsynced_; }
  std::uint64_t allocText(std::size_t, std::uint64_t) override { return 0; }
  void freeText(std::uint64_t, std::size_t) override {}
  void synchronizeRcuTasks() override {}
  void scheduleOnEachCpu() override {}
  void publish(std::string_view, const std::function<void()> &write) override { write(); }
  void setTrapHandler(TrapHandler) override {}
  void setHypercall(std::uint64_t, Hypercall) override {}

private:
  std::map<std::uint64_t, std::uint8_t> bytes_;
  unsigned unsynced_ = 0;
};

class CmodxRule final : public LivePatchingRule {
public:
  explicit CmodxRule(const Arch &arch) : arch_(arch) {}
  std::string_view name() const override { return "cmodx+sync:enable-modify-disable"; }
  std::unique_ptr<RuleCheckedPort> watch(MachinePort &port) const override {
    return std::make_unique<CmodxCheckedPort>(port);
  }
  std::optional<std::string> checkProtocol(PatchProtocol &protocol) const override;

private:
  const Arch &arch_;
};

// The protocol enables, retargets and disables a site while other CPUs may run it; every live
// write must be patch class (or the admitted mflr-slot rule), and every change must be followed by
// the other CPUs' context synchronisation before the protocol returns. Kills non-patch-class
// writes, the two-instruction order/grace mutants, and the dropped sync (which site-level
// exploration cannot: under the stale model each fetched word is the old or the new one, both
// legal).
std::optional<std::string> CmodxRule::checkProtocol(PatchProtocol &protocol) const {
  constexpr std::uint64_t kSite = 0xc0001008, kCaller = 0xbfff0100, kRegsCaller = 0xbfff0040;
  WordTextPort text;
  const bool slot = patchesMflrSlot(protocol);
  text.writeText(kSite - 4, ppc::wordBytes(slot ? ppc::kNop : ppc::kMflrR0));
  text.writeText(kSite, ppc::wordBytes(ppc::kNop));
  text.syncCores(); // boot text: nothing ran it yet
  CmodxCheckedPort cmodx(text);
  protocol.attach(cmodx);
  const Bytes nop = ppc::wordBytes(ppc::kNop);
  const Bytes call = arch_.call(kSite, kCaller).bytes;
  const Bytes regs = arch_.call(kSite, kRegsCaller).bytes;
  for (const auto &[from, to] :
       {std::pair{nop, call}, std::pair{call, regs}, std::pair{regs, nop}}) {
    protocol.queue({kSite, from, to});
    protocol.finish();
    if (cmodx.violations().empty() && text.unsynced())
      // Power ISA v3.1 Book II 1.6: a processor other than the one that stored is only
      // guaranteed to fetch the new word after it context-synchronises (isync, an interrupt: the
      // IPI of patch_instruction()'s callers). Returning without that leaves other CPUs free to
      // run the old `bl` indefinitely — into a trampoline that is then freed, or past the end of
      // tracing (trace completeness).
      return fmt::format("{:#x}: {} -> {}: ftrace_modify_code() returned after {} "
                         "store(s) no other CPU was made to context-synchronise "
                         "after: they may keep executing {}",
                         kSite, hexBytes(from), hexBytes(to), text.unsynced(), hexBytes(from));
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
