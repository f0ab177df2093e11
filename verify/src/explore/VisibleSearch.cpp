// The engine-level exhaustive search (VisibleSearch.h).
//
// What it covers. The base schedule is the fair continuation: the process that ran last while it
// can (after a timer interrupt that returns to the same task or enters the guest's handler, the
// CPU's own process: the interrupt is one event), passing on at every kVisibleFairRun-th event of
// its own, to the patcher when it can run (the CPUs run while it waits), else to the first
// enabled event; a stale byte the newest value. A *deviation* is any other answer. The search
// covers every schedule with at most `bound` deviations whose deviations are at *branching points*:
// a decision right after a visible event, where the last process cannot continue, or where the base
// passes to another process.
//
// The round-robin base (ExploreOptions::continuation, a scenario's `[explore] continuation`):
// rr-bounded's round robin instead, the next CPU or the patcher in turn after the one that ran
// last, one event each, never a timer interrupt. It passes on at every decision, so every
// decision is a branching point; the bound then counts deviations from round robin, where a
// timer interrupt at the right moment is one deviation. Bugs that need one process to be slowed
// down while another makes many steps (a softirq still on a trampoline while the patcher syncs,
// waits and frees it) are within one deviation of round robin, but need one per step of the
// patcher from the run-on base.
//
// Visible events (scheduling points). An event is invisible when it is a fast-mode Run or a Step
// with no footprint at all: no watched fetch, no watched data access, no shared read, no change of
// the CPU's interrupt or preempt state, no trap, hypercall, schedule or exit. Everything else is
// visible: the patcher's stores and publications, IPIs, timer preemptions, line fetches, fetches
// of a watched site's bytes or of freed text, watched data, hypercalls (callbacks reading engine
// state), trap handlers, the loads of data a publication writes (ftrace_caller's and
// ftrace_regs_caller's of function_trace_op: sim::Machine::watchSharedRead; as invisible steps
// they hid the residual race through ftrace_regs_caller, ppc32-op-func-residual-race-regs), and
// steps over text the patcher stored into outside a watched site (the trampoline harness watches
// no site: its ftrace_call and traced function are such text). An invisible event commutes with
// every event of every other process (the independence source-DPOR already relies on: unwatched
// instructions touch nothing another CPU or task reads or writes), so it is a both-mover (Lipton,
// CACM 1975): a schedule
// that switches before one is equivalent to the schedule that switches at the process's previous
// visible event instead. A process therefore runs on through its invisible events without a
// decision, and the schedules left out are equivalent to ones explored (same visible events in the
// same order, same final state). Timer preemptions and IPIs move with it: they are taken at visible
// events of their CPU, which is where a preemption can matter (trampolines and sites are stepped,
// so a task inside one is at visible events).
//
// State hashing. Each execution after the first opens a subtree: the schedules that share its
// decisions up to its last deviation and deviate again only later. The search hashes the state
// (Harness::midStateHash: the machine, where the patcher is, the kernel's host state, what the
// oracles will read of the history) with what the base schedule depends on (the last process and
// its event count modulo the fair run) at the decision after the last deviation (the subtree's
// root) and at every later branching point while deviations are left, and keeps, per hash, the
// most deviations that were left there. An execution that reaches a hash kept with at least as
// many deviations left is stopped there (a revisit): every schedule on from it within the bound has
// a twin on from the earlier visit (searched, or pushed to be searched) with the same future and
// the same verdict, and the stopped prefix itself is judged by the oracles (Exploration::finish).
// With no deviation left a revisit would save only the rest of one execution, less than hashing
// at each of its branching points costs, so only the root is hashed there. Hashes are 64 bits:
// two states that collide would be wrongly merged, with probability about n^2 / 2^65 for n states.
//
// Order. Iterative deepening over the bound (0, 1, ...), within a level depth-first over sets of
// deviations, earliest first: the first counterexample found has the fewest deviations. With no
// bound the search ends when a level cut nothing for the bound (it then covered every schedule).

#include "VisibleSearch.h"

#include "ExploreShared.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ftsim::verify::detail {
namespace {

bool visible(const EventRecord &e) {
  if (e.kind != EventKind::Run && e.kind != EventKind::Step)
    return true;
  return touchesCpuState(e);
}

// Per root hash: the most deviations left when a subtree rooted there was expanded.
using Visited = std::unordered_map<std::uint64_t, int>;

// The base schedule with some answers overridden; records the alternatives at every branching
// point from `recordFrom` on (when deviations are left) and hashes the state there.
class VisibleScheduler final : public CountingScheduler {
public:
  VisibleScheduler(const Harness &harness, const std::map<std::uint64_t, std::uint32_t> &overrides,
                   std::uint64_t recordFrom, int left, Visited *visited, Continuation base)
      : harness_(harness), overrides_(overrides), recordFrom_(recordFrom), left_(left),
        visited_(visited), roundRobin_(base == Continuation::RoundRobin) {}

  bool cut() const { return cut_; }
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> &alternatives() const {
    return alternatives_;
  }
  std::uint64_t boundCuts() const { return boundCuts_; }

protected:
  std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
    const std::uint64_t index = decisions_++;
    track(m);
    const std::uint32_t base = roundRobin_ ? roundRobinAnswer(m, p) : baseAnswer(p);
    if (cut_)
      return base;
    const bool branches = index >= recordFrom_ && branching(p, base);
    // Hashed at the subtree's root and wherever a deviation is left (a revisit there saves
    // subtrees; with none left it would save only the rest of this one execution).
    if ((index == recordFrom_ || (branches && left_ > 0)) && visited_ && revisited(p)) {
      cut_ = true;
      return base;
    }
    if (branches)
      for (std::uint32_t i = 0; i < p.options; ++i) {
        if (i == base)
          continue;
        if (left_ > 0)
          alternatives_.push_back({index, i});
        else
          ++boundCuts_;
      }
    auto it = overrides_.find(index);
    if (it == overrides_.end())
      return base;
    if (it->second >= p.options)
      FTSIM_PANIC("visible search: decision {} has {} options, override {}", index, p.options,
                  it->second);
    return it->second;
  }

private:
  // The last process, every process's events so far and whether the last event was visible, from
  // the log as it grows.
  void track(const sim::Machine &m) {
    const auto log = m.events();
    for (; seen_ < log.size(); ++seen_) {
      if (isNote(log[seen_]))
        continue;
      // After a timer interrupt that returns to the same task (a stall inside a non-preemptible
      // region, Preempt with detail 1) or one that enters the guest's handler (Irq), the CPU's
      // own process goes on: the stall stays enabled, and a continuation that kept running it
      // would stall the CPU a thousand times in a row; the handler runs as the CPU's steps.
      const EventRecord &e = log[seen_];
      const bool toTask =
          (e.kind == EventKind::Preempt && e.detail == 1) || e.kind == EventKind::Irq;
      const int process = processOf(toTask ? EventKind::Step : e.kind, e.cpu);
      ++counts_[process];
      last_ = process;
      lastVisible_ = visible(e);
    }
  }

  std::uint32_t baseAnswer(const sim::DecisionPoint &p) const {
    if (p.kind == DecisionKind::StaleByte)
      return p.options - 1;
    // Every kVisibleFairRun-th event of its own, the process that ran last passes on (a process
    // spinning on what another must do would otherwise never let it); counted per process, not
    // per run in a row, so that the base schedule is the same wherever a state is reached.
    const bool fair = last_ >= 0 && counts_[last_] % kVisibleFairRun == 0;
    if (!fair)
      for (std::uint32_t i = 0; i < p.options; ++i)
        if (processOf(p.events[i]) == last_)
          return i;
    // Passing on: to the patcher first (the CPUs run while it waits), else the first enabled.
    std::uint32_t first = p.options;
    for (std::uint32_t i = 0; i < p.options; ++i) {
      const int process = processOf(p.events[i]);
      if (fair && process == last_)
        continue;
      if (process == kPatcher)
        return i;
      first = std::min(first, i);
    }
    return first < p.options ? first : 0;
  }

  // The round-robin base (rr-bounded's, roundRobinChoice) after the CPU or patcher that ran last
  // (before any event, after the patcher: cpu0 first); a stale byte the newest value.
  std::uint32_t roundRobinAnswer(const sim::Machine &m, const sim::DecisionPoint &p) const {
    if (p.kind == DecisionKind::StaleByte)
      return p.options - 1;
    const unsigned cpus = m.config().cpus;
    return roundRobinChoice(p, cpus, actorOfProcess(last_, cpus));
  }

  bool branching(const sim::DecisionPoint &p, std::uint32_t base) const {
    if (p.kind == DecisionKind::StaleByte || last_ < 0)
      return true;
    return processOf(p.events[base]) != last_ || lastVisible_;
  }

  // Whether this subtree's root was expanded before with at least as many deviations left;
  // records it otherwise.
  bool revisited(const sim::DecisionPoint &p) {
    const std::optional<std::uint64_t> state = harness_.midStateHash();
    if (!state)
      return false;
    std::uint64_t key = *state;
    for (std::uint64_t v :
         {static_cast<std::uint64_t>(last_ + 1), last_ < 0 ? 0 : counts_[last_] % kVisibleFairRun,
          static_cast<std::uint64_t>(p.kind), std::uint64_t{p.options}})
      key = (key ^ v) * 0x100000001b3ull;
    auto [it, inserted] = visited_->try_emplace(key, left_);
    if (inserted)
      return false;
    if (it->second >= left_)
      return true;
    it->second = left_;
    return false;
  }

  const Harness &harness_;
  const std::map<std::uint64_t, std::uint32_t> &overrides_;
  std::uint64_t recordFrom_;
  int left_;
  Visited *visited_;
  std::uint64_t decisions_ = 0;
  std::size_t seen_ = 0;
  int last_ = -1;
  std::uint64_t counts_[kProcesses] = {};
  bool lastVisible_ = true;
  bool roundRobin_;
  bool cut_ = false;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> alternatives_;
  std::uint64_t boundCuts_ = 0;
};

struct Node {
  std::map<std::uint64_t, std::uint32_t> overrides;
  std::uint64_t recordFrom = 0;
};

} // namespace

void searchVisible(Exploration &x, int bound, bool hashing, Continuation base) {
  Visited visited;
  ExploreStats &stats = x.stats();
  for (int level = 0; bound < 0 || level <= bound; ++level) {
    std::vector<Node> stack{{}};
    std::uint64_t cuts = 0;
    while (!stack.empty()) {
      if (stats.executions >= x.options().maxExecutions)
        return; // budget exhausted: not complete
      const Node node = std::move(stack.back());
      stack.pop_back();
      const int left = level - static_cast<int>(node.overrides.size());
      VisibleScheduler s(x.harness(), node.overrides, node.recordFrom, left,
                         hashing ? &visited : nullptr, base);
      const sim::RunResult run = x.harness().runExecution(s, [&s] { return s.cut(); });
      stats.revisits += s.cut() ? 1 : 0;
      stats.hashedStates = visited.size();
      if (!x.finish(s, s.preemptions(), s.cut(), run))
        return;
      cuts += s.boundCuts();
      const auto &alternatives = s.alternatives();
      for (auto it = alternatives.rbegin(); it != alternatives.rend(); ++it) {
        Node child{node.overrides, it->first + 1};
        child.overrides[it->first] = it->second;
        stack.push_back(std::move(child));
      }
    }
    stats.boundCuts = cuts;
    if (level == bound || (bound < 0 && cuts == 0)) {
      stats.complete = true;
      return;
    }
  }
}

std::string visibleBounds(int bound, bool hashing, Continuation base) {
  const std::string continuation =
      base == Continuation::RoundRobin
          ? std::string("round robin (the CPUs and the patcher in turn, one event each, never a "
                        "timer interrupt; stale bytes the newest), deviations where it passes on "
                        "and after visible events")
          : fmt::format("the fair continuation (the process that ran last while it can, passing "
                        "on at every {}th event of its own, to the patcher, else the first "
                        "enabled; stale bytes the newest), switches only at visible events",
                        kVisibleFairRun);
  return fmt::format(
      "{} from {} (stores, publications, IPIs, preemptions, watched fetches and data, traps, "
      "hypercalls, region changes; fast-mode runs between them are not scheduling points), "
      "iterative deepening over the bound{}",
      bound < 0 ? std::string("any number of deviations") : fmt::format("deviations <= {}", bound),
      continuation,
      hashing ? ", states hashed at subtree roots and where deviations are left (machine, patcher "
                "progress, kernel host state, the oracles' per-task histories)"
              : ", no state hashing");
}

} // namespace ftsim::verify::detail

namespace ftsim::verify {

std::optional<Continuation> continuationByName(std::string_view name) {
  if (name == "run-on")
    return Continuation::RunOn;
  if (name == "round-robin")
    return Continuation::RoundRobin;
  return std::nullopt;
}

std::string continuationNames() { return "run-on, round-robin"; }

} // namespace ftsim::verify
