// The registry of fetch models. A new model is one file in this folder defining
// `const FetchModel &<name>FetchModel()` and one entry (a declaration and a line in kModels) here.

#include "ftsim/sim/FetchModel.h"

#include "ftsim/arch/Error.h"

namespace ftsim::sim {

const FetchModel &atomicFetchModel();
const FetchModel &lineFetchModel();
const FetchModel &staleFetchModel();

std::span<const FetchModel *const> allFetchModels() {
  static const FetchModel *const kModels[] = {
      &atomicFetchModel(),
      &lineFetchModel(),
      &staleFetchModel(),
  };
  return kModels;
}

std::string fetchModelNames(std::string_view separator) {
  std::string out;
  for (const FetchModel *model : allFetchModels()) {
    if (!out.empty())
      out += separator;
    out += model->name();
  }
  return out;
}

const FetchModel &fetchModelByName(std::string_view name) {
  for (const FetchModel *model : allFetchModels())
    if (model->name() == name)
      return *model;
  fatal("unknown fetch model '{}' (known: {})", name, fetchModelNames());
}

} // namespace ftsim::sim
