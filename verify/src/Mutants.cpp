// The mutation score over the patch protocols of an ISA.

#include "ftsim/verify/Mutants.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/Ppc32Cmodx.h"
#include "ftsim/arch/Ppc32Code.h"
#include "ftsim/arch/Ppc32Protocols.h"
#include "ftsim/verify/Explore.h"
#include "ftsim/verify/SiteHarness.h"
#include "ftsim/verify/Proofs.h"

#include <fmt/format.h>

#include <map>

namespace ftsim::verify {
namespace {

namespace ppc = arch::ppc32;

bool isTableProtocol(const arch::Arch &arch, const std::string &name) {
  for (const arch::ProtocolInfo &info : arch::protocolsFor(arch))
    if (info.name == name)
      return true;
  return false;
}

// --- ppc32 mutants that are not entries of the protocol table
// --------------------------------------

// x86's breakpoint idea on powerpc: a trap (`tw 31,0,0`) first, sync, then the new word, sync.
// `tw` is not a patch-class instruction (Power ISA v3.1 Book II 1.6): written over a word another
// CPU may be executing, the architecture does not say what that CPU executes. Linux never does it
// on powerpc (patch_instruction() writes the final word at once).
class Ppc32TrapFirst final : public arch::PatchProtocol {
public:
  std::string_view name() const override { return "word-trap-first"; }
  std::string_view difference() const override { return kDifference; }
  const arch::PatchStats &stats() const override { return stats_; }
  void attach(arch::MachinePort &port) override {
    port_ = &port;
    port.setTrapHandler([](arch::GuestContext &, std::uint64_t) {
      return arch::TrapVerdict::NotMine; // no handler: powerpc has none for ftrace sites
    });
  }
  void queue(const arch::PatchRequest &request) override { queued_.push_back(request); }
  void finish() override {
    if (queued_.empty())
      return;
    for (const arch::PatchRequest &r : queued_)
      store(r.addr, ppc::wordBytes(0x7fe00008u)); // tw 31,0,0
    port_->syncCores();
    for (const arch::PatchRequest &r : queued_)
      store(r.addr, r.newBytes);
    port_->syncCores();
    stats_.batches++;
    stats_.syncs += 2;
    queued_.clear();
  }
  void pokeNow(const arch::PatchRequest &request) override {
    queue(request);
    finish();
  }
  static constexpr const char *kDifference =
      "writes the trap tw 31,0,0 over the site first, then the new word (x86's int3 idea; a "
      "trap is not a patch-class instruction)";

private:
  void store(std::uint64_t addr, const arch::Bytes &word) {
    stats_.stores++;
    if (!port_->writeText(addr, word))
      FTSIM_PANIC("word-trap-first: write fault at {:#x}", addr);
  }
  arch::MachinePort *port_ = nullptr;
  arch::PatchStats stats_;
  std::vector<arch::PatchRequest> queued_;
};

// The ppc-branch-range encoder bug: the offset masked into LI without a range check (what
// create_branch() refuses with "Branch out of range"). Returns a `bl` for every aligned pair.
arch::EncodeResult truncatingBl(std::uint64_t site, std::uint64_t target) {
  const auto delta = static_cast<std::uint32_t>(target - site);
  return {ppc::wordBytes(0x48000001u | (delta & 0x03fffffcu)), true, {}};
}

struct ExtraMutant {
  std::string name;
  std::string difference;
};

std::vector<ExtraMutant> extraMutants(const arch::Arch &arch) {
  if (arch.name() != "ppc32")
    return {};
  return {{"word-trap-first", Ppc32TrapFirst::kDifference},
          {"bl-truncate", "the bl encoder masks the offset into LI without a range check "
                          "(SCENARIOS.md ppc-branch-range); patching protocol word"}};
}

std::unique_ptr<arch::PatchProtocol> makeMutantProtocol(const arch::Arch &arch,
                                                        const std::string &name) {
  if (arch.name() == "ppc32" && name == "word-trap-first")
    return std::make_unique<Ppc32TrapFirst>();
  if (arch.name() == "ppc32" && name == "bl-truncate")
    return arch::makePatchProtocol(arch, "word");
  return arch::makePatchProtocol(arch, name);
}

// Text as a flat map of words, for driving a protocol outside a machine: every store lands at
// once, syncs and grace periods complete at once (the CMODX checker counts them).
class WordTextPort final : public arch::MachinePort {
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
  void setTrapHandler(arch::TrapHandler) override {}
  void setHypercall(std::uint64_t, arch::Hypercall) override {}

private:
  std::map<std::uint64_t, std::uint8_t> bytes_;
  unsigned unsynced_ = 0;
};

// CMODX as an oracle (ftsim/arch/Ppc32Cmodx.h): the protocol enables, retargets and disables a
// site while other CPUs may run it; every live write must be patch class (or the admitted
// mflr-slot rule), and every change must be followed by the other CPUs' context synchronisation
// before the protocol returns. Kills non-patch-class writes, the two-instruction order/grace
// mutants, and the dropped sync (which site-level exploration cannot: under the stale model each
// fetched word is the old or the new one, both legal).
MutantChecker cmodxChecker(const arch::Arch &arch) {
  return {
      "cmodx+sync:enable-modify-disable",
      [&arch](const std::string &protocol) -> std::optional<std::string> {
        constexpr std::uint64_t kSite = 0xc0001008, kCaller = 0xbfff0100, kRegsCaller = 0xbfff0040;
        auto p = makeMutantProtocol(arch, protocol);
        WordTextPort text;
        const bool slot = arch::patchesMflrSlot(*p);
        text.writeText(kSite - 4, ppc::wordBytes(slot ? ppc::kNop : ppc::kMflrR0));
        text.writeText(kSite, ppc::wordBytes(ppc::kNop));
        text.syncCores(); // boot text: nothing ran it yet
        arch::CmodxCheckedPort cmodx(text);
        p->attach(cmodx);
        const arch::Bytes nop = ppc::wordBytes(ppc::kNop);
        const arch::Bytes call = arch.call(kSite, kCaller).bytes;
        const arch::Bytes regs = arch.call(kSite, kRegsCaller).bytes;
        for (const auto &[from, to] :
             {std::pair{nop, call}, std::pair{call, regs}, std::pair{regs, nop}}) {
          p->queue({kSite, from, to});
          p->finish();
          if (cmodx.violations().empty() && text.unsynced())
            // Power ISA v3.1 Book II 1.6: a processor other than the one that stored is only
            // guaranteed to fetch the new word after it context-synchronises (isync, an
            // interrupt: the IPI of patch_instruction()'s callers). Returning without that
            // leaves other CPUs free to run the old `bl` indefinitely — into a trampoline
            // that is then freed, or past the end of tracing (trace completeness).
            return fmt::format("{:#x}: {} -> {}: ftrace_modify_code() returned after {} "
                               "store(s) no other CPU was made to context-synchronise "
                               "after: they may keep executing {}",
                               kSite, arch::hexBytes(from), arch::hexBytes(to), text.unsynced(),
                               arch::hexBytes(from));
        }
        if (cmodx.violations().empty())
          return std::nullopt;
        const arch::CmodxViolation &v = cmodx.violations().front();
        return fmt::format("{:#x}: {:08x} -> {:08x}: {}", v.addr, v.oldWord, v.newWord, v.reason);
      }};
}

// The branch range as a Z3 theorem (provePowerPcBranch: LI round-trips exactly for offsets in
// -0x2000000..0x1fffffc, word aligned), then the encoder under test held to it at the range's
// edges and at Z3's misbranch witness range (kernel text -> module area): it must refuse or
// decode back to its target. Encoder mutants only; protocols use the real encoder.
MutantChecker branchRangeChecker(const arch::Arch &arch) {
  return {"z3:bl-range", [&arch](const std::string &protocol) -> std::optional<std::string> {
            if (protocol != "bl-truncate")
              return std::nullopt; // the real encoder (provePowerPcBranch cross-checks it)
            const ProofResult range = provePowerPcBranch(32);
            if (!range.holds)
              return "the LI range proof itself fails: " + range.counterexample;
            const std::uint64_t site = 0xc0001008;
            for (std::int64_t off : {0x1fffffcll, 0x2000000ll, -0x2000000ll, -0x2000004ll,
                                     0xb0000000ll - 0xc0001008ll}) {
              const std::uint64_t target =
                  static_cast<std::uint32_t>(static_cast<std::int64_t>(site) + off);
              const arch::EncodeResult e = truncatingBl(site, target);
              if (!e.ok)
                continue;
              const std::optional<std::uint64_t> to = arch.callTarget(site, e.bytes);
              if (to != std::optional<std::uint64_t>(target))
                return fmt::format("bl at {:#x} for {:#x} (offset {:#x}, outside the proven "
                                   "+-32 MiB) encodes as {} and branches to {:#x}",
                                   site, target, off, arch::hexBytes(e.bytes), to.value_or(0));
            }
            return std::nullopt;
          }};
}

MutantChecker exploreChecker(const arch::Arch &arch, std::string label,
                             std::vector<Transition> sites, bool descending) {
  return {"explore:" + label,
          [&arch, sites, descending](const std::string &protocol) -> std::optional<std::string> {
            Scenario s;
            s.name = "mutant";
            s.arch = std::string(arch.name());
            s.protocol = protocol;
            s.cpus = 2;
            s.store = arch.name() == "x86_64" ? sim::StoreModel::Byte : sim::StoreModel::Word;
            // powerpc: an aligned instruction word is fetched atomically (Power ISA Book II);
            // the per-byte stale model would tear it, so powerpc uses the line model.
            s.fetch = arch.name() == "x86_64" ? &sim::fetchModelByName("stale")
                                              : &sim::fetchModelByName("line");
            s.sites = sites;
            s.descending = descending;
            SiteHarness harness(s);
            ExploreOptions o;
            o.maxExecutions = 20000;
            const ExploreResult r = explore(harness, o);
            if (r.counterexample)
              return summarizeViolation(r.counterexample->violation);
            return std::nullopt; // verified, or not killed within the budget
          }};
}

} // namespace

std::vector<MutantChecker> defaultMutantCheckers(const arch::Arch &arch) {
  using T = Transition;
  std::vector<MutantChecker> out;
  out.push_back(exploreChecker(arch, "nop-to-call", {T::NopToCall}, false));
  out.push_back(exploreChecker(arch, "call-to-call", {T::CallToCall}, false));
  out.push_back(exploreChecker(arch, "2-sites", {T::NopToCall, T::NopToCall}, false));
  out.push_back(exploreChecker(arch, "2-sites-descending", {T::NopToCall, T::NopToCall}, true));
  out.push_back(
      {"z3:byte-states", [&arch](const std::string &protocol) -> std::optional<std::string> {
         ProofResult p = proveByteStatesEverywhere(arch, protocol);
         if (p.holds)
           return std::nullopt;
         return p.counterexample;
       }});
  if (arch.name() == "ppc32") {
    out.push_back(cmodxChecker(arch));
    out.push_back(branchRangeChecker(arch));
  }
  return out;
}

MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers) {
  MutationScore score;
  score.arch = std::string(arch.name());
  std::vector<arch::ProtocolInfo> candidates = arch::protocolsFor(arch);
  for (const ExtraMutant &m : extraMutants(arch))
    candidates.push_back({m.name, std::string(arch.name()), m.difference, false});
  for (const arch::ProtocolInfo &info : candidates) {
    MutantResult r;
    r.protocol = info.name;
    r.difference = info.difference;
    r.correct = info.correct;
    for (const MutantChecker &c : checkers) {
      std::optional<std::string> what;
      try {
        what = c.check(info.name);
      } catch (const FatalError &) {
        // A site-level scenario builds protocols from the table by name: a mutant outside the
        // table (extraMutants) is not applicable there.
        if (isTableProtocol(arch, info.name))
          throw;
      }
      if (what) {
        r.killedBy.push_back(c.name);
        r.evidence.push_back(*what);
        if (!r.correct && !allCheckers)
          break;
      }
    }
    if (r.correct)
      score.correctSurvives = score.correctSurvives && r.killedBy.empty();
    else {
      ++score.mutants;
      score.killed += r.killedBy.empty() ? 0 : 1;
    }
    score.results.push_back(std::move(r));
  }
  return score;
}

} // namespace ftsim::verify
