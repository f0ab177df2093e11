#pragma once
// `mpirun -np K ftsim check ...`: one split tree (Subtrees.h) searched across K MPI ranks. Rank 0
// computes the plan like every rank, hands out subtree indices one at a time in depth-first order
// to whichever rank asks (itself included, on a worker thread: a rank that finishes early asks
// again, which is the rebalancing), gathers each result as JSON (SubtreeFiles.h), merges them as
// one process would and alone returns the report; the other ranks return nothing. The same tree,
// so the same verdict, counts and counterexample as `ftsim check` in one process.
//
// Built when CMake finds MPI (FTSIM_MPI, Open MPI on Debian: libopenmpi-dev, openmpi-bin).

#include "ftsim/verify/check/Check.h"

#include <optional>

namespace ftsim::verify {

// Whether this process is one of several ranks started by mpirun (Open MPI's environment).
bool underMpirun();

// Initialises MPI, searches, finalises MPI. Rank 0: the report; other ranks: nothing.
std::optional<CheckReport> mpiCheck(Harness &harness, const ExploreOptions &options);

} // namespace ftsim::verify
