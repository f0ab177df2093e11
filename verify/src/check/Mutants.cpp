// The mutation score over the patch protocols of an ISA.

#include "ftsim/verify/check/Mutants.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/LivePatchingRule.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/prove/Proofs.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

bool isTableProtocol(const arch::Arch &arch, const std::string &name) {
  for (const arch::ProtocolInfo &info : arch::protocolsFor(arch))
    if (info.name == name)
      return true;
  return false;
}

// The ISA's live-patching rule (arch::LivePatchingRule: powerpc CMODX plus the other CPUs'
// context synchronisation) as an oracle over a site enabled, retargeted and disabled.
MutantChecker livePatchingRuleChecker(const arch::Arch &arch, const arch::LivePatchingRule &rule) {
  return {std::string(rule.name()),
          [&arch, &rule](const std::string &protocol) -> std::optional<std::string> {
            std::unique_ptr<arch::PatchProtocol> p = arch::makeMutantProtocol(arch, protocol);
            return rule.checkProtocol(*p);
          }};
}

// The call encoding's range as a Z3 theorem (proveCallEncoding: on powerpc LI round-trips exactly
// for offsets in -0x2000000..0x1fffffc, word aligned), then the encoder mutant held to it at the
// probes its target names (the range's edges, kernel text -> module area): it must refuse or
// decode back to its target. Encoder mutants only; protocols use the real encoder.
MutantChecker branchRangeChecker(const arch::Arch &arch, const arch::MutantEntry &mutant) {
  return {"z3:" + mutant.rangeCheck,
          [&arch, &mutant](const std::string &protocol) -> std::optional<std::string> {
            if (protocol != mutant.info.name)
              return std::nullopt; // the real encoder (proveCallEncoding cross-checks it)
            const ProofResult range = proveCallEncoding(arch);
            if (!range.holds)
              return "the LI range proof itself fails: " + range.counterexample;
            const std::uint64_t site = mutant.probeSite;
            const std::uint64_t mask = arch.wordSize() == 4 ? 0xffffffffull : ~0ull;
            for (std::int64_t off : mutant.probeOffsets) {
              const std::uint64_t target = (site + static_cast<std::uint64_t>(off)) & mask;
              const arch::EncodeResult e = mutant.brokenCall(site, target);
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
            if (!isTableProtocol(arch, protocol))
              return std::nullopt; // the ISA's extra mutants are scored by their own checkers
            Scenario s;
            s.name = "mutant";
            s.arch = std::string(arch.name());
            s.protocol = protocol;
            s.cpus = 2;
            // The most permissive models the ISA admits: powerpc fetches an aligned instruction
            // word atomically (Power ISA Book II), so the per-byte stale model would tear it.
            s.store = sim::defaultStoreModel(arch);
            s.fetch = &sim::fetchModelByName(arch.atomicInsnWords() ? "line" : "stale");
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
  if (const arch::LivePatchingRule *rule = arch.livePatchingRule())
    out.push_back(livePatchingRuleChecker(arch, *rule));
  for (const arch::MutantEntry &m : arch.mutants())
    if (m.brokenCall)
      out.push_back(branchRangeChecker(arch, m));
  return out;
}

MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers, const ProgressFn &progress) {
  MutationScore score;
  score.arch = std::string(arch.name());
  std::vector<arch::ProtocolInfo> candidates = arch::protocolsFor(arch);
  for (const arch::MutantEntry &m : arch.mutants())
    candidates.push_back(m.info);
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
        // The Z3 byte-state proof builds protocols from the table by name: a mutant outside the
        // table (Arch::mutants) is not applicable there.
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
    if (progress)
      progress(score.results.size(), candidates.size());
  }
  return score;
}

} // namespace ftsim::verify
