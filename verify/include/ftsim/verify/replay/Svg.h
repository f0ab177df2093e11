#pragma once
// An SVG picture of one counterexample execution (`ftsim check|replay|repro --svg FILE`).
//
// The CPUs are horizontal lanes over time. Only the events of the violation's trail (trailEvents,
// Timeline.h: what touches watched text or engine state, what the harness annotates, and the
// violating event) get a column; the others are elided and counted in the caption. The patcher's
// stores, publications, allocations and frees are drawn on its CPU's lane, IPIs as arrows from the
// patcher's lane to the CPU that takes them, timer preemptions as markers. Under each lane, for
// every watched patch site the trail touches (a site is the run of bytes Harness::siteOf names),
// the site's bytes as that CPU's instruction view holds them after the column's event, one hex
// cell a byte: a byte that differs from memory (the canonical text the patcher writes) is marked
// stale, a byte the column's store wrote is marked written. The violation is drawn in red with
// the oracle's message and its bytes' Capstone decoding; the title names the scenario, protocol,
// models, Linux profile and fidelity as `ftsim check` prints them, and a list under the picture
// gives each drawn event as the timeline prints it.
//
// The views are captured by running the counterexample again one event at a time
// (Harness::runExecution with an after-event hook); that run must give the same event log as the
// counterexample. Deterministic: the same counterexample gives the same bytes.

#include <string>

namespace ftsim::verify {

class Harness;
struct Counterexample;

// Replays `cex` on `harness` (built from the counterexample's scenario) and draws it; afterwards
// the harness's machine holds the execution. FatalError "<origin>: ..." when it does not replay
// to the counterexample's event log or shows no violation.
std::string counterexampleSvg(Harness &harness, const Counterexample &cex,
                              const std::string &origin);

} // namespace ftsim::verify
