// line: each 64-byte line an instruction touches is read at its own instant. A store marks the
// line behind in every other view; a fetch re-reads the line(s) it touches from canonical text.
// An instruction that may straddle two lines of watched text is fetched in two events, so stores
// can fall between its first and its second line.

#include "ftsim/sim/FetchModel.h"

namespace ftsim::sim {
namespace {

class LineFetch final : public FetchModel {
public:
  std::string_view name() const override { return "line"; }
  StoreReach storeReach() const override { return StoreReach::AtLineRead; }
  bool splitsFetchAtLines() const override { return true; }
  AdmissibleValues admissible() const override { return AdmissibleValues::NewestPerLine; }
};

} // namespace

const FetchModel &lineFetchModel() {
  static const LineFetch model;
  return model;
}

} // namespace ftsim::sim
