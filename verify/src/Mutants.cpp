// The mutation score over the patch protocols of an ISA.

#include "ftsim/verify/Mutants.h"

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/verify/Explore.h"
#include "ftsim/verify/Proofs.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

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
            s.fetch = arch.name() == "x86_64" ? sim::FetchModel::Stale : sim::FetchModel::Line;
            s.sites = sites;
            s.descending = descending;
            ScenarioInstance instance(s);
            ExploreOptions o;
            o.maxExecutions = 20000;
            ExploreResult r = explore(instance, o);
            if (r.counterexample)
              return summarizeViolation(r.counterexample->violation);
            if (!r.stats.complete)
              return std::nullopt;
            return std::nullopt;
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
  return out;
}

MutationScore runMutants(const arch::Arch &arch, const std::vector<MutantChecker> &checkers,
                         bool allCheckers) {
  MutationScore score;
  score.arch = std::string(arch.name());
  for (const arch::ProtocolInfo &info : arch::protocolsFor(arch)) {
    MutantResult r;
    r.protocol = info.name;
    r.difference = info.difference;
    r.correct = info.correct;
    for (const MutantChecker &c : checkers) {
      if (auto what = c.check(info.name)) {
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
