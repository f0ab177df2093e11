#pragma once
// Source-DPOR's dependency between the events of an execution and the happens-before relation it
// induces on a log (private to verify/src): DporTree.cpp's race analysis and sleep sets use them.

#include "ExploreShared.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ftsim::verify::detail {

// Whether two events may not commute: the same process (program order), a patcher's store or
// publication against what it can change or be seen by, accesses to the same watched data of
// which one writes, an interrupt or preemption against its CPU.
bool dependent(const EventRecord &a, const EventRecord &b);

// The happens-before relation of one log: event i happens before event j (i < j) when a chain of
// dependent events leads from i to j in log order. Rows are kept between logs that share a prefix.
class HappensBefore {
public:
  // Keeps the rows of the first `kept` events (the caller knows those records are the ones they
  // were built from) and builds the rows of the rest of `log`. For each new event j, `race(i, j)`
  // is called for every event i that j depends on and that happens before no other such event (a
  // race of j's: not ordered through another event), in log order, after j's row is built.
  void extend(std::span<const EventRecord> log, std::size_t kept,
              const std::function<void(std::size_t i, std::size_t j)> &race);
  // Whether event i happens before event j (both of the last log extended, i < j).
  bool has(std::size_t j, std::size_t i) const { return (row(j)[i / 64] >> (i % 64)) & 1u; }

private:
  const std::uint64_t *row(std::size_t j) const { return rows_.data() + j * stride_; }
  std::uint64_t *row(std::size_t j) { return rows_.data() + j * stride_; }

  std::vector<std::uint64_t> rows_; // `stride_` words each
  std::size_t stride_ = 0;
  std::vector<std::uint64_t> via_; // scratch, kept for its capacity
  std::vector<std::size_t> preds_;
};

} // namespace ftsim::verify::detail
