#pragma once
// Replays recorded answers. When they run out, defers to `then` (an explorer's way to extend a
// prefix) or, without one, throws FatalError: the schedule does not fit the scenario. An answer
// out of range for the options offered is the same FatalError (a replay file for another
// scenario), never silently clamped.

#include "ftsim/sim/Scheduler.h"

#include <vector>

namespace ftsim::sim {

// Every replay's checks (this class's and the explorers' replays of files): answer number `index`
// of a schedule, `choice`, against the options offered, and a schedule of `size` answers that ran
// out; each a FatalError saying the schedule does not fit the scenario.
std::uint32_t checkedReplayChoice(std::uint32_t choice, std::size_t index,
                                  const DecisionPoint &point);
[[noreturn]] void replayRanOut(std::size_t size);

class ReplayScheduler : public Scheduler {
public:
  explicit ReplayScheduler(std::vector<std::uint32_t> choices, Scheduler *then = nullptr)
      : choices_(std::move(choices)), then_(then) {}
  std::uint32_t decide(const Machine &machine, const DecisionPoint &point) override;
  std::size_t consumed() const { return next_; }

private:
  std::vector<std::uint32_t> choices_;
  Scheduler *then_;
  std::size_t next_ = 0;
};

} // namespace ftsim::sim
