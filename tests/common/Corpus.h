#pragma once
// The source tree's corpora and this build tree's guest images, as the tests reach them.

#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <string>

namespace ftsim::test {

// corpora/<kind> in the source tree ("scenarios", "protocols", "encodings").
inline std::string corpusDir(const std::string &kind) {
  return std::string(FTSIM_CORPORA_DIR) + "/" + kind;
}

// corpora/scenarios/NAME.toml.
inline std::string corpusScenarioPath(const std::string &name) {
  return corpusDir("scenarios") + "/" + name + ".toml";
}

// That file loaded and its claims validated, as `ftsim check --scenario` reads it.
inline verify::Scenario corpusScenario(const std::string &name) {
  const std::string path = corpusScenarioPath(name);
  verify::Scenario s = verify::loadScenarioFile(path);
  s.validate(path);
  return s;
}

// The built-in guest image a scenario names, as this build tree built it.
inline std::string builtImagePath(const verify::Scenario &s) {
  return std::string(FTSIM_GUEST_DIR) + "/" + s.image + "/kernel.elf";
}

// What the CLI resolves built-in images with, for this build tree.
inline verify::HarnessEnv builtImages() {
  verify::HarnessEnv env;
  env.imagePath = builtImagePath;
  return env;
}

} // namespace ftsim::test
