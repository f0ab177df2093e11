// A split tree across MPI ranks (MpiCheck.h). Each rank searches on a worker thread of its own
// (with its own harness, built while the rank plans the tree: Crew.h; every engine is used only by
// its creator); only the main thread calls MPI (MPI_THREAD_FUNNELED).
//
// Every rank starts searching before MPI is initialised. Open MPI's start-up (0.24 s for two
// ranks on one machine with its default transport, 0.04 s with `--mca pml ob1`) waits on its
// peers, not on the CPU; a search of a second or two would otherwise spend a fifth of it idle.
// Until then each rank searches its opening share, known without a message: the subtrees whose
// index is its rank modulo the number of ranks, whole first pieces, in order, until its MPI is up.
// Its first message to rank 0 carries those outcomes; until it arrives, rank 0 hands nobody else
// that rank's share. From then on rank 0 hands out pieces one at a time to whichever rank asks.

#include "ftsim/verify/check/MpiCheck.h"

#include "../explore/Crew.h"

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
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

namespace ftsim::verify {
namespace {

constexpr int kOpening = 1; // rank r -> 0, its first message: its opening share's outcomes
constexpr int kAsk = 2;     // rank r -> 0: the outcome of the piece it was given (encodeOutcome)
constexpr int kPiece = 3;   // 0 -> rank r: a piece to search (encodePiece), or empty: no more

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

// Polled, not a blocking receive: Open MPI spins in one, and the core it spins on is the one the
// search threads need.
bool poll(int source, int tag, MPI_Status &status) {
  int flag = 0;
  MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
  return flag != 0;
}

int environmentInt(const char *name) {
  const char *text = std::getenv(name);
  char *end = nullptr;
  const long v = text ? std::strtol(text, &end, 10) : -1;
  if (!text || end == text || *end || v < 0 || v > std::numeric_limits<int>::max())
    fatal("under mpirun: {} is not a rank number ('{}')", name, text ? text : "");
  return static_cast<int>(v);
}

std::vector<std::uint32_t> allSubtrees(const SubtreePlan &plan) {
  std::vector<std::uint32_t> all(plan.count);
  for (std::uint32_t i = 0; i < plan.count; ++i)
    all[i] = i;
  return all;
}

// The rank whose opening share holds `piece`; -1 for the pieces splits make.
int openingRank(const SubtreePiece &piece, int ranks) {
  return piece.path.empty() ? static_cast<int>(piece.index % static_cast<std::uint32_t>(ranks))
                            : -1;
}

// An opening share's outcomes as bytes: per subtree, its index, the outcome's size, the outcome.
using Opening = std::vector<std::pair<std::uint32_t, std::string>>;

std::string encodeOpening(const Opening &opening) {
  std::string out;
  for (const auto &[index, outcome] : opening) {
    const std::uint64_t size = outcome.size();
    out.append(reinterpret_cast<const char *>(&index), sizeof index);
    out.append(reinterpret_cast<const char *>(&size), sizeof size);
    out += outcome;
  }
  return out;
}

Opening decodeOpening(const std::string &bytes) {
  Opening opening;
  for (std::size_t at = 0; at < bytes.size();) {
    std::uint32_t index = 0;
    std::uint64_t size = 0;
    if (bytes.size() - at < sizeof index + sizeof size)
      fatal("a rank's opening message is truncated");
    std::memcpy(&index, bytes.data() + at, sizeof index);
    std::memcpy(&size, bytes.data() + at + sizeof index, sizeof size);
    at += sizeof index + sizeof size;
    if (bytes.size() - at < size)
      fatal("a rank's opening message is truncated");
    opening.emplace_back(index, bytes.substr(at, size));
    at += size;
  }
  return opening;
}

// Rank 0: hands out pieces of the subtrees (PieceQueue: the pieces of a split first, so every
// rank helps with a large subtree), gathers their outcomes, merges. Its own worker takes pieces
// from memory from the start.
class Coordinator {
public:
  Coordinator(Harness &harness, const ExploreOptions &o, const SubtreeRunner &runner, int ranks,
              Crew &crew)
      : harness_(harness), o_(o), runner_(runner), x_(harness, o),
        queue_(o, allSubtrees(runner.plan())), ranks_(ranks), opened_(ranks, false),
        working_(ranks - 1), crew_(crew) {
    opened_[0] = true;
    crew_.start([this](unsigned, Harness *own, std::exception_ptr e) { searchLocally(own, e); }, 2);
  }
  ~Coordinator() {
    if (!joined_) { // only when serve() threw: stop the worker, then let it end
      {
        std::lock_guard lock(mutex_);
        if (!failure_)
          failure_ = std::make_exception_ptr(FatalError("stopped"));
        stopAfter_ = 0;
      }
      queued_.notify_all();
      crew_.join();
    }
  }

  // After MPI_Init: serves the other ranks until every one is told there is no more.
  CheckReport serve() {
    while (working_ > 0) {
      MPI_Status status;
      if (!poll(MPI_ANY_SOURCE, MPI_ANY_TAG, status)) {
        {
          std::lock_guard lock(mutex_);
          serveWaiting();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      const int from = status.MPI_SOURCE;
      const std::string text = receiveText(from, status.MPI_TAG, status);
      std::lock_guard lock(mutex_);
      if (status.MPI_TAG == kOpening)
        opening(from, decodeOpening(text));
      else
        answer(from, text);
      waiting_.push_back(from);
      serveWaiting();
    }
    crew_.join();
    joined_ = true;
    if (failure_)
      std::rethrow_exception(failure_);
    mergeSubtrees(x_, runner_.plan(), results_, 0);
    return concludeSplitCheck(harness_, o_, x_.result(true));
  }

private:
  // Under the lock: rank `from`'s opening share; the rest of it is anyone's now.
  void opening(int from, const Opening &outcomes) {
    if (from <= 0 || from >= ranks_ || opened_[from])
      fatal("rank {} sent a second opening", from);
    for (const auto &[index, bytes] : outcomes) {
      std::optional<SubtreePiece> piece = queue_.claim(index);
      if (piece && openingRank(*piece, ranks_) == from)
        finished(*piece, decodeOutcome(bytes));
      else if (piece || index <= queue_.stopsAfter()) // not dropped after a stop: not its share
        fatal("rank {} searched subtree {} outside its opening share", from, index);
    }
    opened_[from] = true;
    queued_.notify_all();
  }
  // Under the lock: the outcome of the piece rank `from` was given.
  void answer(int from, const std::string &text) {
    auto it = given_.find(from);
    if (it == given_.end())
      fatal("rank {} answered a piece it was not given", from);
    finished(it->second, decodeOutcome(text));
    given_.erase(it);
  }
  // Under the lock: the next piece anyone may take (not an opening share still searched).
  std::optional<SubtreePiece> take() {
    return queue_.take([&](const SubtreePiece &p) {
      const int r = openingRank(p, ranks_);
      return r < 0 || opened_[static_cast<std::size_t>(r)];
    });
  }
  // On the crew's worker, with the harness it built (none without options.newHarness).
  void searchLocally(Harness *own, std::exception_ptr failed) {
    try {
      if (failed)
        std::rethrow_exception(failed);
      const SubtreeRunner mine(own ? *own : harness_, runner_);
      std::unique_lock lock(mutex_);
      while (!failure_) {
        std::optional<SubtreePiece> piece;
        queued_.wait(lock, [&] { return failure_ || (piece = take()) || queue_.drained(); });
        collect(); // subtrees whose last pieces take() dropped
        if (!piece)
          break;
        lock.unlock();
        const std::uint32_t index = piece->index;
        PieceOutcome out = mine.runPiece(*piece, [&](double) { return index > stopAfter_.load(); });
        lock.lock();
        finished(*piece, std::move(out));
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception(); // the other ranks are told to stop
    }
  }
  // Under the lock: the subtrees the queue finished.
  void collect() {
    for (SubtreeResult &r : queue_.results())
      results_[r.index] = std::move(r);
    if (auto s = mergeStop(results_, o_)) {
      queue_.stopAfter(*s);
      stopAfter_ = queue_.stopsAfter();
    }
  }
  // Under the lock: a piece's outcome.
  void finished(const SubtreePiece &piece, PieceOutcome out) {
    const bool split = !out.rest.empty();
    queue_.finished(piece, std::move(out));
    collect();
    if (split || queue_.drained())
      queued_.notify_all();
  }
  // Under the lock: a piece for each waiting rank, or "no more" once nothing can come.
  void serveWaiting() {
    while (!waiting_.empty()) {
      std::optional<SubtreePiece> piece;
      const bool more = failure_ || (piece = take()) || queue_.drained();
      collect();
      if (queue_.drained())
        queued_.notify_all();
      if (!more)
        return;
      const int to = waiting_.back();
      waiting_.pop_back();
      if (piece) {
        sendText(encodePiece(*piece), to, kPiece);
        given_[to] = std::move(*piece);
      } else {
        sendText("", to, kPiece);
        --working_;
      }
    }
  }

  Harness &harness_;
  const ExploreOptions &o_;
  const SubtreeRunner &runner_;
  Exploration x_; // from its construction on: its seconds are the search's
  std::mutex mutex_;
  std::condition_variable queued_; // for rank 0's own worker
  PieceQueue queue_;
  const int ranks_;
  std::vector<bool> opened_; // whose opening share came in (rank 0's own: from the start)
  std::map<std::uint32_t, SubtreeResult> results_;
  std::atomic<std::uint32_t> stopAfter_{std::numeric_limits<std::uint32_t>::max()};
  std::exception_ptr failure_;
  std::map<int, SubtreePiece> given_; // what each rank searches
  std::vector<int> waiting_;          // ranks that asked while no piece was queued
  int working_;
  Crew &crew_; // rank 0's own worker
  bool joined_ = false;
};

// Other ranks: a worker thread searches the opening share until MPI is up, then the pieces the
// main thread passes it; the main thread sends rank 0 the outcomes and asks for the next piece,
// until told there is no more.
class Server {
public:
  Server(const SubtreeRunner &runner, int rank, int ranks, Crew &crew)
      : runner_(runner), rank_(rank), ranks_(ranks), crew_(crew) {
    crew_.start([this](unsigned, Harness *own, std::exception_ptr e) { search(own, e); }, 2);
  }
  ~Server() {
    {
      std::lock_guard lock(mutex_);
      over_ = true;
    }
    mpiUp_ = true;
    changed_.notify_all();
    crew_.join();
  }

  // After MPI_Init.
  void serve() {
    mpiUp_ = true;
    std::string answer = encodeOpening(wait([&] { return opened_; }, opening_));
    int tag = kOpening;
    while (true) {
      sendText(answer, 0, tag);
      tag = kAsk;
      MPI_Status status;
      while (!poll(0, kPiece, status))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      const std::string piece = receiveText(0, kPiece, status);
      if (piece.empty())
        return;
      {
        std::lock_guard lock(mutex_);
        piece_ = decodePiece(piece);
      }
      changed_.notify_all();
      answer = wait([&] { return outcome_.has_value(); }, outcome_).value();
    }
  }

private:
  // Waits until `ready` (or the worker failed: rethrown), then takes `what`.
  template <typename Ready, typename T> T wait(Ready ready, T &what) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return ready() || failure_; });
    if (failure_)
      std::rethrow_exception(failure_);
    return std::exchange(what, T{});
  }
  // On the crew's worker, with the harness it built.
  void search(Harness *own, std::exception_ptr failed) {
    try {
      if (failed)
        std::rethrow_exception(failed);
      if (!own)
        fatal("under mpirun: this scenario cannot make a harness per thread");
      const SubtreeRunner mine(*own, runner_);
      const auto count = runner_.plan().count;
      for (std::uint32_t i = static_cast<std::uint32_t>(rank_); i < count && !mpiUp_;
           i += static_cast<std::uint32_t>(ranks_)) {
        std::string out = encodeOutcome(mine.runPiece(SubtreePiece{i, {}, nullptr, 1}));
        std::lock_guard lock(mutex_);
        opening_.emplace_back(i, std::move(out));
      }
      std::unique_lock lock(mutex_);
      opened_ = true;
      changed_.notify_all();
      while (true) {
        changed_.wait(lock, [&] { return piece_ || over_; });
        if (over_)
          return;
        const SubtreePiece piece = std::exchange(piece_, std::nullopt).value();
        lock.unlock();
        std::string out = encodeOutcome(mine.runPiece(piece));
        lock.lock();
        outcome_ = std::move(out);
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
    }
  }

  const SubtreeRunner &runner_;
  const int rank_, ranks_;
  std::atomic<bool> mpiUp_{false}; // the opening share ends at the next piece
  std::mutex mutex_;
  std::condition_variable changed_;
  Opening opening_;
  bool opened_ = false;                // the opening share is over
  std::optional<SubtreePiece> piece_;  // to search
  std::optional<std::string> outcome_; // of the last piece
  std::exception_ptr failure_;
  bool over_ = false;
  Crew &crew_; // the worker
};

} // namespace

bool underMpirun() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

std::optional<CheckReport> mpiCheck(Harness &harness, const ExploreOptions &options) {
  if (!searchesSplitTree(options))
    fatal("under mpirun: only the exhaustive explorer with a split tree (--subtrees > 0) is "
          "shared among ranks");
  const int rank = environmentInt("OMPI_COMM_WORLD_RANK");
  const int ranks = environmentInt("OMPI_COMM_WORLD_SIZE");
  if (rank >= ranks)
    fatal("under mpirun: rank {} of {} ranks", rank, ranks);
  // Open MPI's point-to-point layer: ob1 unless the user chose one (`--mca pml …` reaches the
  // ranks as this variable). The ranks exchange a few short messages per piece, which ob1 carries
  // well (shared memory on one machine, TCP between machines); Debian's Open MPI tries UCX first,
  // which cost two ranks about 0.2 s more to start on the development machine, where it then fell
  // back to ob1 (verify/README.md, "Split trees"). Set before any thread starts, as setenv must be.
  setenv("OMPI_MCA_pml", "ob1", 0);
  std::optional<CheckReport> report;
  bool initialised = false;
  try {
    ExploreOptions o = options;
    o.progress = nullptr;
    Crew crew(1, o.newHarness); // the rank's worker builds its harness during the plan
    const SubtreeRunner runner(harness, o);
    std::optional<Coordinator> coordinator;
    std::optional<Server> server;
    if (rank == 0)
      coordinator.emplace(harness, o, runner, ranks, crew);
    else
      server.emplace(runner, rank, ranks, crew);
    int provided = 0, mpiRank = 0, mpiRanks = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    initialised = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpiRanks);
    if (mpiRank != rank || mpiRanks != ranks)
      fatal("under mpirun: MPI says rank {} of {}, the environment {} of {}", mpiRank, mpiRanks,
            rank, ranks);
    if (coordinator)
      report = coordinator->serve();
    else
      server->serve();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ftsim: %s\n", e.what()); // one line, then every rank stops
    if (!initialised) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return report;
}

} // namespace ftsim::verify
