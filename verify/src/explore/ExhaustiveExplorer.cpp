// The exhaustive explorer: stateless depth-first search with source-DPOR and sleep sets, or naive,
// optionally preemption-bounded (Explore.h); as one tree, or split into subtrees (Subtrees.h); on
// the engine-level kinds the visible-event search with state hashing (VisibleSearch.h).

#include "DporTree.h"
#include "VisibleSearch.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/explore/Subtrees.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

// The engine-level kinds, unless asked for the naive search (--naive) or a split tree: the
// visible-event search (VisibleSearch.h); its bound counts deviations, not preemptions.
bool visibleSearch(const Harness &h, const ExploreOptions &o) {
  return !h.reductionSound() && o.reduction && o.subtrees == 0;
}

class ExhaustiveExplorer final : public Explorer {
public:
  std::string_view name() const override { return "exhaustive"; }
  bool exhaustive() const override { return true; }
  void run(Exploration &x) const override {
    const ExploreOptions &o = x.options();
    if (visibleSearch(x.harness(), o)) {
      detail::searchVisible(x, o.preemptionBound, o.stateHashing, o.continuation);
      return;
    }
    if (o.subtrees > 0) {
      searchSplit(x, o.subtreeHooks ? *o.subtreeHooks : SubtreeHooks{});
      return;
    }
    detail::TreeShape shape;
    shape.reduction = o.reduction && x.harness().reductionSound();
    shape.bound = o.preemptionBound;
    detail::searchTree(x, shape, {});
  }
  std::string bounds(const Harness &h, const ExploreOptions &o) const override {
    if (visibleSearch(h, o))
      return detail::visibleBounds(o.preemptionBound, o.stateHashing, o.continuation);
    return o.preemptionBound < 0 ? std::string("no preemption bound")
                                 : fmt::format("at most {} preemptions", o.preemptionBound);
  }
  std::string method(const Harness &h, const ExploreOptions &o) const override {
    if (visibleSearch(h, o))
      return ", visible-event scheduling (no DPOR: it does not cover this kind's host state)";
    if (!h.reductionSound())
      return ", naive (no reduction: DPOR does not cover this kind's host state)";
    return o.reduction ? ", source-DPOR + sleep sets" : ", naive (no reduction)";
  }
};

} // namespace

const Explorer &exhaustiveExplorer() {
  static const ExhaustiveExplorer e;
  return e;
}

} // namespace ftsim::verify
