// The exhaustive explorer: stateless depth-first search with source-DPOR and sleep sets, or naive,
// optionally preemption-bounded (Explore.h).

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim::verify {
namespace {

using namespace detail;

bool overlap(std::uint64_t a, std::uint64_t an, std::uint64_t b, std::uint64_t bn) {
  return a < b + bn && b < a + an;
}

bool dependent(const EventRecord &a, const EventRecord &b) {
  const int pa = processOf(a), pb = processOf(b);
  if (pa == pb)
    return true;
  if (pa == kPatcher || pb == kPatcher) {
    const EventRecord &p = pa == kPatcher ? a : b;
    const EventRecord &o = pa == kPatcher ? b : a;
    if (o.kind == EventKind::Ipi || o.kind == EventKind::Preempt)
      return true;
    switch (p.kind) {
    case EventKind::Store:
      return o.kind == EventKind::FetchLine || serialises(o) ||
             (o.fetchSize && overlap(p.storeAddr, p.storeSize, o.fetchAddr, o.fetchSize));
    case EventKind::Publish:
      // A publication that is a data access of the patcher's own guest code (publishAccess())
      // conflicts with another CPU's access to the same bytes when either writes; one without a
      // footprint may write any watched guest data (function_trace_op).
      if (!p.dataSize)
        return o.sharedRead || o.dataSize;
      return o.sharedRead || (o.dataSize && (p.dataWrite || o.dataWrite) &&
                              overlap(p.dataAddr, p.dataSize, o.dataAddr, o.dataSize));
    case EventKind::Free:
      return o.fetchSize && overlap(p.storeAddr, p.detail, o.fetchAddr, o.fetchSize);
    default:
      return false;
    }
  }
  if (a.cpu == b.cpu) {
    if (a.kind == EventKind::Preempt || b.kind == EventKind::Preempt)
      return true;
    if (a.kind == EventKind::Ipi)
      return touchesCpuState(b);
    if (b.kind == EventKind::Ipi)
      return touchesCpuState(a);
    return true;
  }
  return a.dataSize && b.dataSize && (a.dataWrite || b.dataWrite) &&
         overlap(a.dataAddr, a.dataSize, b.dataAddr, b.dataSize);
}

// --- Depth-first exploration ---------------------------------------------------------------------

struct SleepEntry {
  int process;
  EventRecord event; // what the process does next (recorded when its branch was explored)
};

struct Node {
  DecisionKind kind = DecisionKind::Event;
  std::uint32_t options = 0;
  std::uint32_t chosen = 0;
  std::vector<int> processes; // Event: process of each option
  std::vector<bool> backtrack, done;
  std::vector<std::optional<EventRecord>> branchEvent;
  std::vector<SleepEntry> sleep;
  std::size_t logSize = 0; // log size when the decision was asked
  unsigned preemptionsBefore = 0;
  int lastProcess = -1;

  bool asleep(int process) const {
    return std::any_of(sleep.begin(), sleep.end(),
                       [&](const SleepEntry &s) { return s.process == process; });
  }
  unsigned cost(std::uint32_t o) const {
    if (lastProcess < 0 || processes[o] == lastProcess)
      return 0;
    return std::find(processes.begin(), processes.end(), lastProcess) != processes.end() ? 1 : 0;
  }
};

class DfsScheduler final : public sim::Scheduler {
public:
  DfsScheduler(std::vector<Node> &stack, bool reduction, int bound)
      : stack_(stack), reduction_(reduction), bound_(bound) {}

  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    const auto log = machine.events();
    if (stopped_)
      return fallback(point, lastProcess(log));
    if (depth_ < stack_.size()) {
      Node &node = stack_[depth_++];
      if (node.kind != point.kind || node.options != point.options)
        FTSIM_PANIC("exploration replay diverged at decision {}: the machine is not deterministic",
                    depth_ - 1);
      if (point.kind == DecisionKind::Event)
        preemptions_ = node.preemptionsBefore + node.cost(node.chosen);
      return node.chosen;
    }
    Node node;
    node.kind = point.kind;
    node.options = point.options;
    node.logSize = log.size();
    node.backtrack.assign(point.options, false);
    node.done.assign(point.options, false);
    if (point.kind == DecisionKind::StaleByte) {
      node.backtrack.assign(point.options, true);
      node.done[0] = true;
      stack_.push_back(std::move(node));
      ++depth_;
      return 0;
    }
    node.branchEvent.assign(point.options, std::nullopt);
    for (std::uint32_t i = 0; i < point.options; ++i)
      node.processes.push_back(processOf(point.events[i]));
    node.lastProcess = lastProcess(log);
    node.preemptionsBefore = preemptions_;
    if (reduction_)
      node.sleep = inheritedSleep(log);
    // Non-preemptive default: the process that ran last, else the first awake one.
    std::optional<std::uint32_t> pick;
    for (std::uint32_t i = 0; i < point.options && !pick; ++i)
      if (node.processes[i] == node.lastProcess && !node.asleep(node.processes[i]))
        pick = i;
    for (std::uint32_t i = 0; i < point.options && !pick; ++i)
      if (!node.asleep(node.processes[i]) &&
          (bound_ < 0 || node.preemptionsBefore + node.cost(i) <= static_cast<unsigned>(bound_)))
        pick = i;
    if (!pick) {
      // Every process that may run is asleep: this execution only repeats explored ones.
      stopped_ = true;
      return fallback(point, node.lastProcess);
    }
    node.chosen = *pick;
    node.done[*pick] = true;
    node.backtrack[*pick] = true;
    if (!reduction_)
      node.backtrack.assign(point.options, true);
    preemptions_ = node.preemptionsBefore + node.cost(*pick);
    stack_.push_back(std::move(node));
    ++depth_;
    return *pick;
  }

  bool stopped() const { return stopped_; }
  unsigned preemptions() const { return preemptions_; }
  void allowFinish() { stopped_ = true; }

private:
  static std::uint32_t fallback(const sim::DecisionPoint &point, int last) {
    if (point.kind == DecisionKind::Event)
      for (std::uint32_t i = 0; i < point.options; ++i)
        if (processOf(point.events[i]) == last)
          return i;
    return 0;
  }

  // The sleep set after the previous event decision's event and every event since: its sleep
  // set plus its explored alternatives, minus whatever is dependent with what ran.
  std::vector<SleepEntry> inheritedSleep(std::span<const EventRecord> log) const {
    const Node *prev = nullptr;
    for (std::size_t i = depth_; i-- > 0;)
      if (stack_[i].kind == DecisionKind::Event) {
        prev = &stack_[i];
        break;
      }
    if (!prev)
      return {};
    std::vector<SleepEntry> candidates = prev->sleep;
    for (std::uint32_t o = 0; o < prev->options; ++o)
      if (prev->done[o] && o != prev->chosen && prev->branchEvent[o])
        candidates.push_back({prev->processes[o], *prev->branchEvent[o]});
    std::vector<SleepEntry> out;
    const std::size_t from = eventAtOrAfter(log, prev->logSize);
    for (const SleepEntry &s : candidates) {
      bool keep = true;
      for (std::size_t i = from; i < log.size() && keep; ++i)
        keep = !dependent(s.event, log[i]);
      if (keep)
        out.push_back(s);
    }
    return out;
  }

  std::vector<Node> &stack_;
  bool reduction_;
  int bound_;
  std::size_t depth_ = 0;
  unsigned preemptions_ = 0;
  bool stopped_ = false;
};

// Source-DPOR race analysis of one execution (Abdulla et al. 2014, Algorithm 1, lines 5-8): for
// every reversible race e < e', if no initial of v = notdep(e, E).e' is in backtrack(pre(E, e)),
// add one.
void addBacktrackPoints(std::vector<Node> &stack, std::span<const EventRecord> log) {
  const std::size_t n = log.size();
  const std::size_t words = (n + 63) / 64;
  std::vector<std::uint64_t> hb(n * words, 0); // row j: the events that happen before j
  auto row = [&](std::size_t j) { return hb.data() + j * words; };
  auto has = [&](std::size_t j, std::size_t i) { return (row(j)[i / 64] >> (i % 64)) & 1u; };
  std::vector<std::size_t> nodeOfEvent(n, SIZE_MAX);
  for (std::size_t d = 0; d < stack.size(); ++d)
    if (stack[d].kind == DecisionKind::Event) {
      const std::size_t e = eventAtOrAfter(log, stack[d].logSize);
      if (e < n)
        nodeOfEvent[e] = d;
    }
  std::vector<std::uint64_t> via(words);
  std::vector<std::size_t> preds;
  for (std::size_t j = 0; j < n; ++j) {
    preds.clear();
    std::fill(via.begin(), via.end(), 0);
    for (std::size_t i = 0; i < j; ++i)
      if (dependent(log[i], log[j])) {
        preds.push_back(i);
        for (std::size_t w = 0; w < words; ++w)
          via[w] |= row(i)[w];
      }
    for (std::size_t i : preds) {
      row(j)[i / 64] |= 1ull << (i % 64);
      for (std::size_t w = 0; w < words; ++w)
        row(j)[w] |= row(i)[w];
    }
    for (std::size_t i : preds) {
      if ((via[i / 64] >> (i % 64)) & 1u)
        continue; // ordered through another event: not a race
      if (processOf(log[i]) == processOf(log[j]) || nodeOfEvent[i] == SIZE_MAX)
        continue;
      Node &node = stack[nodeOfEvent[i]];
      // Initials of v = the events after i that do not happen after i, then j.
      std::vector<int> initials;
      std::vector<std::size_t> v;
      for (std::size_t k = i + 1; k < j; ++k)
        if (!has(k, i))
          v.push_back(k);
      v.push_back(j);
      for (std::size_t a = 0; a < v.size(); ++a) {
        bool first = true;
        for (std::size_t b = 0; b < a && first; ++b)
          first = !has(v[a], v[b]);
        const int p = processOf(log[v[a]]);
        if (first && std::find(initials.begin(), initials.end(), p) == initials.end())
          initials.push_back(p);
      }
      bool covered = false;
      std::optional<std::uint32_t> candidate;
      for (std::uint32_t o = 0; o < node.options; ++o) {
        if (std::find(initials.begin(), initials.end(), node.processes[o]) == initials.end())
          continue;
        if (node.backtrack[o])
          covered = true;
        if (!candidate ||
            (node.asleep(node.processes[*candidate]) && !node.asleep(node.processes[o])))
          candidate = o;
      }
      if (!covered && candidate)
        node.backtrack[*candidate] = true;
    }
  }
}

void search(Exploration &x) {
  const ExploreOptions &options_ = x.options();
  std::vector<Node> stack;
  const int bound = options_.preemptionBound;
  const bool reduction = options_.reduction && x.harness().reductionSound();
  while (true) {
    if (x.stats().executions >= options_.maxExecutions)
      return; // budget exhausted: not complete
    DfsScheduler dfs(stack, reduction, bound);
    bool stop = false;
    sim::RunResult run = x.harness().runExecution(dfs, [&] { return dfs.stopped() || stop; });
    const bool cut = dfs.stopped();
    if (cut)
      ++x.stats().sleepBlocked;
    const auto log = x.harness().machine().events();
    for (Node &node : stack)
      if (node.kind == DecisionKind::Event) {
        const std::size_t e = eventAtOrAfter(log, node.logSize);
        if (e < log.size())
          node.branchEvent[node.chosen] = log[e];
      }
    if (reduction)
      addBacktrackPoints(stack, log);
    if (!x.finish(dfs, dfs.preemptions(), cut, run))
      return;
    // Backtrack to the deepest decision with an unexplored alternative.
    while (!stack.empty()) {
      Node &node = stack.back();
      std::optional<std::uint32_t> next;
      if (node.kind == DecisionKind::StaleByte) {
        if (node.chosen + 1 < node.options)
          next = node.chosen + 1;
      } else {
        for (std::uint32_t o = 0; o < node.options && !next; ++o) {
          if (!node.backtrack[o] || node.done[o])
            continue;
          if (node.asleep(node.processes[o])) {
            node.done[o] = true;
            continue;
          }
          if (bound >= 0 && node.preemptionsBefore + node.cost(o) > static_cast<unsigned>(bound)) {
            node.done[o] = true;
            ++x.stats().boundCuts;
            continue;
          }
          next = o;
        }
      }
      if (next) {
        node.chosen = *next;
        if (node.kind == DecisionKind::Event)
          node.done[*next] = true;
        break;
      }
      if (node.kind == DecisionKind::Event)
        x.stats().pruned +=
            static_cast<std::uint64_t>(std::count(node.done.begin(), node.done.end(), false));
      stack.pop_back();
    }
    if (stack.empty()) {
      x.stats().complete = true;
      return;
    }
  }
}

class ExhaustiveExplorer final : public Explorer {
public:
  std::string_view name() const override { return "exhaustive"; }
  bool exhaustive() const override { return true; }
  void run(Exploration &x) const override { search(x); }
  std::string bounds(const Harness &, const ExploreOptions &o) const override {
    return o.preemptionBound < 0 ? std::string("no preemption bound")
                                 : fmt::format("at most {} preemptions", o.preemptionBound);
  }
  std::string method(const Harness &h, const ExploreOptions &o) const override {
    if (!h.reductionSound())
      return ", naive (no reduction: DPOR does not cover this kind's host state)";
    return o.reduction ? ", source-DPOR + sleep sets" : ", naive (no reduction)";
  }
};

} // namespace

const Explorer &exhaustiveExplorer() {
  static const ExhaustiveExplorer e;
  return e;
}

} // namespace ftsim::verify
