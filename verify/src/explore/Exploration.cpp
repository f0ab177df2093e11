// The explorer registry, the accounting every explorer reports through, and replay of a decision
// sequence (Explore.h).

#include "ExploreShared.h"
#include "ftsim/verify/explore/Explore.h"

#include "ftsim/arch/Error.h"

#include <algorithm>
#include <array>

namespace ftsim::verify {

const Explorer &exhaustiveExplorer();
const Explorer &roundRobinBoundedExplorer();
const Explorer &deviationBoundedExplorer();
const Explorer &pctExplorer();
const Explorer &randomExplorer();

namespace {
// The registry: one line per explorer.
std::array<const Explorer *, 5> explorers() {
  return {&exhaustiveExplorer(), &roundRobinBoundedExplorer(), &deviationBoundedExplorer(),
          &pctExplorer(), &randomExplorer()};
}
} // namespace

const Explorer *findExplorer(std::string_view name) {
  for (const Explorer *e : explorers())
    if (e->name() == name)
      return e;
  return nullptr;
}

std::string explorerNames() {
  std::string out;
  for (const Explorer *e : explorers())
    out += (out.empty() ? "" : ", ") + std::string(e->name());
  return out;
}

const Explorer &explorerByName(std::string_view name) {
  if (const Explorer *e = findExplorer(name))
    return *e;
  fatal("unknown explorer '{}' (known: {})", name, explorerNames());
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::size_t storedDecisions(const Counterexample &c) {
  return static_cast<std::size_t>(
      std::count_if(c.choices.begin(), c.choices.end(),
                    [](std::uint32_t choice) { return choice != kContinuationChoice; }));
}

Coverage ExploreResult::coverage() const {
  Coverage c;
  c.exhaustive = exhaustive;
  c.complete = stats.complete;
  c.executions = stats.executions;
  c.cut = stats.eventLimitHits;
  return c;
}

Exploration::Exploration(Harness &harness, const ExploreOptions &options)
    : harness_(harness), options_(options),
      oracles_(options.oracles.empty() ? oraclesFor(harness) : options.oracles) {
  start_ = std::chrono::steady_clock::now();
  lastProgress_ = start_;
}

double Exploration::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Exploration::pastWallLimit() const {
  return options_.wallSeconds > 0 && elapsed() >= options_.wallSeconds;
}

void Exploration::progress() {
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

bool Exploration::finish(sim::Scheduler &scheduler, unsigned preemptions, bool cut,
                         sim::RunResult run) {
  sim::Machine &m = harness_.machine();
  ExploreStats &s = result_.stats;
  ++s.executions;
  s.decisions += m.schedule().size();
  s.events += m.eventCount();
  s.maxEvents = std::max<std::uint64_t>(s.maxEvents, m.eventCount());
  s.maxPreemptions = std::max(s.maxPreemptions, preemptions);
  if (run.status == sim::RunResult::Status::EventLimit && !cut)
    ++s.eventLimitHits;
  std::vector<Violation> violations = checkExecution(ExecutionView{harness_, m, run}, oracles_);
  if (!violations.empty() && cut) {
    // A stopped (sleep-set-blocked) prefix: finish it so the schedule replays on its own.
    const std::uint64_t limit = harness_.scenario().bounds.maxEvents;
    const sim::RunResult rest = m.run(scheduler, limit - std::min(limit, run.events));
    run.events += rest.events;
    run.status = rest.status;
    cut = false;
    violations = checkExecution(ExecutionView{harness_, m, run}, oracles_);
  }
  if (!cut)
    states_.insert(harness_.finalStateHash());
  progress();
  if (violations.empty())
    return options_.wallSeconds <= 0 || elapsed() < options_.wallSeconds;
  ++result_.violatingExecutions;
  Counterexample cex;
  cex.violation = violations.front();
  cex.choices = sim::choicesOf(m.schedule());
  cex.preemptions = preemptions;
  cex.events = cex.violation.event + 1;
  if (options_.hashLogs)
    cex.logHash = fnv1a(m.logText());
  if (!result_.counterexample)
    result_.counterexample = cex;
  bool more = !options_.stopAtFirst;
  if (onViolation)
    more = onViolation(cex);
  return more;
}

ExploreResult Exploration::result(bool exhaustive) {
  result_.exhaustive = exhaustive;
  result_.stats.distinctStates = states_.size();
  result_.stats.seconds = elapsed();
  return result_;
}

ExploreResult explore(Harness &harness, const ExploreOptions &options) {
  const Explorer &explorer = explorerByName(options.explorer);
  Exploration exploration(harness, options);
  explorer.run(exploration);
  return exploration.result(explorer.exhaustive());
}

ReplayedExecution replayChoices(Harness &harness, const std::vector<std::uint32_t> &choices,
                                const OracleList &oracles, bool continues) {
  detail::CountingReplay replay(choices, continues);
  const sim::RunResult run = harness.runExecution(replay);
  sim::Machine &m = harness.machine();
  if (continues ? m.schedule().size() < choices.size() : m.schedule().size() != choices.size())
    fatal("the schedule has {} decisions but the run used {}: it does not fit this scenario",
          choices.size(), m.schedule().size());
  ReplayedExecution out;
  out.violations = checkExecution(ExecutionView{harness, m, run},
                                  oracles.empty() ? oraclesFor(harness) : oracles);
  out.logHash = fnv1a(m.logText());
  out.preemptions = replay.preemptions();
  out.events = m.eventCount();
  return out;
}

} // namespace ftsim::verify
