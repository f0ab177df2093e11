// Exhaustive (source-DPOR + sleep sets, or naive), PCT and random exploration of a scenario.
// See Explore.h for the process and dependency definitions.

#include "ftsim/verify/Explore.h"

#include "ftsim/arch/Error.h"
#include "ftsim/sim/ReplayScheduler.h"

#include <algorithm>
#include <random>
#include <unordered_set>

namespace ftsim::verify {

std::string_view exploreModeName(ExploreMode mode) {
  switch (mode) {
  case ExploreMode::Exhaustive:
    return "exhaustive";
  case ExploreMode::Pct:
    return "pct";
  case ExploreMode::Random:
    return "random";
  }
  return "?";
}

ExploreMode parseExploreMode(std::string_view name) {
  for (ExploreMode m : {ExploreMode::Exhaustive, ExploreMode::Pct, ExploreMode::Random})
    if (exploreModeName(m) == name)
      return m;
  fatal("unknown exploration '{}' (known: exhaustive, pct, random)", name);
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

using sim::DecisionKind;
using sim::EventKind;
using sim::EventRecord;

// --- Processes and dependencies -----------------------------------------------------------------

constexpr int kPatcher = 24; // CPU processes are cpu*3 + {0: execution, 1: IPI, 2: preemption}
constexpr int kProcesses = 25;

int processOf(EventKind kind, unsigned cpu) {
  switch (kind) {
  case EventKind::Store:
  case EventKind::Publish:
  case EventKind::Alloc:
  case EventKind::Free:
    return kPatcher;
  case EventKind::Ipi:
    return static_cast<int>(cpu) * 3 + 1;
  case EventKind::Preempt:
    return static_cast<int>(cpu) * 3 + 2;
  case EventKind::Step:
  case EventKind::FetchLine:
  case EventKind::Run:
    return static_cast<int>(cpu) * 3;
  }
  return kPatcher;
}

int processOf(const EventRecord &e) { return processOf(e.kind, e.cpu); }
int processOf(const sim::EventChoice &c) { return processOf(c.kind, c.cpu); }

bool isNote(const EventRecord &e) {
  return e.kind == EventKind::Alloc || e.kind == EventKind::Free;
}

bool serialises(const EventRecord &e) {
  return e.outcome == sim::StepOutcome::TrapHandled || e.outcome == sim::StepOutcome::Serialised;
}

// A CPU event whose position relative to an IPI of the same CPU can matter.
bool touchesCpuState(const EventRecord &e) {
  return e.kind == EventKind::FetchLine || e.fetchSize || e.sharedRead || e.dataSize ||
         (e.outcome != sim::StepOutcome::None && e.outcome != sim::StepOutcome::WatchedStop);
}

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
      return o.sharedRead;
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

// The first executed (non-note) event at or after log index `from`.
std::size_t eventAtOrAfter(std::span<const EventRecord> log, std::size_t from) {
  while (from < log.size() && isNote(log[from]))
    ++from;
  return from;
}

int lastProcess(std::span<const EventRecord> log) {
  for (std::size_t i = log.size(); i-- > 0;)
    if (!isNote(log[i]))
      return processOf(log[i]);
  return -1;
}

// Whether choosing option `o` preempts the process that ran last (it is enabled and not chosen).
bool isPreemption(const sim::DecisionPoint &p, std::uint32_t o, int last) {
  if (last < 0 || processOf(p.events[o]) == last)
    return false;
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (processOf(p.events[i]) == last)
      return true;
  return false;
}

// --- Final-state hashing -------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

std::uint64_t finalStateHash(ScenarioInstance &instance) {
  sim::Machine &m = instance.machine();
  std::uint64_t h = 0;
  for (const PatchSiteInfo &s : instance.sites()) {
    arch::Bytes now(s.oldBytes.size());
    m.readText(s.addr, now);
    for (std::uint8_t b : now)
      h = mix(h, b);
  }
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    h = mix(mix(h, static_cast<std::uint64_t>(info.state)), info.result);
  }
  std::vector<std::uint64_t> hits;
  for (const TraceHit &hit : instance.trace())
    hits.push_back(static_cast<std::uint64_t>(hit.task) << 32 | hit.site << 8 | hit.trampoline);
  std::sort(hits.begin(), hits.end());
  for (std::uint64_t v : hits)
    h = mix(h, v);
  for (const sim::Finding &f : m.findings()) {
    h = mix(mix(mix(h, static_cast<std::uint64_t>(f.kind)), f.cpu), f.pc);
    for (std::uint8_t b : f.bytes)
      h = mix(h, b);
  }
  return h;
}

// --- Preemption counting (shared by every scheduler) ---------------------------------------------

class CountingScheduler : public sim::Scheduler {
public:
  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    std::uint32_t choice = choose(machine, point);
    if (point.kind == DecisionKind::Event &&
        isPreemption(point, choice, lastProcess(machine.events())))
      ++preemptions_;
    return choice;
  }
  unsigned preemptions() const { return preemptions_; }

protected:
  virtual std::uint32_t choose(const sim::Machine &machine, const sim::DecisionPoint &point) = 0;

private:
  unsigned preemptions_ = 0;
};

class CountingReplay final : public CountingScheduler {
public:
  explicit CountingReplay(std::vector<std::uint32_t> choices) : replay_(std::move(choices)) {}

protected:
  std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
    return replay_.decide(m, p);
  }

private:
  sim::ReplayScheduler replay_;
};

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

class Explorer {
public:
  Explorer(ScenarioInstance &instance, const ExploreOptions &options)
      : instance_(instance), options_(options),
        oracles_(options.oracles.empty() ? siteOracles() : options.oracles) {
    start_ = std::chrono::steady_clock::now();
    lastProgress_ = start_;
  }

  ExploreResult run() {
    switch (options_.mode) {
    case ExploreMode::Exhaustive:
      exhaustive();
      break;
    case ExploreMode::Pct:
    case ExploreMode::Random:
      randomised();
      break;
    }
    result_.stats.distinctStates = states_.size();
    result_.stats.seconds = elapsed();
    return result_;
  }

  // Found violations go here; returns false to stop exploring.
  std::function<bool(const Counterexample &)> onViolation;

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void progress() {
    if (!options_.progress)
      return;
    auto now = std::chrono::steady_clock::now();
    if (now - lastProgress_ < options_.progressEvery)
      return;
    lastProgress_ = now;
    result_.stats.distinctStates = states_.size();
    result_.stats.seconds = elapsed();
    options_.progress(result_.stats);
  }

  // Accounts for a finished execution; returns false when exploration must stop.
  bool finish(sim::Scheduler &scheduler, unsigned preemptions, bool cut, sim::RunResult run) {
    sim::Machine &m = instance_.machine();
    ExploreStats &s = result_.stats;
    ++s.executions;
    s.decisions += m.schedule().size();
    s.events += m.events().size();
    s.maxEvents = std::max<std::uint64_t>(s.maxEvents, m.events().size());
    s.maxPreemptions = std::max(s.maxPreemptions, preemptions);
    if (run.status == sim::RunResult::Status::EventLimit && !cut)
      ++s.eventLimitHits;
    ExecutionView view{instance_, m, run};
    std::vector<Violation> violations = checkExecution(view, oracles_);
    if (!violations.empty() && cut) {
      // A stopped (sleep-set-blocked) prefix: finish it so the schedule replays on its own.
      sim::RunResult rest = m.run(scheduler, instance_.scenario().bounds.maxEvents - run.events);
      run.events += rest.events;
      run.status = rest.status;
      cut = false;
      violations = checkExecution(ExecutionView{instance_, m, run}, oracles_);
    }
    if (!cut)
      states_.insert(finalStateHash(instance_));
    progress();
    if (violations.empty())
      return true;
    ++result_.violatingExecutions;
    Counterexample cex;
    cex.violation = violations.front();
    cex.choices = sim::choicesOf(m.schedule());
    cex.preemptions = preemptions;
    cex.events = cex.violation.event + 1;
    cex.logHash = fnv1a(m.logText());
    if (!result_.counterexample)
      result_.counterexample = cex;
    bool more = !options_.stopAtFirst;
    if (onViolation)
      more = onViolation(cex);
    return more;
  }

  void exhaustive() {
    std::vector<Node> stack;
    const int bound = options_.preemptionBound;
    while (true) {
      if (result_.stats.executions >= options_.maxExecutions)
        return; // budget exhausted: not complete
      DfsScheduler dfs(stack, options_.reduction, bound);
      bool stop = false;
      sim::RunResult run = instance_.runExecution(dfs, [&] { return dfs.stopped() || stop; });
      const bool cut = dfs.stopped();
      if (cut)
        ++result_.stats.sleepBlocked;
      const auto log = instance_.machine().events();
      for (Node &node : stack)
        if (node.kind == DecisionKind::Event) {
          const std::size_t e = eventAtOrAfter(log, node.logSize);
          if (e < log.size())
            node.branchEvent[node.chosen] = log[e];
        }
      if (options_.reduction)
        addBacktrackPoints(stack, log);
      if (!finish(dfs, dfs.preemptions(), cut, run))
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
            if (bound >= 0 &&
                node.preemptionsBefore + node.cost(o) > static_cast<unsigned>(bound)) {
              node.done[o] = true;
              ++result_.stats.boundCuts;
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
          result_.stats.pruned +=
              static_cast<std::uint64_t>(std::count(node.done.begin(), node.done.end(), false));
        stack.pop_back();
      }
      if (stack.empty()) {
        result_.stats.complete = true;
        return;
      }
    }
  }

  void randomised() {
    std::mt19937_64 rng(options_.seed);
    std::uint64_t k = 0; // PCT: the expected number of events of an execution
    for (std::uint64_t r = 0; r < options_.maxExecutions; ++r) {
      RandomisedScheduler sched(options_.mode == ExploreMode::Pct, rng, options_.pctDepth,
                                std::max<std::uint64_t>(k, 1));
      sim::RunResult run = instance_.runExecution(sched);
      k = std::max<std::uint64_t>(k, instance_.machine().events().size());
      if (!finish(sched, sched.preemptions(), false, run))
        return;
    }
  }

  // PCT or uniform random, one execution.
  class RandomisedScheduler final : public CountingScheduler {
  public:
    RandomisedScheduler(bool pct, std::mt19937_64 &rng, unsigned depth, std::uint64_t k)
        : pct_(pct), rng_(rng) {
      if (!pct_)
        return;
      // Distinct initial priorities d .. d+n-1 (higher runs first), in random order.
      std::vector<int> order(kProcesses);
      for (int i = 0; i < kProcesses; ++i)
        order[i] = static_cast<int>(depth) + i;
      std::shuffle(order.begin(), order.end(), rng_);
      priority_ = order;
      // d-1 change points among the first k events; at the i-th, the running process drops to
      // priority d-1-i (below every initial priority).
      for (unsigned i = 1; i < depth; ++i)
        changes_.push_back({std::uniform_int_distribution<std::uint64_t>(1, k)(rng_),
                            static_cast<int>(depth) - 1 - static_cast<int>(i)});
    }

  protected:
    std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
      if (!pct_ || p.kind == DecisionKind::StaleByte)
        return static_cast<std::uint32_t>(
            std::uniform_int_distribution<std::uint32_t>(0, p.options - 1)(rng_));
      auto best = [&] {
        std::uint32_t b = 0;
        for (std::uint32_t i = 1; i < p.options; ++i)
          if (priority_[processOf(p.events[i])] > priority_[processOf(p.events[b])])
            b = i;
        return b;
      };
      std::uint32_t pick = best();
      const std::uint64_t step = m.events().size();
      for (auto &[at, low] : changes_)
        if (at == step && low >= 0) {
          priority_[processOf(p.events[pick])] = low;
          low = -1;
          pick = best();
        }
      return pick;
    }

  private:
    bool pct_;
    std::mt19937_64 &rng_;
    std::vector<int> priority_;
    std::vector<std::pair<std::uint64_t, int>> changes_;
  };

  ScenarioInstance &instance_;
  const ExploreOptions &options_;
  OracleList oracles_;
  ExploreResult result_;
  std::unordered_set<std::uint64_t> states_;
  std::chrono::steady_clock::time_point start_, lastProgress_;
};

} // namespace

ExploreResult explore(ScenarioInstance &instance, const ExploreOptions &options) {
  Explorer explorer(instance, options);
  return explorer.run();
}

Counterexample minimise(ScenarioInstance &instance, const Counterexample &found,
                        const OracleList &oracles, std::uint64_t budget) {
  for (unsigned bound = 0; bound <= found.preemptions; ++bound) {
    ExploreOptions o;
    o.mode = ExploreMode::Exhaustive;
    o.reduction = false;
    o.preemptionBound = static_cast<int>(bound);
    o.maxExecutions = budget;
    o.stopAtFirst = false;
    o.oracles = oracles;
    Explorer explorer(instance, o);
    std::optional<Counterexample> best;
    explorer.onViolation = [&](const Counterexample &c) {
      if (c.violation.oracle == found.violation.oracle && c.preemptions <= bound &&
          (!best || c.events < best->events))
        best = c;
      return true;
    };
    explorer.run();
    if (best && (best->preemptions < found.preemptions || best->events < found.events))
      return *best;
    if (best)
      break;
  }
  return found;
}

ReplayedExecution replayChoices(ScenarioInstance &instance,
                                const std::vector<std::uint32_t> &choices,
                                const OracleList &oracles) {
  CountingReplay replay(choices);
  sim::RunResult run = instance.runExecution(replay);
  sim::Machine &m = instance.machine();
  if (m.schedule().size() != choices.size())
    fatal("the schedule has {} decisions but the run used {}: it does not fit this scenario",
          choices.size(), m.schedule().size());
  ReplayedExecution out;
  out.violations =
      checkExecution(ExecutionView{instance, m, run}, oracles.empty() ? siteOracles() : oracles);
  out.logHash = fnv1a(m.logText());
  out.preemptions = replay.preemptions();
  out.events = m.events().size();
  return out;
}

} // namespace ftsim::verify
