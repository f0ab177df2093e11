#pragma once
// The search shared by the explorers that enumerate schedules as sets of deviations from a default
// schedule (RoundRobinBounded.cpp, DeviationBounded.cpp).

#include "ftsim/verify/explore/Explore.h"

#include <cstdint>
#include <map>
#include <vector>

namespace ftsim::verify::detail {

// Depth-first over sets of at most `bound` deviations (decision index -> the alternative taken
// there), the earliest first; a set only grows after its last deviation, so every set within the
// bound runs exactly once (rr-bounded, deviation-bounded). `makeScheduler(overrides, recordFrom)`
// builds one execution's scheduler, which reports alternatives() after recordFrom and
// preemptions(). Sets stats().complete when every set ran.
template <typename MakeScheduler>
void searchDeviationSets(Exploration &x, std::size_t bound, MakeScheduler makeScheduler) {
  struct Node {
    std::map<std::uint64_t, std::uint32_t> overrides;
    std::uint64_t recordFrom = 0;
  };
  std::vector<Node> stack{{}};
  while (!stack.empty()) {
    if (x.stats().executions >= x.options().maxExecutions)
      return; // budget exhausted: not complete
    const Node node = std::move(stack.back());
    stack.pop_back();
    auto scheduler = makeScheduler(node.overrides, node.recordFrom);
    const sim::RunResult run = x.harness().runExecution(scheduler);
    if (!x.finish(scheduler, scheduler.preemptions(), false, run))
      return;
    if (node.overrides.size() >= bound)
      continue;
    const auto &alternatives = scheduler.alternatives();
    for (auto it = alternatives.rbegin(); it != alternatives.rend(); ++it) {
      Node child{node.overrides, it->first + 1};
      child.overrides[it->first] = it->second;
      stack.push_back(std::move(child));
    }
  }
  x.stats().complete = true;
}

} // namespace ftsim::verify::detail
