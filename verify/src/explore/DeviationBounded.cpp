// The deviation-bounded explorer: every schedule within `bound` deviations from the continuation
// (Explore.h).

#include "DeviationSets.h"
#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <map>

namespace ftsim::verify {
namespace {

using namespace detail;

// Events in a row one process may run before the base schedule passes to another.
constexpr std::size_t kFairRun = 1024;

// The fair continuation (the process that ran last while it can and for fewer than kFairRun
// events in a row, else the first enabled event; stale bytes the newest value) with the answers
// at some decisions overridden; records every other answer possible at every decision from
// `recordFrom` on.
class OverridingScheduler final : public CountingScheduler {
public:
  OverridingScheduler(std::map<std::uint64_t, std::uint32_t> overrides, std::uint64_t recordFrom)
      : overrides_(std::move(overrides)), recordFrom_(recordFrom) {}

  const std::vector<std::pair<std::uint64_t, std::uint32_t>> &alternatives() const {
    return alternatives_;
  }

protected:
  std::uint32_t choose(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    const std::uint64_t index = decisions_++;
    const std::uint32_t base = fair_.answer(machine, point);
    if (index >= recordFrom_)
      for (std::uint32_t i = 0; i < point.options; ++i)
        if (i != base)
          alternatives_.push_back({index, i});
    auto it = overrides_.find(index);
    if (it == overrides_.end())
      return base;
    if (it->second >= point.options)
      FTSIM_PANIC("deviation-bounded schedule: decision {} has {} options, override {}", index,
                  point.options, it->second);
    return it->second;
  }

private:
  std::map<std::uint64_t, std::uint32_t> overrides_;
  std::uint64_t recordFrom_;
  std::uint64_t decisions_ = 0;
  FairContinuation fair_{kFairRun};
  std::vector<std::pair<std::uint64_t, std::uint32_t>> alternatives_;
};

class DeviationBounded final : public Explorer {
public:
  std::string_view name() const override { return "deviation-bounded"; }
  bool exhaustive() const override { return true; }
  std::string bounds(const Harness &, const ExploreOptions &o) const override {
    return fmt::format("deviations <= {} from the non-preemptive schedule (the process that ran "
                       "last while it can, for at most {} events in a row, else the first "
                       "enabled; stale bytes the newest)",
                       o.preemptionBound, kFairRun);
  }
  void run(Exploration &x) const override {
    const ExploreOptions &o = x.options();
    if (o.preemptionBound < 0)
      fatal("explorer deviation-bounded needs a finite bound (bounds.preemptions or --bound 0 or "
            "more)");
    const auto bound = static_cast<std::size_t>(o.preemptionBound);
    searchDeviationSets(x, bound, [](const auto &overrides, std::uint64_t recordFrom) {
      return OverridingScheduler(overrides, recordFrom);
    });
  }
};

} // namespace

const Explorer &deviationBoundedExplorer() {
  static const DeviationBounded e;
  return e;
}

} // namespace ftsim::verify
