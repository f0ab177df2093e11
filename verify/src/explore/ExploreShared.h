#pragma once
// What the explorers share (private to verify/src): processes of the machine's events, preemption
// counting, and a replaying scheduler.

#include "ftsim/arch/Error.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/ReplayScheduler.h"
#include "ftsim/verify/explore/Explore.h"

#include <span>

namespace ftsim::verify::detail {

using sim::DecisionKind;
using sim::EventKind;
using sim::EventRecord;

constexpr int kPatcher = 24;      // CPU processes are cpu*3 + {0: execution, 1: IPI, 2: preemption}
constexpr int kIrqProcesses = 25; // then one per CPU for its timer interrupt with a handler (Irq)
constexpr int kProcesses = 33;

inline int processOf(EventKind kind, unsigned cpu) {
  switch (kind) {
  case EventKind::Store:
  case EventKind::Publish:
  case EventKind::Alloc:
  case EventKind::Free:
    return kPatcher;
  case EventKind::Ipi:
    return static_cast<int>(cpu) * 3 + 1;
  case EventKind::Preempt:
    return static_cast<int>(cpu) * 3 + 2;
  case EventKind::Irq:
    return kIrqProcesses + static_cast<int>(cpu);
  case EventKind::Step:
  case EventKind::FetchLine:
  case EventKind::Run:
    return static_cast<int>(cpu) * 3;
  }
  return kPatcher;
}

inline int processOf(const EventRecord &e) { return processOf(e.kind, e.cpu); }
inline int processOf(const sim::EventChoice &c) { return processOf(c.kind, c.cpu); }

inline bool isNote(const EventRecord &e) {
  return e.kind == EventKind::Alloc || e.kind == EventKind::Free;
}

inline bool serialises(const EventRecord &e) {
  return e.outcome == sim::StepOutcome::TrapHandled || e.outcome == sim::StepOutcome::Serialised ||
         e.outcome == sim::StepOutcome::IrqReturn;
}

// A CPU event whose position relative to an IPI of the same CPU can matter (one that turns
// interrupts on or off also enables or disables that IPI).
inline bool touchesCpuState(const EventRecord &e) {
  return e.kind == EventKind::FetchLine || e.fetchSize || e.sharedRead || e.dataSize ||
         e.regionChange ||
         (e.outcome != sim::StepOutcome::None && e.outcome != sim::StepOutcome::WatchedStop);
}

// The first executed (non-note) event at or after log index `from`.
inline std::size_t eventAtOrAfter(std::span<const EventRecord> log, std::size_t from) {
  while (from < log.size() && isNote(log[from]))
    ++from;
  return from;
}

inline int lastProcess(std::span<const EventRecord> log) {
  for (std::size_t i = log.size(); i-- > 0;)
    if (!isNote(log[i]))
      return processOf(log[i]);
  return -1;
}

// Whether choosing option `o` preempts the process that ran last (it is enabled and not chosen).
inline bool isPreemption(const sim::DecisionPoint &p, std::uint32_t o, int last) {
  if (last < 0 || processOf(p.events[o]) == last)
    return false;
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (processOf(p.events[i]) == last)
      return true;
  return false;
}

// --- Preemption counting (shared by every scheduler) ---------------------------------------------

class CountingScheduler : public sim::Scheduler {
public:
  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    std::uint32_t choice = choose(machine, point);
    if (point.kind == DecisionKind::Event &&
        isPreemption(point, choice, lastProcess(machine.events())))
      ++preemptions_;
    return choice;
  }
  unsigned preemptions() const { return preemptions_; }

protected:
  virtual std::uint32_t choose(const sim::Machine &machine, const sim::DecisionPoint &point) = 0;

private:
  unsigned preemptions_ = 0;
};

// A counterexample's continuation after its last recorded decision (Counterexample::continues):
// the process that ran last while it has an enabled event (no preemption), else the first enabled
// event; a stale byte takes the newest value.
inline std::uint32_t continuation(const sim::Machine &m, const sim::DecisionPoint &p) {
  if (p.kind == DecisionKind::StaleByte)
    return p.options - 1;
  const int last = lastProcess(m.events());
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (processOf(p.events[i]) == last)
      return i;
  return 0;
}

// The same, fair: after `run` events in a row of one process, the first enabled event of another
// (a process spinning on what another must do, a lock or a flag, would otherwise never let it). The
// last process's run is kept up to date as one execution's log grows (scanning back over the log
// at every decision took half of a deviation-bounded search): one per execution.
class FairContinuation {
public:
  explicit FairContinuation(std::size_t run) : run_(run) {}
  std::uint32_t answer(const sim::Machine &m, const sim::DecisionPoint &p) {
    const auto log = m.events();
    for (; seen_ < log.size(); ++seen_) {
      if (isNote(log[seen_]))
        continue;
      const int process = processOf(log[seen_]);
      length_ = process == last_ ? length_ + 1 : 1;
      last_ = process;
    }
    if (p.kind == DecisionKind::StaleByte)
      return p.options - 1;
    if (last_ >= 0 && length_ >= run_)
      for (std::uint32_t i = 0; i < p.options; ++i)
        if (processOf(p.events[i]) != last_)
          return i;
    return continuation(m, p);
  }

private:
  std::size_t run_;
  std::size_t seen_ = 0;
  int last_ = -1;
  std::size_t length_ = 0;
};

// A timer interrupt: a preemption, or one that runs its handler's guest code.
inline bool isTimerInterrupt(const sim::EventChoice &e) {
  return e.kind == EventKind::Preempt || e.kind == EventKind::Irq;
}

// Who runs a process's events in round robin: its CPU (0 .. cpus-1, its IPIs and interrupts
// included), or the patcher (`cpus`; also for no process yet, -1).
inline unsigned actorOfProcess(int process, unsigned cpus) {
  if (process < 0 || process == kPatcher)
    return cpus;
  if (process >= kIrqProcesses)
    return static_cast<unsigned>(process - kIrqProcesses);
  return static_cast<unsigned>(process / 3);
}
inline unsigned actorOf(const sim::EventChoice &e, unsigned cpus) {
  return actorOfProcess(processOf(e), cpus);
}

// Round robin over the CPUs and the patcher (cpu0, cpu1, ..., the patcher, cpu0, ...): the first
// enabled event other than a timer interrupt of the next actor after `lastActor` that has one; 0
// when only timer interrupts are enabled. rr-bounded's base, and the engine-level search's
// round-robin base.
inline std::uint32_t roundRobinChoice(const sim::DecisionPoint &p, unsigned cpus,
                                      unsigned lastActor) {
  const unsigned actors = cpus + 1;
  for (unsigned d = 1; d <= actors; ++d) {
    const unsigned actor = (lastActor + d) % actors;
    for (std::uint32_t i = 0; i < p.options; ++i)
      if (actorOf(p.events[i], cpus) == actor && !isTimerInterrupt(p.events[i]))
        return i;
  }
  return 0;
}

class ContinuationScheduler final : public sim::Scheduler {
public:
  std::uint32_t decide(const sim::Machine &m, const sim::DecisionPoint &p) override {
    return continuation(m, p);
  }
};

// Replays recorded answers (kContinuationChoice: the continuation's answer there); with
// `continues`, the continuation answers once they run out. Too few answers without `continues`, or
// one out of range, is a FatalError: the schedule does not fit the scenario.
class CountingReplay final : public CountingScheduler {
public:
  explicit CountingReplay(std::vector<std::uint32_t> choices, bool continues = false)
      : choices_(std::move(choices)), continues_(continues) {}

protected:
  std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
    if (next_ >= choices_.size()) {
      if (continues_)
        return continuation(m, p);
      sim::replayRanOut(choices_.size());
    }
    const std::uint32_t choice = choices_[next_];
    if (choice == kContinuationChoice) {
      ++next_;
      return continuation(m, p);
    }
    sim::checkedReplayChoice(choice, next_, p);
    ++next_;
    return choice;
  }

private:
  std::vector<std::uint32_t> choices_;
  bool continues_;
  std::size_t next_ = 0;
};

} // namespace ftsim::verify::detail
