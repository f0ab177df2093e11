#pragma once
// Uniformly random answers from a seeded std::mt19937_64 (whose output sequence the C++ standard
// fixes, so a seed means the same schedule on every platform).

#include "ftsim/sim/Scheduler.h"

#include <random>

namespace ftsim::sim {

class RandomScheduler : public Scheduler {
public:
  explicit RandomScheduler(std::uint64_t seed) : rng_(seed) {}
  std::uint32_t decide(const Machine &machine, const DecisionPoint &point) override;

private:
  std::mt19937_64 rng_;
};

} // namespace ftsim::sim
