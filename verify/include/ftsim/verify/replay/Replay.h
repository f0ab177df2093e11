#pragma once
// Replay files: a counterexample as JSON — the scenario (its TOML text, so the file stands
// alone), the models, the decision sequence and the expected finding — and their reproduction.
//
//   {"format": "ftsim-replay", "version": 2, "scenario": "<toml>", "arch": "x86_64",
//    "protocol": "direct", "store": "byte", "fetch": "stale", "choices": [2, 0, 1, ...],
//    "then": "continue", "preemptions": 1, "events": 6, "log_fnv1a": "0x...",
//    "expect": {"oracle": "torn-fetch", "summary": "...", "event": 5, "bytes": "e8 1f 44 00 00",
//               "decoded": "..."},
//    "digests": {"scenario": "0x...", "schedule": "0x...", "expectation": "0x..."}}
//
// The digests (FNV-1a of each part's values in canonical JSON) cover the whole file: a file edited
// by hand is refused when it is read, in one line naming the part that differs. Reproducing runs
// the scenario under exactly those decisions (with "then": "continue", a minimised
// counterexample's, the continuation after them: the process that ran last while it can, else the
// first enabled event; stale bytes the newest value); the execution's log must hash to log_fnv1a
// and its first violation must equal the expected one. Anything else (another scenario, a different
// build of the guest) is a FatalError naming the file.

#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/scenario/Scenario.h"

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
  Violation violation;  // the recorded one, observed again (with its trail)
  std::string timeline; // Timeline.h
};

// Runs the replay on `harness` (built from file.scenario) and checks it reproduces byte for byte:
// the event log hash, the first violation's summary, bytes and decoding; FatalError "<origin>:
// ..." naming what differs otherwise. The harness's machine then holds the execution.
// The timeline and the violation's trail are the relevance slice (Slice.h), or every event with
// `fullTimeline`.
Reproduction reproduce(Harness &harness, const ReplayFile &file, const std::string &origin,
                       bool fullTimeline = false);

} // namespace ftsim::verify
