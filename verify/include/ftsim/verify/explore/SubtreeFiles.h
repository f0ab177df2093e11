#pragma once
// A split tree's subtrees as files (Subtrees.h): job files that run anywhere (`ftsim check
// --split N DIR` writes them, `ftsim check --subtree FILE` runs one, as a Slurm array task or under
// `xargs -P`), their result files, merged by `ftsim merge DIR` into the verdict of one run, and
// checkpoints (`--checkpoint FILE`, `--resume FILE`), which are result files too.
//
//   job:     {"format": "ftsim-subtrees", "version": 1, "tree": {...}, "subtrees": [0, 4, 8],
//             "digest": "0x..."}
//   results: {"format": "ftsim-subtree-results", "version": 1, "tree": {...},
//             "results": [{"index": 0, "executions": ..., "states": ["0x...", ...],
//                          "counterexample": {"choices": [...], ...}}, ...], "digest": "0x..."}
//   tree:    {"scenario": "<toml>", "reduction": true, "preemption_bound": -1,
//             "max_executions": 200000, "subtrees": 64, "piece_executions": 1024,
//             "depth": 4, "count": 70,
//             "bound_cuts": 0, "plan_digest": "0x..."}
//
// The digest (FNV-1a of the rest of the file in canonical JSON) covers everything: an edited file
// is refused, and so is a file of another tree (another scenario, other bounds, another split, or a
// build whose tree differs) — one line naming the file, exit 2.

#include "ftsim/verify/explore/Subtrees.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ftsim::verify {

// What identifies a split tree: the scenario, the search's bounds and the split.
struct SplitTree {
  Scenario scenario;
  bool reduction = true;
  int preemptionBound = -1;
  std::uint64_t maxExecutions = 0;
  unsigned subtrees = 0;
  std::uint64_t pieceExecutions = 0;
  SubtreePlan plan;
  // Whether both describe the same tree (same scenario text, bounds and plan).
  bool same(const SplitTree &other) const;
};

SplitTree splitTreeOf(const Scenario &scenario, const ExploreOptions &options,
                      const SubtreePlan &plan);
// The exploration of a tree read from a file: the scenario's, with the file's bounds and split.
ExploreOptions exploreOptionsOf(const SplitTree &tree);

struct SubtreeJob {
  SplitTree tree;
  std::vector<std::uint32_t> subtrees;
};
struct SubtreeResults {
  SplitTree tree;
  std::map<std::uint32_t, SubtreeResult> results; // counterexamples: choices, preemptions, events
};

std::string subtreeJobJson(const SubtreeJob &job);
std::string subtreeResultsJson(const SubtreeResults &results);
// FatalError "<path>: ..." for anything that is not such a file, was edited, or is inconsistent.
SubtreeJob loadSubtreeJob(const std::string &path);
SubtreeResults loadSubtreeResults(const std::string &path);

// `text`, a JSON object, written out again with the digest that matches its content (the sealing
// every file above gets): for tests and the fuzzer, which edit files and must reach the checks
// behind the digest. FatalError when `text` is not a JSON object.
std::string resealedSubtreeFile(const std::string &text);

// One subtree's result as compact JSON (the messages between MPI ranks); FatalError when `text`
// is not one.
std::string subtreeResultToJson(const SubtreeResult &result);
SubtreeResult subtreeResultFromJson(const std::string &text);

// Writes `text` to `path` through a temporary file in the same directory and a rename, so a reader
// (or a run killed meanwhile) sees the old file or the new one, never half of one.
void writeFileAtomically(const std::string &path, const std::string &text);

// `files` job files DIR/subtree-NNN.json dealing the plan's subtrees round-robin (fewer files when
// the tree has fewer subtrees); FatalError when DIR cannot be made or already holds subtree files.
// Returns their paths.
std::vector<std::string> writeSplitFiles(const SplitTree &tree, unsigned files,
                                         const std::string &dir);
// The result file of a job file: subtree-003.json -> subtree-003.result.json.
std::string resultPathOf(const std::string &jobPath);
// Every result file in DIR (*.result.json), loaded, all of one tree, no subtree twice; FatalError
// naming the file otherwise.
SubtreeResults loadResultsDir(const std::string &dir);

// Checkpoints: hooks that load `resumeFrom` (when not empty) as the subtrees already searched, and
// save every finished subtree to `path` (when not empty) at most every `every`, and at the end.
struct CheckpointOptions {
  std::string path, resumeFrom;
  std::chrono::milliseconds every{60000};
};
std::shared_ptr<SubtreeHooks> checkpointHooks(const Scenario &scenario,
                                              const ExploreOptions &options,
                                              const CheckpointOptions &checkpoint);

} // namespace ftsim::verify
