#pragma once
// The Scheduler resolves every nondeterministic choice of a run. A schedule is the sequence of
// its answers, each a small integer below the number of options offered: which enabled event runs
// next (DecisionKind::Event), and under the stale fetch model which of the values a byte has held
// since the CPU last serialised that CPU fetches (DecisionKind::StaleByte). The machine records
// every decision (Machine::schedule()); feeding the same answers back (ReplayScheduler) to the same
// scenario reproduces the event log byte for byte. Explorers (verify/) implement this interface.

#include "ftsim/sim/Event.h"

#include <cstdint>
#include <span>
#include <vector>

namespace ftsim::sim {

class Machine;

enum class DecisionKind : std::uint8_t { Event, StaleByte };

// What the Scheduler is asked. Valid only during the call.
struct DecisionPoint {
  DecisionKind kind = DecisionKind::Event;
  std::uint32_t options = 0; // answer in [0, options)
  // Event: the enabled events, in a deterministic order (per CPU ascending: Ipi, Step/FetchLine/
  // Run, Preempt; then the patcher's Store/Publish).
  std::span<const EventChoice> events;
  // Event: nonzero names this list of events, unique in the process: a later point with the same
  // id offers the same events (the machine lists them again only when something they depend on
  // may have changed), so a scheduler may reuse what it worked out from them. 0: not named.
  std::uint64_t eventsId = 0;
  // StaleByte: the fetching CPU, the fetch granule's address, and its candidate values, oldest
  // first (index 0: the value at the CPU's last serialisation; the last: the current value). A
  // granule is the unit of atomic instruction fetch: one byte on x86, an aligned 4-byte word on
  // powerpc, so `values` holds `options` values of that many bytes each.
  unsigned cpu = 0;
  std::uint64_t addr = 0;
  std::span<const std::uint8_t> values;
};

// One recorded answer.
struct Decision {
  DecisionKind kind = DecisionKind::Event;
  std::uint32_t choice = 0;
  std::uint32_t options = 0;
  bool operator==(const Decision &) const = default;
};

class Scheduler {
public:
  virtual ~Scheduler() = default;
  // Called by Machine::run() for every decision; must return a value below point.options.
  virtual std::uint32_t decide(const Machine &machine, const DecisionPoint &point) = 0;
};

// The answers of a schedule, for ReplayScheduler.
std::vector<std::uint32_t> choicesOf(std::span<const Decision> schedule);

} // namespace ftsim::sim
