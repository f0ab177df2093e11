#pragma once
// The stale fetch model's history of one CPU (Memory.cpp): for each fetch granule stored to since
// the CPU last serialised, every value it has held since then, oldest first (the value at the
// serialisation, then each store's that differed). A patch sequence touches a few granules (a
// site's) with a few values each, and a machine's state is copied at every snapshot and restore:
// so a flat vector sorted by address, each granule's values in a string's inline buffer (up to 15
// bytes without an allocation), not a map of vectors, which allocated three times per new granule.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ftsim::sim {

class StaleHistory {
public:
  struct Granule {
    std::uint64_t addr = 0;
    std::string values; // the granule's values, its size in bytes each
    std::span<const std::uint8_t> bytes() const {
      return {reinterpret_cast<const std::uint8_t *>(values.data()), values.size()};
    }
  };
  using const_iterator = std::vector<Granule>::const_iterator;

  bool empty() const { return granules_.empty(); }
  void clear() { granules_.clear(); }
  const_iterator begin() const { return granules_.begin(); }
  const_iterator end() const { return granules_.end(); }
  // The first granule at or after `addr`.
  const_iterator lowerBound(std::uint64_t addr) const {
    return std::lower_bound(granules_.begin(), granules_.end(), addr,
                            [](const Granule &g, std::uint64_t a) { return g.addr < a; });
  }
  // The values of the granule at `addr`, none yet if it had no history.
  std::string &valuesAt(std::uint64_t addr) {
    const auto at = lowerBound(addr);
    if (at != end() && at->addr == addr)
      return granules_[static_cast<std::size_t>(at - begin())].values;
    return granules_.insert(at, Granule{addr, {}})->values;
  }
  // Forgets the granules at addresses in [lo, hi).
  void erase(std::uint64_t lo, std::uint64_t hi) {
    granules_.erase(lowerBound(lo), lowerBound(hi));
  }

private:
  std::vector<Granule> granules_;
};

} // namespace ftsim::sim
