// Round robin decides by its rule on any list of events, in the machine's order or not, offered
// once or again and again under one name: the rule written out plainly here (each actor's first
// event and preemption in tables, then the next actor in turn) against the scheduler, which
// reuses the answers it worked out for a named list.

#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace ftsim::sim {
namespace {

// The rule (RoundRobinScheduler.h), actor by actor: CPUs 0..n-1 then the patcher take turns; an
// actor's turn takes its first event that is neither a preemption nor a timer interrupt, or its
// preemption when it has no such event or on every `preemptEvery`-th turn.
class PlainRoundRobin {
public:
  explicit PlainRoundRobin(unsigned preemptEvery) : preemptEvery_(preemptEvery) {}
  std::uint32_t decide(unsigned cpus, const std::vector<EventChoice> &events) {
    const unsigned actors = cpus + 1;
    auto actorOf = [actors](const EventChoice &e) {
      return e.kind == EventKind::Store || e.kind == EventKind::Publish ? actors - 1 : e.cpu;
    };
    // The actors in turn after the last one (from the first, before any): the first with a turn.
    for (unsigned d = 1; d <= actors; ++d) {
      const unsigned actor = last_ == ~0u ? d - 1 : (last_ + d) % actors;
      // Backwards, so that `ordinary` ends on the actor's first such event and `preemption` is
      // its last preemption.
      int ordinary = -1, preemption = -1;
      for (auto i = static_cast<int>(events.size()) - 1; i >= 0; --i) {
        const EventChoice &e = events[static_cast<std::size_t>(i)];
        if (actorOf(e) != actor || e.kind == EventKind::Irq)
          continue;
        if (e.kind != EventKind::Preempt)
          ordinary = i;
        else if (preemption < 0)
          preemption = i;
      }
      if (ordinary < 0 && preemption < 0)
        continue;
      last_ = actor;
      ++turns_;
      const bool byTurn = preemptEvery_ != 0 && turns_ % preemptEvery_ == 0;
      return static_cast<std::uint32_t>(preemption >= 0 && (ordinary < 0 || byTurn) ? preemption
                                                                                    : ordinary);
    }
    ADD_FAILURE() << "no actor has an event";
    return 0;
  }

private:
  unsigned preemptEvery_;
  unsigned last_ = ~0u;
  std::uint64_t turns_ = 0;
};

// A random list of events on `cpus` CPUs: per CPU (in order) maybe an IPI, a step, a preemption,
// a timer interrupt, then maybe the patcher's store or publication; `shuffled` mixes the order.
std::vector<EventChoice> randomEvents(std::mt19937 &rng, unsigned cpus, bool shuffled) {
  std::vector<EventChoice> out;
  const auto turnless = [](const EventChoice &e) { return e.kind == EventKind::Irq; };
  while (std::all_of(out.begin(), out.end(), turnless)) { // a timer interrupt is never a turn
    out.clear();
    for (unsigned c = 0; c < cpus; ++c) {
      const auto cpu = static_cast<std::uint8_t>(c);
      if (rng() % 5 == 0)
        out.push_back({EventKind::Ipi, cpu});
      const bool runs = rng() % 4 != 0;
      if (runs)
        out.push_back({rng() % 3 == 0 ? EventKind::FetchLine : EventKind::Step, cpu});
      // A preemption or timer interrupt without a step does not come from the machine, but the
      // rule still decides it.
      if ((runs || rng() % 8 == 0) && rng() % 3 == 0)
        out.push_back({EventKind::Preempt, cpu});
      if (rng() % 4 == 0)
        out.push_back({EventKind::Irq, cpu});
    }
    if (rng() % 3 == 0)
      out.push_back({rng() % 2 ? EventKind::Store : EventKind::Publish, 0});
  }
  if (shuffled)
    std::shuffle(out.begin(), out.end(), rng);
  return out;
}

TEST(RoundRobin, DecidesByItsRuleOnAnyListOfEvents) {
  for (unsigned cpus : {1u, 2u, 4u, 8u})
    for (unsigned preemptEvery : {0u, 3u})
      for (bool shuffled : {false, true}) {
        MachineConfig config;
        config.cpus = cpus;
        Machine m(arch::archByName("x86_64"), config);
        std::mt19937 rng(cpus * 100 + preemptEvery * 10 + shuffled);
        RoundRobinScheduler scheduler(preemptEvery);
        PlainRoundRobin plain(preemptEvery);
        std::vector<EventChoice> events;
        std::uint64_t id = 0;
        for (int i = 0; i < 5000; ++i) {
          // Mostly the same list again under the same name, as the machine offers it between
          // plain steps (the scheduler may reuse its answers); sometimes a new list, named or not.
          if (events.empty() || rng() % 4 == 0) {
            events = randomEvents(rng, cpus, shuffled);
            id = rng() % 5 == 0 ? 0 : static_cast<std::uint64_t>(i) + 1;
          }
          DecisionPoint point;
          point.options = static_cast<std::uint32_t>(events.size());
          point.events = events;
          point.eventsId = id;
          const std::uint32_t want = plain.decide(cpus, events);
          ASSERT_EQ(scheduler.decide(m, point), want)
              << "decision " << i << " on " << cpus << " CPUs, preemption every " << preemptEvery
              << (shuffled ? ", events shuffled" : "");
        }
      }
}

} // namespace
} // namespace ftsim::sim
