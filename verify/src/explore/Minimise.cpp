// Counterexample minimisation (Explore.h): delta debugging over the schedule's deviations from
// the continuation, then for cheap harnesses the fewest preemptions by bounded search; never more
// preemptions or events than what was found.

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include <algorithm>
#include <map>

namespace ftsim::verify {
namespace {

using namespace detail;

// Where a decision is, independently of the decisions before it: the process that ran last and
// how many events it had run (for a stale byte: the fetching CPU and how many stale bytes it had
// been asked). Removing one deviation shifts the index of every later decision, but not this.
struct DecisionKey {
  int process = -1;
  std::uint64_t count = 0;
  auto operator<=>(const DecisionKey &) const = default;
};

// One deviation: at the decision `key`, run `process` (an event decision) or answer `choice` (a
// stale byte) instead of the continuation.
struct Deviation {
  DecisionKey key;
  int process = -1;
  std::uint32_t choice = 0;
  auto operator<=>(const Deviation &) const = default;
};

// Decision keys, maintained from the event log as it grows.
class KeyTracker {
public:
  DecisionKey key(const sim::Machine &m, const sim::DecisionPoint &p) {
    const auto log = m.events();
    for (; seen_ < log.size(); ++seen_)
      if (!isNote(log[seen_]))
        ++events_[processOf(log[seen_])];
    if (p.kind == DecisionKind::StaleByte)
      return {-2 - static_cast<int>(p.cpu), stale_[p.cpu % kCpus]++};
    const int last = lastProcess(log);
    return {last, last < 0 ? 0 : events_[last]};
  }

private:
  static constexpr unsigned kCpus = 8;
  std::size_t seen_ = 0;
  std::uint64_t events_[kProcesses] = {};
  std::uint64_t stale_[kCpus] = {};
};

// Whether answer `a` differs from the continuation's `usual`, as a deviation (nullopt: none).
std::optional<Deviation> deviationOf(const DecisionKey &key, const sim::DecisionPoint &p,
                                     std::uint32_t a, std::uint32_t usual) {
  if (a == usual)
    return std::nullopt;
  if (p.kind == DecisionKind::StaleByte)
    return Deviation{key, -1, a};
  return Deviation{key, processOf(p.events[a]), 0};
}

// Answers the kept deviations where their keys come up (a process not enabled there, or a stale
// answer out of range, falls back to the continuation) and the continuation everywhere else.
// Records, for every decision, whether its answer deviated (and how) and how many events preceded
// it.
class DeviationScheduler final : public CountingScheduler {
public:
  // With `replay`, its answers instead (exactly).
  DeviationScheduler(std::span<const Deviation> kept, CountingReplay *replay)
      : kept_(kept.begin(), kept.end()), replay_(replay) {
    std::sort(kept_.begin(), kept_.end(),
              [](const Deviation &a, const Deviation &b) { return a.key < b.key; });
  }
  std::vector<std::optional<Deviation>> deviations;
  std::vector<std::size_t> eventsBefore;

protected:
  std::uint32_t choose(const sim::Machine &m, const sim::DecisionPoint &p) override {
    const DecisionKey key = keys_.key(m, p);
    const std::uint32_t usual = continuation(m, p);
    std::uint32_t answer = usual;
    if (replay_) {
      answer = replay_->decide(m, p);
    } else {
      auto it =
          std::lower_bound(kept_.begin(), kept_.end(), key,
                           [](const Deviation &d, const DecisionKey &k) { return d.key < k; });
      if (it != kept_.end() && it->key == key) {
        if (p.kind == DecisionKind::StaleByte) {
          if (it->choice < p.options)
            answer = it->choice;
        } else {
          for (std::uint32_t i = 0; i < p.options; ++i)
            if (processOf(p.events[i]) == it->process)
              answer = i;
        }
      }
    }
    deviations.push_back(deviationOf(key, p, answer, usual));
    eventsBefore.push_back(m.events().size());
    return answer;
  }

private:
  std::vector<Deviation> kept_;
  CountingReplay *replay_;
  KeyTracker keys_;
};

// (preemptions, events) lexicographically: fewer preemptions, or as many and fewer events.
bool smaller(const Counterexample &c, const Counterexample &than) {
  return c.preemptions < than.preemptions ||
         (c.preemptions == than.preemptions && c.events < than.events);
}

// No more preemptions than `than`, and no more events when as many preemptions.
bool noLonger(unsigned preemptions, std::uint64_t events, const Counterexample &than) {
  return preemptions < than.preemptions ||
         (preemptions == than.preemptions && events <= than.events);
}

// A candidate execution longer than this many times found's whole execution, plus the slack, is
// stopped and fails.
constexpr std::uint64_t kLengthFactor = 4;
constexpr std::uint64_t kLengthSlack = 1000;

class DeltaDebugging {
public:
  // `foundLength`: the events of found's whole execution (to its end, past its violation).
  DeltaDebugging(Harness &h, const OracleList &oracles, const Counterexample &found,
                 std::uint64_t budget, std::uint64_t foundLength)
      : h_(h), oracles_(oracles), found_(found), budget_(budget),
        eventLimit_(kLengthFactor * foundLength + kLengthSlack) {}

  // The counterexample `kept` gives, when it shows a violation of found's oracle first, with no
  // more preemptions or events than found; its decisions end at its last deviation.
  std::optional<Counterexample> test(std::span<const Deviation> kept) {
    ++runs_;
    // ddmin asks again about sets it has tried (a chunk tried as a subset comes back as a
    // complement, or at the next granularity): more than half of its questions on the residual
    // race and the interrupt's trampoline free. The same deviations give the same execution, so
    // the first answer is kept. A repeated question still counts against the budget, so that the
    // budget ends the search where it would end if every question ran.
    std::vector<Deviation> key(kept.begin(), kept.end());
    if (auto it = answers_.find(key); it != answers_.end())
      return it->second;
    std::optional<Counterexample> answer = run(kept);
    answers_.emplace(std::move(key), answer);
    return answer;
  }

  bool exhausted() const { return runs_ >= budget_; }

  // ddmin (Zeller & Hildebrandt 2002): a 1-minimal subset of `all` whose test passes, given that
  // `all`'s does (`best` holds its counterexample and ends with the smallest one seen).
  std::vector<Deviation> minimise(std::vector<Deviation> all, Counterexample &best) {
    std::size_t n = 2;
    while (all.size() >= 2 && !exhausted()) {
      const std::size_t chunk = (all.size() + n - 1) / n;
      bool reduced = false;
      // Each subset, then each complement.
      for (int pass = 0; pass < 2 && !reduced; ++pass)
        for (std::size_t start = 0; start < all.size() && !reduced && !exhausted();
             start += chunk) {
          const std::size_t stop = std::min(all.size(), start + chunk);
          std::vector<Deviation> candidate;
          if (pass == 0) {
            candidate.assign(all.begin() + static_cast<std::ptrdiff_t>(start),
                             all.begin() + static_cast<std::ptrdiff_t>(stop));
          } else {
            candidate.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(start));
            candidate.insert(candidate.end(), all.begin() + static_cast<std::ptrdiff_t>(stop),
                             all.end());
          }
          if (candidate.size() == all.size())
            continue;
          if (auto c = test(candidate)) {
            best = std::move(*c);
            all = std::move(candidate);
            n = pass == 0 ? 2 : std::max<std::size_t>(n - 1, 2);
            reduced = true;
          }
        }
      if (!reduced) {
        if (n >= all.size())
          break;
        n = std::min(all.size(), n * 2);
      }
    }
    if (all.size() == 1 && !exhausted())
      if (auto c = test({}))
        best = std::move(*c);
    return all;
  }

private:
  // One execution with the deviations `kept`: the counterexample it gives, when it shows a
  // violation of found's oracle first, with no more preemptions or events than found.
  std::optional<Counterexample> run(std::span<const Deviation> kept) {
    DeviationScheduler s(kept, nullptr);
    // Its preemptions only grow: once past found's, it fails whatever comes after. Most
    // candidates fall back to the continuation, which in a trampoline scenario idles on for
    // 100,000 events, so a candidate that has run far longer than found's whole execution
    // without a violation so far fails too (a violation it would show later is not looked for);
    // one that has shown one runs to its end, so that it is judged as an unstopped run.
    const unsigned most = found_.preemptions;
    bool tooMany = false, tooLong = false;
    sim::RunResult run = h_.runExecution(s, [&] {
      tooMany = s.preemptions() > most;
      tooLong = h_.machine().eventCount() > eventLimit_;
      return tooMany || tooLong;
    });
    sim::Machine &m = h_.machine();
    if (tooMany)
      return std::nullopt;
    if (tooLong) {
      if (checkExecution(ExecutionView{h_, m, run}, oracles_).empty())
        return std::nullopt;
      const std::uint64_t limit = h_.scenario().bounds.maxEvents;
      const sim::RunResult rest = m.run(s, limit - std::min(limit, run.events));
      run.events += rest.events;
      run.status = rest.status;
    }
    const std::vector<Violation> violations = checkExecution(ExecutionView{h_, m, run}, oracles_);
    if (violations.empty() || violations.front().oracle != found_.violation.oracle ||
        !noLonger(s.preemptions(), violations.front().event + 1, found_))
      return std::nullopt;
    Counterexample c;
    c.violation = violations.front();
    std::size_t end = s.deviations.size();
    while (end > 0 && !s.deviations[end - 1])
      --end;
    const std::vector<std::uint32_t> all = sim::choicesOf(m.schedule());
    for (std::size_t i = 0; i < end; ++i)
      c.choices.push_back(s.deviations[i] ? all[i] : kContinuationChoice);
    c.deviations = static_cast<std::uint64_t>(
        std::count_if(s.deviations.begin(), s.deviations.end(), [](const auto &d) { return d; }));
    c.continues = true;
    c.preemptions = s.preemptions();
    c.events = c.violation.event + 1;
    return c;
  }

  Harness &h_;
  const OracleList &oracles_;
  const Counterexample &found_;
  std::uint64_t budget_;
  std::uint64_t eventLimit_;
  std::uint64_t runs_ = 0;
  std::map<std::vector<Deviation>, std::optional<Counterexample>> answers_;
};

// The deviations of `cex`'s execution: those decided before its violating event ran
// (`upToViolation`) and all of them; and how many events the execution ran.
struct FoundDeviations {
  std::vector<Deviation> upToViolation, all;
  std::uint64_t length = 0;
};
FoundDeviations deviationsOf(Harness &h, const Counterexample &cex) {
  CountingReplay replay(cex.choices, cex.continues);
  DeviationScheduler recorder({}, &replay);
  h.runExecution(recorder);
  FoundDeviations out;
  out.length = h.machine().eventCount();
  for (std::size_t i = 0; i < recorder.deviations.size(); ++i) {
    if (!recorder.deviations[i])
      continue;
    out.all.push_back(*recorder.deviations[i]);
    if (recorder.eventsBefore[i] <= cex.violation.event)
      out.upToViolation.push_back(*recorder.deviations[i]);
  }
  return out;
}

// ddmin from `found`: first over the deviations up to its violation, else over all of them.
Counterexample deltaDebug(Harness &h, const Counterexample &found, const OracleList &oracles,
                          std::uint64_t budget) {
  const FoundDeviations deviations = deviationsOf(h, found);
  DeltaDebugging dd(h, oracles, found, budget, deviations.length);
  Counterexample best = found;
  for (bool upToViolation : {true, false}) {
    const std::vector<Deviation> &all = upToViolation ? deviations.upToViolation : deviations.all;
    if (auto c = dd.test(all)) {
      Counterexample shortened = std::move(*c);
      dd.minimise(all, shortened);
      // Fewest preemptions, then fewest events, then fewest decisions stored.
      if (smaller(shortened, found) ||
          (!smaller(found, shortened) && storedDecisions(shortened) < storedDecisions(found)))
        best = std::move(shortened);
      return best;
    }
  }
  return best;
}

// Naive exhaustive search at preemption bounds 0, 1, ...: the earliest violation of the oracle.
Counterexample fewestPreemptions(Harness &h, const Counterexample &found, const OracleList &oracles,
                                 std::uint64_t budget) {
  for (unsigned bound = 0; bound <= found.preemptions; ++bound) {
    ExploreOptions o;
    o.explorer = "exhaustive";
    o.reduction = false;
    o.preemptionBound = static_cast<int>(bound);
    o.maxExecutions = budget;
    o.stopAtFirst = false;
    o.hashLogs = false;
    o.oracles = oracles;
    Exploration exploration(h, o);
    std::optional<Counterexample> best;
    exploration.onViolation = [&](const Counterexample &c) {
      if (c.violation.oracle == found.violation.oracle && c.preemptions <= bound &&
          (!best || c.events < best->events))
        best = c;
      return true;
    };
    explorerByName("exhaustive").run(exploration);
    if (best)
      return smaller(*best, found) ? *best : found;
  }
  return found;
}

} // namespace

Counterexample minimise(Harness &harness, const Counterexample &found, const OracleList &oracles,
                        std::uint64_t budget) {
  const OracleList list = oracles.empty() ? oraclesFor(harness) : oracles;
  Counterexample best = found;
  if (harness.cheapExecutions()) {
    const Counterexample bounded = fewestPreemptions(harness, found, list, budget);
    if (smaller(bounded, best))
      best = bounded;
  }
  best = deltaDebug(harness, best, list, budget);
  if (best.choices != found.choices || best.continues != found.continues)
    best.logHash = replayChoices(harness, best.choices, list, best.continues).logHash;
  return best;
}

} // namespace ftsim::verify
