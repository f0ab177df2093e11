// atomic: a store reaches every CPU's view at once, and a fetch reads all its bytes at one
// instant.

#include "ftsim/sim/FetchModel.h"

namespace ftsim::sim {
namespace {

class AtomicFetch final : public FetchModel {
public:
  std::string_view name() const override { return "atomic"; }
  StoreReach storeReach() const override { return StoreReach::AtOnce; }
  bool splitsFetchAtLines() const override { return false; }
  AdmissibleValues admissible() const override { return AdmissibleValues::Newest; }
};

} // namespace

const FetchModel &atomicFetchModel() {
  static const AtomicFetch model;
  return model;
}

} // namespace ftsim::sim
