// ftsim_fuzz_scenario: the scenario TOML parser (verify/src/scenario/ScenarioToml.cpp) and the
// scenario's validation, as `ftsim check --scenario FILE` runs them. An accepted scenario must
// survive the round trip through the TOML text that replay files embed (Scenario::toToml).

#include "FuzzSupport.h"

#include "ftsim/verify/scenario/Scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  ftsim::verify::Scenario scenario;
  if (!ftsim::fuzz::accepts([&] { scenario = ftsim::verify::parseScenario(text, "fuzz.toml"); }))
    return 0;
  const std::string toml = scenario.toToml();
  ftsim::verify::Scenario again;
  if (!ftsim::fuzz::accepts([&] { again = ftsim::verify::parseScenario(toml, "fuzz.toml"); }))
    ftsim::fuzz::finding("an accepted scenario's toToml() text is rejected:\n" + toml);
  if (again.toToml() != toml)
    ftsim::fuzz::finding("toToml() is not stable across a round trip:\n" + toml);
  return 0;
}
