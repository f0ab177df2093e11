#pragma once
// The exhaustive search of the engine-level kinds (kernel, trampoline), whose host state
// source-DPOR does not cover (Harness::reductionSound): visible-event scheduling, deviation
// bounding, state hashing (VisibleSearch.cpp says how and why each is sound).

#include "ftsim/verify/explore/Explore.h"

#include <string>

namespace ftsim::verify::detail {

// Events in a row one process runs before the base schedule passes to another.
constexpr std::size_t kVisibleFairRun = 1024;

// Every schedule within `bound` deviations (< 0: no bound) from the fair continuation whose
// switches are at visible events, by iterative deepening over the bound 0, 1, ...; with `hashing`,
// a subtree whose root state was expanded before with at least as many deviations left is not
// expanded again. Sets stats().complete when every such schedule was covered (unbounded: when a
// level cut nothing for the bound).
void searchVisible(Exploration &x, int bound, bool hashing, Continuation base);

// The bounds of searchVisible, for people.
std::string visibleBounds(int bound, bool hashing, Continuation base);

} // namespace ftsim::verify::detail
