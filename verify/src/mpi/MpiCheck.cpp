// A split tree across MPI ranks (MpiCheck.h). Only the main thread of a rank calls MPI
// (MPI_THREAD_FUNNELED): rank 0's own worker is a thread that takes indices from memory.

#include "ftsim/verify/check/MpiCheck.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/SplitCheck.h"
#include "ftsim/verify/explore/SubtreeFiles.h"
#include "ftsim/verify/explore/Subtrees.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <thread>

namespace ftsim::verify {
namespace {

constexpr int kAsk = 1;   // worker -> 0: empty (first ask) or a result's JSON
constexpr int kIndex = 2; // 0 -> worker: a subtree index, or -1: no more
constexpr std::int64_t kNoMore = -1;

std::string receiveText(int source, int tag, MPI_Status &status) {
  MPI_Probe(source, tag, MPI_COMM_WORLD, &status);
  int size = 0;
  MPI_Get_count(&status, MPI_CHAR, &size);
  std::string text(static_cast<std::size_t>(size), '\0');
  MPI_Recv(text.data(), size, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

// Rank 0: hands out indices, gathers results, merges.
CheckReport coordinate(Harness &harness, const ExploreOptions &o, const SubtreeRunner &runner,
                       int ranks) {
  const SubtreePlan &plan = runner.plan();
  std::mutex mutex;
  std::map<std::uint32_t, SubtreeResult> results;
  std::uint32_t next = 0;
  std::atomic<std::uint32_t> stopAfter{std::numeric_limits<std::uint32_t>::max()};
  auto take = [&]() -> std::int64_t {
    std::lock_guard lock(mutex);
    if (next >= plan.count || next > stopAfter.load())
      return kNoMore;
    return next++;
  };
  auto keep = [&](SubtreeResult r) {
    std::lock_guard lock(mutex);
    results[r.index] = std::move(r);
    if (auto s = mergeStop(results, o))
      stopAfter = std::min(stopAfter.load(), *s);
  };
  std::exception_ptr failure;
  std::thread local([&] {
    try {
      // An engine of its own, made on this thread: every engine is used only by its creator.
      std::unique_ptr<Harness> own = o.newHarness ? o.newHarness() : nullptr;
      const SubtreeRunner mine(own ? *own : harness, runner);
      for (std::int64_t i; (i = take()) != kNoMore;) {
        const auto index = static_cast<std::uint32_t>(i);
        SubtreeResult r = mine.run(index, [&](double) { return index > stopAfter.load(); });
        if (index <= stopAfter.load())
          keep(std::move(r));
      }
    } catch (...) {
      failure = std::current_exception();
    }
  });
  int working = ranks - 1;
  while (working > 0) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAsk, MPI_COMM_WORLD, &flag, &status);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const std::string text = receiveText(status.MPI_SOURCE, kAsk, status);
    if (!text.empty())
      keep(subtreeResultFromJson(text));
    const std::int64_t i = take();
    MPI_Send(&i, 1, MPI_INT64_T, status.MPI_SOURCE, kIndex, MPI_COMM_WORLD);
    if (i == kNoMore)
      --working;
  }
  local.join();
  if (failure)
    std::rethrow_exception(failure);
  Exploration x(harness, o);
  mergeSubtrees(x, plan, results, 0);
  return concludeSplitCheck(harness, o, x.result(true));
}

// Other ranks: ask, search, answer, until told there is no more.
void serve(const SubtreeRunner &runner) {
  std::string answer;
  while (true) {
    MPI_Send(answer.data(), static_cast<int>(answer.size()), MPI_CHAR, 0, kAsk, MPI_COMM_WORLD);
    std::int64_t i = kNoMore;
    MPI_Recv(&i, 1, MPI_INT64_T, 0, kIndex, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (i == kNoMore)
      return;
    answer = subtreeResultToJson(runner.run(static_cast<std::uint32_t>(i)));
  }
}

} // namespace

bool underMpirun() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

std::optional<CheckReport> mpiCheck(Harness &harness, const ExploreOptions &options) {
  if (options.explorer != "exhaustive" || options.subtrees == 0)
    fatal("under mpirun: only the exhaustive explorer with a split tree (--subtrees > 0) is "
          "shared among ranks");
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::optional<CheckReport> report;
  try {
    ExploreOptions o = options;
    o.progress = nullptr;
    const SubtreeRunner runner(harness, o);
    if (rank == 0)
      report = coordinate(harness, o, runner, ranks);
    else
      serve(runner);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ftsim: %s\n", e.what()); // one line, then every rank stops
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return report;
}

} // namespace ftsim::verify
