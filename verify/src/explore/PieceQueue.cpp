// The shared queue of a split tree's pieces, and pieces as bytes for MPI messages (PieceQueue.h).

#include "ftsim/verify/explore/PieceQueue.h"

#include "DporTree.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/explore/SubtreeFiles.h"

#include <cstring>
#include <type_traits>

namespace ftsim::verify {

PieceQueue::PieceQueue(const ExploreOptions &options, const std::vector<std::uint32_t> &subtrees)
    : options_(options) {
  for (std::uint32_t i : subtrees)
    queue_.push_back(SubtreePiece{i, {}, nullptr, 1});
  inFlight_ = queue_.size();
}

std::optional<SubtreePiece> PieceQueue::take(const std::function<bool(const SubtreePiece &)> &may) {
  for (auto it = queue_.begin(); it != queue_.end();) {
    const auto known = subtrees_.find(it->index);
    const bool needed =
        it->index <= stopAfter_ &&
        (known == subtrees_.end() || pieceNeeded(it->path, known->second.done, options_));
    if (needed && may && !may(*it)) {
      ++it;
      continue;
    }
    SubtreePiece piece = std::move(*it);
    it = queue_.erase(it);
    Subtree &t = subtrees_[piece.index];
    if (needed)
      return piece;
    t.everyPiece = false;
    pieceOver(piece.index, t);
  }
  return std::nullopt;
}

std::optional<SubtreePiece> PieceQueue::claim(std::uint32_t index) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (it->index == index && it->path.empty()) {
      SubtreePiece piece = std::move(*it);
      queue_.erase(it);
      return piece;
    }
  return std::nullopt;
}

void PieceQueue::finished(const SubtreePiece &piece, PieceOutcome outcome) {
  Subtree &t = subtrees_[piece.index];
  t.progress.executions += outcome.result.stats.executions;
  t.progress.searched += piece.share;
  for (const SubtreePiece &p : outcome.rest)
    t.progress.searched -= p.share;
  t.done.emplace_back(piece.path, std::move(outcome.result));
  t.outstanding += outcome.rest.size();
  inFlight_ += outcome.rest.size();
  for (std::size_t k = outcome.rest.size(); k-- > 0;)
    queue_.push_front(std::move(outcome.rest[k])); // next: the pieces of a large subtree
  pieceOver(piece.index, t);
}

void PieceQueue::pieceOver(std::uint32_t index, Subtree &t) {
  --inFlight_;
  if (--t.outstanding > 0)
    return;
  SubtreeResult r = assembleSubtree(index, std::move(t.done), t.everyPiece, options_);
  subtrees_.erase(index);
  if (index <= stopAfter_)
    ready_.push_back(std::move(r));
}

std::map<std::uint32_t, PieceQueue::Open> PieceQueue::open() const {
  std::map<std::uint32_t, Open> out;
  for (const auto &[i, t] : subtrees_)
    out[i] = t.progress;
  return out;
}

// --- Bytes --------------------------------------------------------------------------------------

namespace {

using sim::DecisionKind;
using sim::EventRecord;

static_assert(std::is_trivially_copyable_v<EventRecord>);

class Writer {
public:
  template <typename T> void put(const T &v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char *>(&v), sizeof v);
  }
  void bytes(const std::string &s) {
    put<std::uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class Reader {
public:
  explicit Reader(const std::string &in) : in_(in) {}
  template <typename T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::size_t count(std::size_t each) {
    const auto n = get<std::uint64_t>();
    if (each && n > (in_.size() - at_) / each)
      fatal("a piece message: a count of {} exceeds the message", n);
    return static_cast<std::size_t>(n);
  }
  std::string bytes() {
    const std::size_t n = count(1);
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  void end() const {
    if (at_ != in_.size())
      fatal("a piece message: {} bytes after its end", in_.size() - at_);
  }

private:
  void need(std::size_t n) const {
    if (in_.size() - at_ < n)
      fatal("a piece message: truncated at byte {}", at_);
  }
  const std::string &in_;
  std::size_t at_ = 0;
};

void putNode(Writer &w, const detail::Node &n) {
  w.put(n.kind);
  w.put(n.options);
  w.put(n.chosen);
  w.put<std::uint64_t>(n.logSize);
  w.put(n.preemptionsBefore);
  w.put(n.lastProcess);
  w.put<std::uint64_t>(n.processes.size());
  for (int p : n.processes)
    w.put(p);
  w.put<std::uint64_t>(n.backtrack.size());
  for (std::size_t o = 0; o < n.backtrack.size(); ++o)
    w.put<std::uint8_t>(static_cast<std::uint8_t>(n.backtrack[o] | (n.done.at(o) << 1)));
  w.put<std::uint64_t>(n.branchEvent.size());
  for (const auto &e : n.branchEvent) {
    w.put<std::uint8_t>(e.has_value());
    if (e)
      w.put(*e);
  }
  w.put<std::uint64_t>(n.sleep.size());
  for (const detail::SleepEntry &s : n.sleep) {
    w.put(s.process);
    w.put(s.event);
  }
}

detail::Node getNode(Reader &r) {
  detail::Node n;
  n.kind = r.get<DecisionKind>();
  if (n.kind != DecisionKind::Event && n.kind != DecisionKind::StaleByte)
    fatal("a piece message: a node of no known kind");
  n.options = r.get<std::uint32_t>();
  n.chosen = r.get<std::uint32_t>();
  n.logSize = static_cast<std::size_t>(r.get<std::uint64_t>());
  n.preemptionsBefore = r.get<unsigned>();
  n.lastProcess = r.get<int>();
  n.processes.resize(r.count(sizeof(int)));
  for (int &p : n.processes)
    p = r.get<int>();
  const std::size_t options = r.count(1);
  for (std::size_t o = 0; o < options; ++o) {
    const auto bits = r.get<std::uint8_t>();
    n.backtrack.push_back(bits & 1);
    n.done.push_back(bits & 2);
  }
  n.branchEvent.resize(r.count(1));
  for (auto &e : n.branchEvent)
    if (r.get<std::uint8_t>())
      e = r.get<EventRecord>();
  n.sleep.resize(r.count(sizeof(int) + sizeof(EventRecord)));
  for (detail::SleepEntry &s : n.sleep) {
    s.process = r.get<int>();
    s.event = r.get<EventRecord>();
  }
  if (n.chosen >= n.options || n.backtrack.size() != n.options ||
      (n.kind == DecisionKind::Event &&
       (n.processes.size() != n.options || n.branchEvent.size() != n.options)))
    fatal("a piece message: an inconsistent node");
  return n;
}

void putPiece(Writer &w, const SubtreePiece &p) {
  w.put(p.index);
  w.put(p.share);
  w.put<std::uint64_t>(p.path.size());
  for (std::uint32_t k : p.path)
    w.put(k);
  w.put<std::uint8_t>(p.item != nullptr);
  if (!p.item)
    return;
  w.put<std::uint64_t>(p.item->frozen);
  w.put<std::uint8_t>(p.item->advanceFirst);
  w.put(p.item->share);
  w.put<std::uint64_t>(p.item->stack.size());
  for (const detail::Node &n : p.item->stack)
    putNode(w, n);
}

SubtreePiece getPiece(Reader &r) {
  SubtreePiece p;
  p.index = r.get<std::uint32_t>();
  p.share = r.get<double>();
  p.path.resize(r.count(sizeof(std::uint32_t)));
  for (std::uint32_t &k : p.path)
    k = r.get<std::uint32_t>();
  if (!r.get<std::uint8_t>())
    return p;
  auto item = std::make_shared<detail::SearchItem>();
  item->frozen = static_cast<std::size_t>(r.get<std::uint64_t>());
  item->advanceFirst = r.get<std::uint8_t>() != 0;
  item->share = r.get<double>();
  item->stack.resize(r.count(1));
  for (detail::Node &n : item->stack)
    n = getNode(r);
  if (item->frozen > item->stack.size())
    fatal("a piece message: frozen above the stack");
  p.item = std::move(item);
  return p;
}

} // namespace

std::string encodePiece(const SubtreePiece &piece) {
  Writer w;
  putPiece(w, piece);
  return w.take();
}

SubtreePiece decodePiece(const std::string &bytes) {
  Reader r(bytes);
  SubtreePiece p = getPiece(r);
  r.end();
  return p;
}

std::string encodeOutcome(const PieceOutcome &outcome) {
  Writer w;
  w.bytes(subtreeResultToJson(outcome.result));
  w.put<std::uint64_t>(outcome.rest.size());
  for (const SubtreePiece &p : outcome.rest)
    putPiece(w, p);
  return w.take();
}

PieceOutcome decodeOutcome(const std::string &bytes) {
  Reader r(bytes);
  PieceOutcome out;
  out.result = subtreeResultFromJson(r.bytes());
  out.rest.resize(r.count(1));
  for (SubtreePiece &p : out.rest)
    p = getPiece(r);
  r.end();
  return out;
}

} // namespace ftsim::verify
