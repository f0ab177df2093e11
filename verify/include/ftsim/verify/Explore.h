#pragma once
// Explorers: run a scenario under many schedules and check every execution with the oracles.
//
// Exhaustive (stateless, depth-first; every execution restores the initial snapshot and replays a
// prefix of decisions): with reduction, source-DPOR (Abdulla, Aronis, Jonsson, Sagonas, POPL 2014,
// Algorithm 1) with sleep sets; without (`naive`), every enabled event at every decision. Stale
// fetch byte choices are decisions too and are always explored in full. An optional preemption
// bound (CHESS, Musuvathi & Qadeer, PLDI 2007) counts switches away from a process that could have
// continued.
//
// Processes and dependencies. The schedulable events are grouped into processes, each with at
// most one next event: the patcher (Store/Publish), and per CPU its execution (Step/FetchLine/
// Run), its IPI and its timer preemption. Two events are dependent when they are of one process or
// when reordering them can change what anyone observes:
//  - a store and a fetch of the same text bytes, a store and a CPU's line fetch, a store and a
//    step that serialises the CPU (trap handled, serialising instruction), a free and a fetch of
//    the freed range;
//  - a publication and a step whose trap handler or hypercall read engine state;
//  - an IPI or a preemption and the patcher (a sync completes only after every IPI), an IPI or a
//    preemption and every event of its CPU that fetched watched text, ran a handler or changed the
//    CPU's state (a preemption is dependent with all of its CPU's events);
//  - two steps that access the same watched data, one of them writing.
// Everything else commutes — in particular unwatched guest instructions, which fast mode already
// runs as single Run events. A race whose later event's process was not enabled before the earlier
// event (the patcher blocked in a sync, an IPI not yet sent) is not reversible and is skipped.
// With a preemption bound the reduction is no longer complete for every bounded schedule (Coons,
// Musuvathi, McKinley, OOPSLA 2013); the naive mode with a bound is.
//
// PCT (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010): random distinct priorities per
// process, d-1 priority change points among the k events of an execution, the highest-priority
// enabled process runs; stale bytes are chosen uniformly. Random: uniform at every decision. Both
// seeded (mt19937_64): same seed, same executions.

#include "ftsim/verify/Oracle.h"
#include "ftsim/verify/ScenarioInstance.h"

#include <chrono>
#include <functional>
#include <optional>

namespace ftsim::verify {

enum class ExploreMode { Exhaustive, Pct, Random };
std::string_view exploreModeName(ExploreMode mode);
ExploreMode parseExploreMode(std::string_view name); // FatalError naming the known modes

struct ExploreStats {
  std::uint64_t executions = 0;     // executions run (including sleep-set-blocked ones)
  std::uint64_t sleepBlocked = 0;   // executions stopped because every enabled process slept
  std::uint64_t pruned = 0;         // enabled alternatives at event decisions never explored
  std::uint64_t boundCuts = 0;      // alternatives not explored because of the preemption bound
  std::uint64_t eventLimitHits = 0; // executions cut by the scenario's max_events
  std::uint64_t distinctStates = 0; // distinct final states (hash of sites, tasks, trace, findings)
  std::uint64_t decisions = 0;      // decisions answered, over all executions
  std::uint64_t events = 0;         // events executed, over all executions
  std::uint64_t maxEvents = 0;      // the longest execution
  unsigned maxPreemptions = 0;      // the most preemptions in one execution
  bool complete = false; // exhaustive: every schedule in the bounds was covered (no budget hit)
  double seconds = 0;    // wall clock; printed only in human summaries
};

struct Counterexample {
  Violation violation;
  std::vector<std::uint32_t> choices; // the decision sequence (sim::ReplayScheduler answers)
  unsigned preemptions = 0;
  std::uint64_t events = 0;  // events up to and including the violation's
  std::uint64_t logHash = 0; // FNV-1a of the execution's full logText()
};

struct ExploreOptions {
  ExploreMode mode = ExploreMode::Exhaustive;
  bool reduction = true; // exhaustive: source-DPOR + sleep sets; false: naive
  int preemptionBound = -1;
  std::uint64_t maxExecutions = 200000; // exhaustive budget; pct/random: the number of runs
  std::uint64_t seed = 1;
  unsigned pctDepth = 3;
  bool stopAtFirst = true; // stop at the first violating execution
  OracleList oracles;      // empty: siteOracles()
  // Called every `progressEvery` of wall time with the running stats (stderr progress).
  std::function<void(const ExploreStats &)> progress;
  std::chrono::milliseconds progressEvery{1000};
};

struct ExploreResult {
  ExploreStats stats;
  std::optional<Counterexample> counterexample; // the first violation found
  std::uint64_t violatingExecutions = 0;
};

ExploreResult explore(ScenarioInstance &instance, const ExploreOptions &options);

// Minimisation: fewest preemptions, then fewest events. Searches naive, preemption-bounded
// exhaustive exploration at bounds 0, 1, ... up to the counterexample's own preemption count for
// a violation of the same oracle, keeping the one observed earliest; at most `budget` executions
// per bound. Returns the input when nothing smaller is found.
Counterexample minimise(ScenarioInstance &instance, const Counterexample &found,
                        const OracleList &oracles = {}, std::uint64_t budget = 20000);

// Runs `choices` on the scenario (no fallback: too few or out-of-range choices are a FatalError)
// and returns the violations of that execution.
struct ReplayedExecution {
  std::vector<Violation> violations;
  std::uint64_t logHash = 0;
  unsigned preemptions = 0;
  std::uint64_t events = 0;
};
ReplayedExecution replayChoices(ScenarioInstance &instance,
                                const std::vector<std::uint32_t> &choices,
                                const OracleList &oracles = {});

std::uint64_t fnv1a(std::string_view text);

} // namespace ftsim::verify
