#pragma once
// A scripted scheduler: a function decides, looking at the machine (pcs, the patcher's progress)
// and the offered options. Tests use it to pin the interleaving that exposes a hazard.

#include "ftsim/sim/Scheduler.h"

#include <functional>

namespace ftsim::sim {

class FunctionScheduler : public Scheduler {
public:
  using Function = std::function<std::uint32_t(const Machine &, const DecisionPoint &)>;
  explicit FunctionScheduler(Function function) : function_(std::move(function)) {}
  std::uint32_t decide(const Machine &machine, const DecisionPoint &point) override {
    return function_(machine, point);
  }

private:
  Function function_;
};

} // namespace ftsim::sim
