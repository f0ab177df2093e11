#pragma once
// Cycles over actors (CPU 0..n-1, then the patcher): each decision runs the next actor that has
// an enabled event, taking that actor's first offered event (an IPI before a step). Preemption is
// chosen only every `preemptEvery`-th turn of a CPU that offers it (0: never). Stale bytes: the
// newest value when `newestStale`, else the oldest.

#include "ftsim/sim/Scheduler.h"

#include <array>
#include <cstdint>

namespace ftsim::sim {

class RoundRobinScheduler : public Scheduler {
public:
  explicit RoundRobinScheduler(unsigned preemptEvery = 0, bool newestStale = true)
      : preemptEvery_(preemptEvery), newestStale_(newestStale) {}
  std::uint32_t decide(const Machine &machine, const DecisionPoint &point) override;

private:
  unsigned preemptEvery_;
  bool newestStale_;
  unsigned lastActor_ = ~0u;
  std::uint64_t turns_ = 0;
  // The answers worked out from the list of events named `memoId_` (DecisionPoint::eventsId), by
  // the last actor: the event chosen and its actor, -1 when not yet worked out (or when it depends
  // on the turn: a preemption every `preemptEvery` turns).
  std::uint64_t memoId_ = 0;
  std::array<std::int8_t, 9> memoPick_{}, memoActor_{}; // a machine has at most 8 CPUs
};

} // namespace ftsim::sim
