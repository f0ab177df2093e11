#pragma once
// `ftsim check --subtree FILE` and `ftsim merge DIR` as library calls: search some subtrees of a
// split tree (SubtreeFiles.h) and merge every subtree's result into the report of one check.

#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/SubtreeFiles.h"

#include <functional>
#include <memory>

namespace ftsim::verify {

// Searches the job's subtrees on `jobs` threads (the first on `harness`, built from the job's
// scenario; the others from `newHarness`). FatalError when this build's tree is not the job's.
SubtreeResults runSubtreeJob(const SubtreeJob &job, Harness &harness, unsigned jobs,
                             const std::function<std::unique_ptr<Harness>()> &newHarness);

// The check report of the whole tree from its subtrees' results, on `harness` (built from their
// scenario): the same as one `ftsim check` of that tree, INCOMPLETE when a subtree the verdict
// needs has no result.
CheckReport mergeCheck(const SubtreeResults &results, Harness &harness);

// concludeCheck() of a merged split tree whose counterexample may hold only its decisions (read
// from a file or a message): its violation is observed again on `harness` first.
CheckReport concludeSplitCheck(Harness &harness, const ExploreOptions &options,
                               ExploreResult result);

} // namespace ftsim::verify
