// The rr-bounded explorer: every schedule within `bound` deviations from round robin (Explore.h).

#include "DeviationSets.h"
#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <map>

namespace ftsim::verify {
namespace {

using namespace detail;

// Round robin over the CPUs and the patcher (never choosing a timer preemption), with the answers
// at some decisions overridden; records the alternatives an explorer may try at every decision
// from `recordFrom` on: timer preemptions when `preemptions`, other enabled events otherwise.
class BoundedScheduler final : public CountingScheduler {
public:
  BoundedScheduler(std::map<std::uint64_t, std::uint32_t> overrides, std::uint64_t recordFrom,
                   bool preemptions)
      : overrides_(std::move(overrides)), recordFrom_(recordFrom), preemptions_(preemptions) {}

  const std::vector<std::pair<std::uint64_t, std::uint32_t>> &alternatives() const {
    return alternatives_;
  }

protected:
  std::uint32_t choose(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    if (point.kind == sim::DecisionKind::StaleByte)
      return point.options - 1;
    const std::uint64_t index = decisions_++;
    const unsigned cpus = machine.config().cpus;
    const std::uint32_t base = roundRobinChoice(point, cpus, lastActor_);
    if (index >= recordFrom_)
      for (std::uint32_t i = 0; i < point.options; ++i) {
        const bool preempt = isTimerInterrupt(point.events[i]);
        if (i != base && preempt == preemptions_)
          alternatives_.push_back({index, i});
      }
    std::uint32_t choice = base;
    if (auto it = overrides_.find(index); it != overrides_.end()) {
      if (it->second >= point.options)
        FTSIM_PANIC("bounded schedule: decision {} has {} options, override {}", index,
                    point.options, it->second);
      choice = it->second;
    }
    lastActor_ = actorOf(point.events[choice], cpus);
    return choice;
  }

private:
  std::map<std::uint64_t, std::uint32_t> overrides_;
  std::uint64_t recordFrom_;
  bool preemptions_;
  std::uint64_t decisions_ = 0;
  unsigned lastActor_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> alternatives_;
};

class RoundRobinBounded final : public Explorer {
public:
  std::string_view name() const override { return "rr-bounded"; }
  bool exhaustive() const override { return true; }
  std::string bounds(const Harness &h, const ExploreOptions &o) const override {
    return fmt::format("{} <= {} around round robin",
                       h.scenario().preemption ? "timer preemptions"
                                               : "delays (another enabled event)",
                       o.preemptionBound);
  }
  void run(Exploration &x) const override {
    const ExploreOptions &o = x.options();
    if (o.preemptionBound < 0)
      fatal("explorer rr-bounded needs a finite bound (bounds.preemptions or --bound 0 or more)");
    const auto bound = static_cast<std::size_t>(o.preemptionBound);
    const bool preemptions = x.harness().scenario().preemption;
    searchDeviationSets(x, bound, [&](const auto &overrides, std::uint64_t recordFrom) {
      return BoundedScheduler(overrides, recordFrom, preemptions);
    });
  }
};

} // namespace

const Explorer &roundRobinBoundedExplorer() {
  static const RoundRobinBounded e;
  return e;
}

} // namespace ftsim::verify
