// stale: per CPU and fetch granule, any value the granule has held since the CPU last serialised;
// which one each fetch reads is a scheduler decision. The most permissive model (a sound
// over-approximation): a protocol safe under it is safe under the others. The SDM leaves
// cross-modified code "model-specific", so every x86 byte may be stale on its own; powerpc fetches
// aligned words single-copy atomically (Power ISA v3.1 Book II 1.4).

#include "ftsim/sim/FetchModel.h"

namespace ftsim::sim {
namespace {

class StaleFetch final : public FetchModel {
public:
  std::string_view name() const override { return "stale"; }
  StoreReach storeReach() const override { return StoreReach::ByChoice; }
  bool splitsFetchAtLines() const override { return false; }
  AdmissibleValues admissible() const override { return AdmissibleValues::AnySinceSerialise; }
};

} // namespace

const FetchModel &staleFetchModel() {
  static const StaleFetch model;
  return model;
}

} // namespace ftsim::sim
