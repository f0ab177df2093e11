#pragma once
// The pieces of a split tree's subtrees still to search (Subtrees.h), shared out among workers:
// threads (searchSplit) or MPI ranks (MpiCheck.cpp). It hands out the pieces a split leaves before
// any other, so that every worker helps with a large subtree rather than waiting for it to end; it
// drops the pieces no merge would use (after a counterexample, past the budget, past the subtree
// the merge stops at); and it assembles each subtree's result once its last piece is in. Not
// thread-safe: its users hold their own lock.

#include "ftsim/verify/explore/Subtrees.h"

#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ftsim::verify {

class PieceQueue {
public:
  // `subtrees`: the subtrees to search, in the order workers take them.
  PieceQueue(const ExploreOptions &options, const std::vector<std::uint32_t> &subtrees);

  // The next piece to search (the first queued one `may` allows, when given), or nothing when none
  // is queued now (then drained() says whether more can come: pieces being searched may still
  // split, pieces `may` refused are still queued).
  std::optional<SubtreePiece> take(const std::function<bool(const SubtreePiece &)> &may = {});
  // Takes subtree `index`'s first piece (the whole subtree) out of the queue, for an outcome
  // searched without being taken (MpiCheck.cpp: ranks begin with a share known in advance);
  // nothing when it is no longer queued.
  std::optional<SubtreePiece> claim(std::uint32_t index);
  // A taken piece's outcome.
  void finished(const SubtreePiece &piece, PieceOutcome outcome);
  // The results of the subtrees whose last piece came in (or was dropped) since the last call,
  // but of those the merge will not use.
  std::vector<SubtreeResult> results() { return std::exchange(ready_, {}); }
  // No piece is queued or being searched.
  bool drained() const { return inFlight_ == 0; }
  // The merge stops at subtree `index` (a counterexample, the budget, a failure): pieces of later
  // subtrees are dropped.
  void stopAfter(std::uint32_t index) { stopAfter_ = std::min(stopAfter_, index); }
  std::uint32_t stopsAfter() const { return stopAfter_; }

  // For estimates: every subtree with pieces searched or being searched, with the executions of
  // its finished pieces and the share of it they cover.
  struct Open {
    std::uint64_t executions = 0;
    double searched = 0;
  };
  std::map<std::uint32_t, Open> open() const;

private:
  struct Subtree {
    std::vector<std::pair<PiecePath, SubtreeResult>> done;
    std::size_t outstanding = 1; // pieces queued or being searched
    bool everyPiece = true;      // no piece dropped
    Open progress;
  };
  void pieceOver(std::uint32_t index, Subtree &t);

  const ExploreOptions &options_;
  std::deque<SubtreePiece> queue_;
  std::map<std::uint32_t, Subtree> subtrees_;
  std::vector<SubtreeResult> ready_;
  std::size_t inFlight_ = 0;
  std::uint32_t stopAfter_ = std::numeric_limits<std::uint32_t>::max();
};

// A piece (with where its search resumes) and a piece's outcome as bytes, for messages between
// processes of the same build (MPI ranks); FatalError when `bytes` is not one.
std::string encodePiece(const SubtreePiece &piece);
SubtreePiece decodePiece(const std::string &bytes);
std::string encodeOutcome(const PieceOutcome &outcome);
PieceOutcome decodeOutcome(const std::string &bytes);

} // namespace ftsim::verify
