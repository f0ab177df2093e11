#pragma once
// The pictures of an execution, one writer each for every kind of scenario: the text timeline
// (one line per event, the harness's names for addresses and its annotations), the trail of a
// violation (the events that led to it), and Chrome trace-event JSON (Perfetto).

#include "ftsim/sim/Machine.h"
#include "ftsim/verify/oracle/Oracle.h"

#include <string>
#include <vector>

namespace ftsim::verify {

class Harness;

// One event for people: "#7 cpu1 task0 step site0 fetch site0 [0f 1f 2e 00 00] = nopl (%rsi);
// ..." followed by the harness's annotation.
std::string describeEvent(const Harness &harness, const sim::Machine &machine,
                          const sim::EventRecord &event);

// The indices of the events eventTrail() describes (the SVG draws the same selection).
std::vector<std::uint64_t> trailEvents(const Harness &harness, const sim::Machine &machine,
                                       std::uint64_t upTo, const Violation *v = nullptr);

// Every event up to event `upTo` that touches watched text or engine state (stores,
// publications, IPIs, preemptions, site fetches, traps, hypercalls, notes), every event the
// harness annotates, and `upTo` itself; `v`'s event, when given, ends with "  <- ORACLE" and the
// bytes it fetched stale (Slice.h). The full trail (--full-timeline).
std::vector<std::string> eventTrail(const Harness &harness, const sim::Machine &machine,
                                    std::uint64_t upTo, const Violation *v = nullptr);

// The timeline of the execution the harness's machine holds, then its findings and every task's
// end state (with the reference result where there is one). With a violation and not `full`, the
// relevance slice for it (Slice.h: the events that led to it, the others elided); otherwise
// eventTrail() of the last event.
std::string timeline(const Harness &harness, const Violation *v = nullptr, bool full = false);

// Chrome trace-event JSON of the execution the harness's machine holds: one track per CPU (its
// steps, runs, IPIs, preemptions, faults; one event = 1 µs of the trace's clock, so ts is the
// event index), one track for the patcher (stores with their bytes, publications, allocations,
// frees), and the machine's findings and the given violations as global instant events.
std::string chromeTrace(const Harness &harness, const std::vector<Violation> &violations);

// Fills `v.trail` (oracles leave it empty: formatting trails of every violating execution would
// cost more than the search): the relevance slice up to the violation (Slice.h), or with `full`
// eventTrail() up to it.
void attachTrail(const Harness &harness, Violation &v, bool full = false);

} // namespace ftsim::verify
