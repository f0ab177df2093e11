#pragma once
// `mpirun -np K ftsim check ...`: one split tree (Subtrees.h) searched across K MPI ranks. Every
// rank computes the plan and starts searching before MPI is up (Open MPI's start-up waits on its
// peers): rank r its opening share, the subtrees i with i mod K = r, until its MPI is up. Then
// rank 0 hands out the other pieces one at a time (PieceQueue) to whichever rank asks (itself
// included, on a worker thread: a rank that finishes early asks again, which is the rebalancing),
// gathers each outcome as bytes, merges them as one process would and alone returns the report;
// the other ranks return nothing. The same tree, so the same verdict, counts and counterexample
// as `ftsim check` in one process.
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
