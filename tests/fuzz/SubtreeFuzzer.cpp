// ftsim_fuzz_subtree: the readers of a split tree's files (verify/src/explore/SubtreeFiles.cpp) —
// job files (`ftsim check --subtree FILE`), result and checkpoint files (`ftsim merge DIR`,
// `--resume FILE`) — and of the subtree results MPI ranks send each other. Each input is read as
// it is, where the digest refuses nearly every mutation, and, when it is a JSON object, again
// sealed with a matching digest, so that the checks behind the digest see the mutated content.

#include "FuzzSupport.h"

#include "ftsim/verify/explore/SubtreeFiles.h"

namespace {

void readAsEveryKind(const std::string &path) {
  ftsim::fuzz::accepts([&] { (void)ftsim::verify::loadSubtreeJob(path); });
  ftsim::fuzz::accepts([&] { (void)ftsim::verify::loadSubtreeResults(path); });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static ftsim::fuzz::InputFile input("subtree.json");
  const std::string text(reinterpret_cast<const char *>(data), size);
  readAsEveryKind(input.assign(data, size));
  ftsim::fuzz::accepts([&] { (void)ftsim::verify::subtreeResultFromJson(text); });
  std::string sealed;
  if (!ftsim::fuzz::accepts([&] { sealed = ftsim::verify::resealedSubtreeFile(text); }))
    return 0;
  readAsEveryKind(
      input.assign(reinterpret_cast<const std::uint8_t *>(sealed.data()), sealed.size()));
  return 0;
}
