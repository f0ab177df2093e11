// The harness registry (Harness.h): one entry per kind of scenario.

#include "ftsim/verify/harness/Harness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/harness/KernelHarness.h"
#include "ftsim/verify/harness/LinuxHarness.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/harness/TrampolineHarness.h"

#include <array>

namespace ftsim::verify {
namespace {

std::string imageOf(const Scenario &s, const HarnessEnv &env) {
  if (!env.imagePath)
    fatal("{}: a {} scenario needs a guest image, and no image resolver was given", s.name,
          codeKindName(s.code));
  return env.imagePath(s);
}

struct Kind {
  CodeKind code;
  HarnessFactory make;
};

// The registry: one line per kind.
const std::array<Kind, 4> &kinds() {
  static const std::array<Kind, 4> table{{
      {CodeKind::Snippet,
       [](const Scenario &s, const HarnessEnv &) { return std::make_unique<SiteHarness>(s); }},
      {CodeKind::Kernel,
       [](const Scenario &s, const HarnessEnv &env) {
         return std::make_unique<KernelHarness>(s, imageOf(s, env));
       }},
      {CodeKind::Trampoline,
       [](const Scenario &s, const HarnessEnv &env) {
         return std::make_unique<TrampolineHarness>(s, imageOf(s, env));
       }},
      {CodeKind::Linux,
       [](const Scenario &s, const HarnessEnv &) { return std::make_unique<LinuxHarness>(s); }},
  }};
  return table;
}

} // namespace

std::unique_ptr<Harness> makeHarness(const Scenario &scenario, const HarnessEnv &env) {
  for (const Kind &k : kinds())
    if (k.code == scenario.code) {
      std::unique_ptr<Harness> harness = k.make(scenario, env);
      // An expected oracle that cannot judge this scenario's executions could never be met.
      if (!scenario.expectOracle.empty()) {
        std::string names;
        for (const auto &oracle : oraclesFor(*harness)) {
          if (oracle->name() == scenario.expectOracle)
            return harness;
          names += fmt::format("{}{}", names.empty() ? "" : ", ", oracle->name());
        }
        fatal("{}: expect.oracle = '{}' is not an oracle of this scenario (its oracles: {})",
              scenario.name, scenario.expectOracle, names);
      }
      return harness;
    }
  fatal("{}: no harness for code kind '{}'", scenario.name, codeKindName(scenario.code));
}

OracleList oraclesFor(const Harness &harness) {
  OracleList out;
  for (auto &oracle : registeredOracles())
    if (oracle->appliesTo(harness))
      out.push_back(std::move(oracle));
  for (auto &oracle : harness.kindOracles())
    out.push_back(std::move(oracle));
  return out;
}

std::vector<std::uint64_t> runUntracedReference(sim::Machine &m, const sim::Snapshot &initial,
                                                const std::string &scenario) {
  constexpr std::uint64_t kReferenceEvents = 10'000'000;
  sim::RoundRobinScheduler rr;
  m.run(rr, kReferenceEvents);
  std::vector<std::uint64_t> results;
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    if (info.state != sim::TaskState::Exited)
      fatal("{}: task {} did not finish its untraced reference run within {} events ({})", scenario,
            t, kReferenceEvents, sim::taskStateName(info.state));
    results.push_back(info.result);
  }
  m.restore(initial);
  return results;
}

} // namespace ftsim::verify
