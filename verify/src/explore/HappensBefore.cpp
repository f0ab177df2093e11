// Source-DPOR's dependency and the happens-before relation of a log (HappensBefore.h).

#include "HappensBefore.h"

#include <algorithm>

namespace ftsim::verify::detail {
namespace {

bool overlap(std::uint64_t a, std::uint64_t an, std::uint64_t b, std::uint64_t bn) {
  return a < b + bn && b < a + an;
}

} // namespace

bool dependent(const EventRecord &a, const EventRecord &b) {
  const int pa = processOf(a), pb = processOf(b);
  if (pa == pb)
    return true;
  if (pa == kPatcher || pb == kPatcher) {
    const EventRecord &p = pa == kPatcher ? a : b;
    const EventRecord &o = pa == kPatcher ? b : a;
    // A timer interrupt's handler entry too: it moves the CPU into other code (conservatively
    // dependent, like a preemption).
    if (o.kind == EventKind::Ipi || o.kind == EventKind::Preempt || o.kind == EventKind::Irq)
      return true;
    // Entering and leaving user mode change whom the patcher's next sync interrupts (and, with
    // deferSyncInUser, whom it waits for); the sync runs in the continuation of a store or a
    // publication.
    if (o.outcome == sim::StepOutcome::UserEnter || o.outcome == sim::StepOutcome::KernelEntry)
      return p.kind == EventKind::Store || p.kind == EventKind::Publish;
    switch (p.kind) {
    case EventKind::Store:
      return o.kind == EventKind::FetchLine || serialises(o) ||
             (o.fetchSize && overlap(p.storeAddr, p.storeSize, o.fetchAddr, o.fetchSize));
    case EventKind::Publish:
      // A publication that is a data access of the patcher's own guest code (publishAccess())
      // conflicts with another CPU's access to the same bytes when either writes; one without a
      // footprint may write any watched guest data (function_trace_op).
      if (!p.dataSize)
        return o.sharedRead || o.dataSize;
      return o.sharedRead || (o.dataSize && (p.dataWrite || o.dataWrite) &&
                              overlap(p.dataAddr, p.dataSize, o.dataAddr, o.dataSize));
    case EventKind::Free:
      return o.fetchSize && overlap(p.storeAddr, p.detail, o.fetchAddr, o.fetchSize);
    default:
      return false;
    }
  }
  if (a.cpu == b.cpu) {
    if (a.kind == EventKind::Preempt || b.kind == EventKind::Preempt || a.kind == EventKind::Irq ||
        b.kind == EventKind::Irq)
      return true;
    if (a.kind == EventKind::Ipi)
      return touchesCpuState(b);
    if (b.kind == EventKind::Ipi)
      return touchesCpuState(a);
    return true;
  }
  return a.dataSize && b.dataSize && (a.dataWrite || b.dataWrite) &&
         overlap(a.dataAddr, a.dataSize, b.dataAddr, b.dataSize);
}

void HappensBefore::extend(std::span<const EventRecord> log, std::size_t kept,
                           const std::function<void(std::size_t i, std::size_t j)> &race) {
  const std::size_t n = log.size();
  const std::size_t words = (n + 63) / 64;
  kept = std::min(kept, n);
  if (words > stride_) { // wider rows: the kept ones move to the new layout
    std::vector<std::uint64_t> wider(n * words, 0);
    for (std::size_t j = 0; j < kept; ++j)
      std::copy_n(rows_.data() + j * stride_, stride_, wider.data() + j * words);
    rows_ = std::move(wider);
    stride_ = words;
  }
  if (rows_.size() < n * stride_)
    rows_.resize(n * stride_);
  std::fill(rows_.begin() + static_cast<std::ptrdiff_t>(kept * stride_),
            rows_.begin() + static_cast<std::ptrdiff_t>(n * stride_), 0);
  via_.resize(words);
  for (std::size_t j = kept; j < n; ++j) {
    // The events j depends on that happen before no other such event, from the latest back: an
    // event already known to happen before one of them needs no test (it is no race of j's, and
    // its row is in theirs). `via_`: those events and everything that happens before them, which
    // is row j.
    preds_.clear();
    std::fill(via_.begin(), via_.end(), 0);
    for (std::size_t i = j; i-- > 0;) {
      if ((via_[i / 64] >> (i % 64)) & 1u)
        continue;
      if (!dependent(log[i], log[j]))
        continue;
      preds_.push_back(i);
      via_[i / 64] |= 1ull << (i % 64);
      for (std::size_t w = 0; w <= i / 64; ++w)
        via_[w] |= row(i)[w];
    }
    std::copy_n(via_.begin(), words, row(j));
    for (auto it = preds_.rbegin(); it != preds_.rend(); ++it) // in log order
      race(*it, j);
  }
}

} // namespace ftsim::verify::detail
