// A split tree across MPI ranks (MpiCheck.h). Only the main thread of a rank calls MPI
// (MPI_THREAD_FUNNELED): rank 0's own worker is a thread that takes pieces from memory.

#include "ftsim/verify/check/MpiCheck.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/SplitCheck.h"
#include "ftsim/verify/explore/PieceQueue.h"
#include "ftsim/verify/explore/SubtreeFiles.h"
#include "ftsim/verify/explore/Subtrees.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <thread>

namespace ftsim::verify {
namespace {

constexpr int kAsk = 1;   // worker -> 0: empty (first ask) or a piece's outcome (encodeOutcome)
constexpr int kPiece = 2; // 0 -> worker: a piece to search (encodePiece), or empty: no more

std::string receiveText(int source, int tag, MPI_Status &status) {
  MPI_Probe(source, tag, MPI_COMM_WORLD, &status);
  int size = 0;
  MPI_Get_count(&status, MPI_CHAR, &size);
  std::string text(static_cast<std::size_t>(size), '\0');
  MPI_Recv(text.data(), size, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

void sendText(const std::string &text, int to, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

// Rank 0: hands out pieces of the subtrees (PieceQueue: the pieces of a split first, so every
// rank helps with a large subtree), gathers their outcomes, merges.
CheckReport coordinate(Harness &harness, const ExploreOptions &o, const SubtreeRunner &runner,
                       int ranks) {
  const SubtreePlan &plan = runner.plan();
  Exploration x(harness, o); // from now on: its seconds are the search's
  std::mutex mutex;
  std::condition_variable queued; // for rank 0's own worker
  std::vector<std::uint32_t> all(plan.count);
  for (std::uint32_t i = 0; i < plan.count; ++i)
    all[i] = i;
  PieceQueue queue(o, all);
  std::map<std::uint32_t, SubtreeResult> results;
  std::atomic<std::uint32_t> stopAfter{std::numeric_limits<std::uint32_t>::max()};
  // Under the lock: the subtrees the queue finished.
  auto collect = [&] {
    for (SubtreeResult &r : queue.results())
      results[r.index] = std::move(r);
    if (auto s = mergeStop(results, o)) {
      queue.stopAfter(*s);
      stopAfter = queue.stopsAfter();
    }
  };
  // Under the lock: a piece's outcome.
  auto finished = [&](const SubtreePiece &piece, PieceOutcome out) {
    const bool split = !out.rest.empty();
    queue.finished(piece, std::move(out));
    collect();
    if (split || queue.drained())
      queued.notify_all();
  };
  std::exception_ptr failure;
  std::thread local([&] {
    try {
      // An engine of its own, made on this thread: every engine is used only by its creator.
      std::unique_ptr<Harness> own = o.newHarness ? o.newHarness() : nullptr;
      const SubtreeRunner mine(own ? *own : harness, runner);
      std::unique_lock lock(mutex);
      while (true) {
        std::optional<SubtreePiece> piece;
        queued.wait(lock, [&] { return (piece = queue.take()) || queue.drained(); });
        collect(); // subtrees whose last pieces take() dropped
        if (!piece)
          break;
        lock.unlock();
        const std::uint32_t index = piece->index;
        PieceOutcome out = mine.runPiece(*piece, [&](double) { return index > stopAfter.load(); });
        lock.lock();
        finished(*piece, std::move(out));
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      failure = std::current_exception(); // the other ranks are told to stop
    }
  });
  std::map<int, SubtreePiece> given; // what each rank searches
  std::vector<int> waiting;          // ranks that asked while no piece was queued
  int working = ranks - 1;
  // Under the lock: a piece for each waiting rank, or "no more" once nothing can come.
  auto serveWaiting = [&] {
    while (!waiting.empty()) {
      std::optional<SubtreePiece> piece;
      const bool more = failure || (piece = queue.take()) || queue.drained();
      collect();
      if (queue.drained())
        queued.notify_all();
      if (!more)
        return;
      const int to = waiting.back();
      waiting.pop_back();
      if (piece) {
        sendText(encodePiece(*piece), to, kPiece);
        given[to] = std::move(*piece);
      } else {
        sendText("", to, kPiece);
        --working;
      }
    }
  };
  while (working > 0) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAsk, MPI_COMM_WORLD, &flag, &status);
    if (!flag) {
      {
        std::lock_guard lock(mutex);
        serveWaiting();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const std::string text = receiveText(status.MPI_SOURCE, kAsk, status);
    std::lock_guard lock(mutex);
    if (!text.empty()) {
      auto it = given.find(status.MPI_SOURCE);
      if (it == given.end())
        fatal("rank {} answered a piece it was not given", status.MPI_SOURCE);
      finished(it->second, decodeOutcome(text));
      given.erase(it);
    }
    waiting.push_back(status.MPI_SOURCE);
    serveWaiting();
  }
  local.join();
  if (failure)
    std::rethrow_exception(failure);
  mergeSubtrees(x, plan, results, 0);
  return concludeSplitCheck(harness, o, x.result(true));
}

// Other ranks: ask, search the piece, answer with its outcome, until told there is no more.
void serve(const SubtreeRunner &runner) {
  std::string answer;
  while (true) {
    sendText(answer, 0, kAsk);
    // Polled, not a blocking receive: Open MPI spins in one, and the core it spins on is the one
    // rank 0's threads need to answer.
    MPI_Status status;
    for (int flag = 0; !flag;) {
      MPI_Iprobe(0, kPiece, MPI_COMM_WORLD, &flag, &status);
      if (!flag)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const std::string piece = receiveText(0, kPiece, status);
    if (piece.empty())
      return;
    answer = encodeOutcome(runner.runPiece(decodePiece(piece)));
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
