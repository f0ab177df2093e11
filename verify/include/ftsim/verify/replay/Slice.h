#pragma once
// The relevance slice of an execution for one violation: which events a person needs to see to
// understand it, and which bytes a CPU fetched stale and since when.
//
// An event is relevant when it is the violation itself; a store of the patcher to a site the
// violation involves (the sites of its pc, of its fetch, the one it names and those the observing
// CPU fetched from in its last kSliceLastSteps events; for a violation that names no site, such
// as a task's wrong result, every site its CPUs fetched from); a publication,
// allocation or free of the patcher; an IPI, preemption or serialising instruction of a CPU the
// violation involves; an event of such a CPU that fetches from an involved site, traps, faults or
// that the harness annotates; or one of the observing CPU's last kSliceLastSteps events up to the
// violation. After the violation, only the patcher's events and the faults and exits of involved
// CPUs. Every other event is elided; a run of elided events is one line.

#include "ftsim/sim/Machine.h"
#include "ftsim/verify/oracle/Oracle.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ftsim::verify {

class Harness;

// How many of the observing CPU's last events the slice keeps whatever they are.
inline constexpr unsigned kSliceLastSteps = 8;

// Whether event `e` is the patcher's own (a store, publication, allocation or free it made on its
// CPU), as opposed to an event of a guest CPU.
bool isPatcherEvent(const sim::Machine &machine, const sim::EventRecord &e);

// The events up to `upTo` (all of them when `upTo` is past the last one) that the slice of `v`
// keeps, formatted by describeEvent(), each run of elided events as one line "… 37 events of cpu1
// elided (no involved site, store or sync)". The violation's own event carries
// staleBytesText() when there is one.
std::vector<std::string> relevantTrail(const Harness &harness, const sim::Machine &machine,
                                       const Violation &v, std::uint64_t upTo);

// For a violation at a fetch: the bytes the observing CPU fetched that differ from the text the
// patcher had written by then, each with the event since which it was stale: the patcher's store
// that overwrote the value the CPU read, after the CPU last serialised (an IPI, a preemption, a
// handled trap's return, a serialising instruction). "" when no fetched byte was stale.
// Example: "stale bytes (cpu1 last serialised at #2): site0+1 read 1f, stale since #3 (the
// patcher stored 37)".
std::string staleBytesText(const Harness &harness, const sim::Machine &machine, const Violation &v);

} // namespace ftsim::verify
