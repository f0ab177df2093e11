#pragma once
// Replay files: a counterexample as JSON — the scenario (its TOML text, so the file stands
// alone), the models, the decision sequence and the expected finding — and their reproduction.
//
//   {"format": "ftsim-replay", "version": 1, "scenario": "<toml>", "arch": "x86_64",
//    "protocol": "direct", "store": "byte", "fetch": "stale", "choices": [2, 0, 1, ...],
//    "preemptions": 1, "events": 6, "log_fnv1a": "0x...",
//    "expect": {"oracle": "torn-fetch", "summary": "...", "event": 5, "bytes": "e8 1f 44 00 00",
//               "decoded": "..."}}
//
// Reproducing runs the scenario under exactly those decisions; the execution's log must hash to
// log_fnv1a and its first violation must equal the expected one. Anything else (an edited file,
// another scenario, a different build of the guest) is a FatalError naming the file.

#include "ftsim/verify/Explore.h"
#include "ftsim/verify/Scenario.h"

#include <functional>
#include <string>
#include <vector>

namespace ftsim::verify {

struct ReplayFile {
  Scenario scenario;
  Counterexample counterexample;
};

std::string replayToJson(const Scenario &scenario, const Counterexample &cex);
// FatalError "<origin>: ..." when the text is not a replay file or is inconsistent.
ReplayFile parseReplay(const std::string &text, const std::string &origin);
ReplayFile loadReplayFile(const std::string &path);
void writeReplayFile(const std::string &path, const Scenario &scenario, const Counterexample &cex);

struct Reproduction {
  ReplayedExecution execution;
  std::string timeline; // one line per event, with the site bytes each CPU saw and the decoding
};

// Runs the replay on `instance` (built from file.scenario) and checks it reproduces byte for byte;
// FatalError "<origin>: ..." otherwise.
Reproduction reproduce(ScenarioInstance &instance, const ReplayFile &file,
                       const std::string &origin);

// Chrome trace-event JSON (opens in Perfetto / chrome://tracing) of the execution the machine
// holds now: one track per CPU (its steps, runs, IPIs, preemptions, faults; one event = 1 µs of
// the trace's clock, so ts is the event index), one track for the patcher (stores with their
// bytes, publications, allocations, frees), and the machine's findings and the given violations
// as global instant events. `symbol` names an address (site or function).
std::string chromeTrace(const sim::Machine &machine,
                        const std::function<std::string(std::uint64_t)> &symbol,
                        const std::vector<Violation> &violations);

// The timeline of the execution the machine holds now: one line per event (events of unwatched
// code folded into their Run), then the findings.
std::string timeline(const ScenarioInstance &instance);

} // namespace ftsim::verify
