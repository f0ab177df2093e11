// The exhaustive explorer: stateless depth-first search with source-DPOR and sleep sets, or naive,
// optionally preemption-bounded (Explore.h); as one tree, or split into subtrees (Subtrees.h).

#include "DporTree.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/explore/Subtrees.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

class ExhaustiveExplorer final : public Explorer {
public:
  std::string_view name() const override { return "exhaustive"; }
  bool exhaustive() const override { return true; }
  void run(Exploration &x) const override {
    const ExploreOptions &o = x.options();
    if (o.subtrees > 0) {
      searchSplit(x, o.subtreeHooks ? *o.subtreeHooks : SubtreeHooks{});
      return;
    }
    detail::TreeShape shape;
    shape.reduction = o.reduction && x.harness().reductionSound();
    shape.bound = o.preemptionBound;
    detail::searchTree(x, shape, {});
  }
  std::string bounds(const Harness &, const ExploreOptions &o) const override {
    return o.preemptionBound < 0 ? std::string("no preemption bound")
                                 : fmt::format("at most {} preemptions", o.preemptionBound);
  }
  std::string method(const Harness &h, const ExploreOptions &o) const override {
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
