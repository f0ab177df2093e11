#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/ReplayScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "ftsim/arch/Error.h"

#include <array>

namespace ftsim::sim {

std::vector<std::uint32_t> choicesOf(std::span<const Decision> schedule) {
  std::vector<std::uint32_t> out;
  out.reserve(schedule.size());
  for (const Decision &d : schedule)
    out.push_back(d.choice);
  return out;
}

std::uint32_t RoundRobinScheduler::decide(const Machine &machine, const DecisionPoint &point) {
  if (point.kind == DecisionKind::StaleByte)
    return newestStale_ ? point.options - 1 : 0;
  // The same events as a decision already made after the same actor's turn: the same answer
  // (every instruction an event, the machine offers the same list again and again).
  if (point.eventsId != 0 && point.eventsId == memoId_ && lastActor_ < memoPick_.size() &&
      memoPick_[lastActor_] >= 0) {
    const unsigned key = lastActor_;
    lastActor_ = static_cast<unsigned>(memoActor_[key]);
    ++turns_;
    return static_cast<std::uint32_t>(memoPick_[key]);
  }
  // Actors: CPUs 0..n-1, then the patcher (n). Each actor's first event and its timer interrupt,
  // found in one pass (a timer interrupt that runs its handler is never a round-robin turn).
  const unsigned actors = machine.config().cpus + 1;
  std::array<int, 9> first, preempt; // a machine has at most 8 CPUs
  if (actors > first.size())
    FTSIM_PANIC("round robin over {} actors", actors);
  first.fill(-1);
  preempt.fill(-1);
  for (std::uint32_t i = 0; i < point.options; ++i) {
    const EventChoice &e = point.events[i];
    const unsigned actor =
        e.kind == EventKind::Store || e.kind == EventKind::Publish ? actors - 1 : e.cpu;
    if (e.kind == EventKind::Preempt)
      preempt[actor] = static_cast<int>(i);
    else if (e.kind != EventKind::Irq && first[actor] < 0)
      first[actor] = static_cast<int>(i);
  }
  // The actor after the last one (the first of all before any), then each in turn.
  unsigned actor = lastActor_ < actors ? lastActor_
                   : lastActor_ == ~0u ? actors - 1
                                       : lastActor_ % actors;
  for (unsigned d = 1; d <= actors; ++d) {
    if (++actor == actors)
      actor = 0;
    if (first[actor] < 0 && preempt[actor] < 0)
      continue;
    const unsigned key = lastActor_;
    lastActor_ = actor;
    ++turns_;
    const bool byTurn = preemptEvery_ && turns_ % preemptEvery_ == 0;
    const int pick =
        preempt[actor] >= 0 && (first[actor] < 0 || byTurn) ? preempt[actor] : first[actor];
    if (point.eventsId != memoId_) {
      memoId_ = point.eventsId;
      memoPick_.fill(-1);
    }
    if (key < memoPick_.size() && (preemptEvery_ == 0 || preempt[actor] < 0 || first[actor] < 0)) {
      memoPick_[key] = static_cast<std::int8_t>(pick);
      memoActor_[key] = static_cast<std::int8_t>(actor);
    }
    return static_cast<std::uint32_t>(pick);
  }
  FTSIM_PANIC("round robin found no enabled event among {}", point.options);
}

std::uint32_t RandomScheduler::decide(const Machine &, const DecisionPoint &point) {
  return static_cast<std::uint32_t>(rng_() % point.options);
}

std::uint32_t checkedReplayChoice(std::uint32_t choice, std::size_t index,
                                  const DecisionPoint &point) {
  if (choice >= point.options)
    fatal("replayed decision #{} is {}, but only {} options are offered: the schedule does not "
          "fit this scenario",
          index, choice, point.options);
  return choice;
}

void replayRanOut(std::size_t size) {
  fatal("replayed schedule ends after {} decisions, but the run asks for more: it does not fit "
        "this scenario",
        size);
}

std::uint32_t ReplayScheduler::decide(const Machine &machine, const DecisionPoint &point) {
  if (next_ >= choices_.size()) {
    if (then_)
      return then_->decide(machine, point);
    replayRanOut(choices_.size());
  }
  const std::uint32_t choice = checkedReplayChoice(choices_[next_], next_, point);
  ++next_;
  return choice;
}

} // namespace ftsim::sim
