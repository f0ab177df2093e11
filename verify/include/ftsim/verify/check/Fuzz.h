#pragma once
// ftsim fuzz: random engine operation sequences (register/unregister ops with random filters,
// set/append/remove filters, enable/disable the function tracer) on the built-in guest, each run
// under a random or PCT schedule with random store and fetch models, every oracle of the
// engine-level scenarios on (KernelHarness.h). A failing sequence is shrunk (steps removed one at
// a time while a violation of the same oracle remains under the same schedule seed), its schedule
// minimised (Explore.h minimise), and it is saved as a replay file `ftsim replay` reproduces.
//
// Determinism: run i is generated and scheduled from splitmix64(seed, i) only. With `runs` set,
// the fuzzer does exactly that many runs: same seed, same runs, same output. With only a time
// budget, the number of runs done depends on the machine's speed and is reported; rerun with
// --runs N to repeat it exactly.

#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

struct FuzzOptions {
  std::string arch{::ftsim::arch::defaultArch().name()};
  std::string image;     // the scenario's code.image (a flavour name or a path)
  std::string imagePath; // the resolved image file
  std::uint64_t seed = 1;
  std::uint64_t runs = 0; // 0: until `seconds` have passed
  double seconds = 10;
  unsigned maxSteps = 6;
  // The patch protocol every run uses (arch::protocolsFor()); empty: the ISA's correct one (int3,
  // word). A broken one (direct, int3-skip, ...) points the fuzzer at a known-bad engine, to show
  // its failure path finds, shrinks and saves a violation.
  std::string protocol;
  // A Linux profile (model/LinuxProfile.h): every run uses its protocol and update order and
  // claims it (a --protocol that is not the profile's is bad input); empty: none claimed.
  std::string linuxProfile;
  std::function<void(std::uint64_t runs, std::uint64_t events)> progress;
};

struct FuzzResult {
  std::uint64_t runs = 0;
  std::uint64_t events = 0;
  std::uint64_t notes = 0;           // engine operations refused (errno), over all runs
  std::optional<Scenario> failing;   // shrunk
  std::optional<Counterexample> cex; // on `failing`, minimised
  std::optional<Scenario> original;  // as generated
  std::string originalViolation;
  double seconds = 0;
};

// The functions the workloads call (the fuzzer's filter vocabulary), from a round-robin run.
std::vector<std::string> calledFunctions(const std::string &imagePath,
                                         const std::vector<std::string> &workloads);

// The scenario of run `index`.
Scenario fuzzScenario(const FuzzOptions &options, const std::vector<std::string> &functions,
                      std::uint64_t index);

FuzzResult fuzz(const FuzzOptions &options);

// The result for people (NO VIOLATION in N runs, not a proof; or the VIOLATION with the generated
// and shrunk sequences), and as JSON without times. `replayPath`: where the failure was written.
std::string formatFuzz(const FuzzOptions &options, const FuzzResult &result,
                       const std::string &replayPath);
std::string fuzzJson(const FuzzOptions &options, const FuzzResult &result,
                     const std::string &replayPath);

} // namespace ftsim::verify
