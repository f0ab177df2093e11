// Counterexample minimisation (Explore.h): a shorter decision prefix first, then for cheap
// harnesses the fewest preemptions by bounded search; never longer than what was found.

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include <algorithm>

namespace ftsim::verify {
namespace {

// A prefix of answers, then the first enabled event (stale bytes: the newest value).
class PrefixScheduler final : public detail::CountingScheduler {
public:
  explicit PrefixScheduler(std::span<const std::uint32_t> prefix) : prefix_(prefix) {}

protected:
  std::uint32_t choose(const sim::Machine &, const sim::DecisionPoint &p) override {
    if (next_ < prefix_.size())
      return std::min(prefix_[next_++], p.options - 1);
    return p.kind == sim::DecisionKind::StaleByte ? p.options - 1 : 0;
  }

private:
  std::span<const std::uint32_t> prefix_;
  std::size_t next_ = 0;
};

// (preemptions, events), lexicographically, and never more of either than `than`.
bool smaller(const Counterexample &c, const Counterexample &than) {
  if (c.preemptions > than.preemptions || c.events > than.events)
    return false;
  return c.preemptions < than.preemptions || c.events < than.events;
}

// The violation of `oracle` in the execution the harness holds, as a counterexample (its log not
// hashed: formatting every candidate's log cost most of a minimisation).
std::optional<Counterexample> violationOf(Harness &h, const OracleList &oracles,
                                          const std::string &oracle, sim::RunResult run,
                                          unsigned preemptions) {
  const sim::Machine &m = h.machine();
  for (const Violation &v : checkExecution(ExecutionView{h, m, run}, oracles))
    if (v.oracle == oracle) {
      Counterexample c;
      c.violation = v;
      c.choices = sim::choicesOf(m.schedule());
      c.preemptions = preemptions;
      c.events = v.event + 1;
      return c;
    }
  return std::nullopt;
}

// Binary search for a short prefix (a violation with prefix n does not imply one with n+1, so
// this finds a locally shortest prefix, not the global minimum).
Counterexample shortestPrefix(Harness &h, const Counterexample &found, const OracleList &oracles) {
  auto attempt = [&](std::size_t n) {
    PrefixScheduler prefix(std::span(found.choices).first(std::min(n, found.choices.size())));
    const sim::RunResult run = h.runExecution(prefix);
    return violationOf(h, oracles, found.violation.oracle, run, prefix.preemptions());
  };
  Counterexample best = found;
  std::size_t lo = 0, hi = found.choices.size();
  if (auto c = attempt(0)) {
    if (smaller(*c, best))
      best = *c;
    hi = 0;
  }
  while (lo + 1 < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (auto c = attempt(mid)) {
      if (smaller(*c, best))
        best = *c;
      hi = mid;
    } else {
      lo = mid;
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
  Counterexample best = shortestPrefix(harness, found, list);
  if (harness.cheapExecutions()) {
    const Counterexample bounded = fewestPreemptions(harness, best, list, budget);
    if (smaller(bounded, best))
      best = bounded;
  }
  if (smaller(best, found))
    best.logHash = replayChoices(harness, best.choices, list).logHash;
  return best;
}

} // namespace ftsim::verify
