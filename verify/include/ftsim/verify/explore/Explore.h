#pragma once
// Explorers: run a scenario's harness under many schedules and check every execution with the
// oracles. One registry; each explorer is one file:
//
//  exhaustive  (ExhaustiveExplorer.cpp) stateless depth-first search; every execution replays a
//              prefix of decisions from the initial state. With reduction, source-DPOR (Abdulla,
//              Aronis, Jonsson, Sagonas, POPL 2014, Algorithm 1) with sleep sets; without
//              (`naive`), every enabled event at every decision. Stale fetch byte choices are
//              decisions too and are always explored in full. An optional preemption bound (CHESS,
//              Musuvathi & Qadeer, PLDI 2007) counts switches away from a process that could have
//              continued; with it the reduction is no longer complete for every bounded schedule
//              (Coons, Musuvathi, McKinley, OOPSLA 2013) — the naive mode with a bound is. On the
//              engine-level kinds (Harness::reductionSound false) it runs VisibleSearch.h instead:
//              scheduling points at visible events, `bound` counting deviations from the fair
//              continuation, iterative deepening, state hashing (Harness::midStateHash).
//  rr-bounded  (RoundRobinBounded.cpp) every schedule that deviates from round robin over the CPUs
//              and the patcher at most `bound` times: by a timer preemption when the machine
//              offers them (the CHESS preemption-bounded space around round robin), else by
//              running another enabled event (delay bounding, Emmi, Qadeer, Rakamarić, POPL 2011).
//              Stale fetch bytes take the newest value.
//  deviation-bounded (DeviationBounded.cpp) every schedule that deviates at most `bound` times
//              from the continuation (the process that ran last while it can, else the first
//              enabled event; stale bytes the newest value): delay bounding (Emmi, Qadeer,
//              Rakamaric, POPL 2011) around the non-preemptive schedule, every kind of decision a
//              deviation (a preemption, another choice where the last process blocked, an older
//              stale byte). Depth-first over sets of deviations, earliest first: a bug one early
//              switch away is found in a few executions, however long the execution.
//  pct         (RandomExplorers.cpp) PCT (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS
//              2010): random distinct priorities per process, d-1 priority change points among
//              the k events of an execution; stale bytes chosen uniformly.
//  random      (RandomExplorers.cpp) uniform at every decision.
// pct and random are seeded (mt19937_64): same seed, same executions.
//
// Processes and dependencies (exhaustive). The schedulable events are grouped into processes,
// each with at most one next event: the patcher (Store/Publish), and per CPU its execution
// (Step/FetchLine/Run), its IPI and its timer preemption. Two events are dependent when they are
// of one process or when reordering them can change what anyone observes:
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
//
// Adding an explorer: an Explorer subclass in its own file and one line in Exploration.cpp's table.

#include "ftsim/sim/Scheduler.h"
#include "ftsim/verify/check/Verdict.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/oracle/Oracle.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace ftsim::verify {

struct ExploreStats {
  std::uint64_t executions = 0;     // executions run (including sleep-set-blocked ones)
  std::uint64_t sleepBlocked = 0;   // executions stopped because every enabled process slept
  std::uint64_t pruned = 0;         // enabled alternatives at event decisions never explored
  std::uint64_t boundCuts = 0;      // alternatives not explored because of the preemption bound
  std::uint64_t eventLimitHits = 0; // executions cut by the scenario's max_events
  std::uint64_t distinctStates = 0; // distinct final states (Harness::finalStateHash)
  // The engine-level search (VisibleSearch.h): states hashed, and executions stopped at a state
  // expanded before with at least as many deviations left.
  std::uint64_t hashedStates = 0;
  std::uint64_t revisits = 0;
  std::uint64_t decisions = 0; // decisions answered, over all executions
  std::uint64_t events = 0;    // events executed, over all executions
  std::uint64_t maxEvents = 0; // the longest execution
  unsigned maxPreemptions = 0; // the most preemptions in one execution
  bool complete = false; // exhaustive: every schedule in the bounds was covered (no budget hit)
  double seconds = 0;    // wall clock; printed only in human summaries
  // A split tree (Subtrees.h): its subtrees, the frontier depth, and how many subtrees came from
  // a resumed checkpoint instead of being searched again.
  std::uint64_t subtrees = 0;
  std::uint64_t frontierDepth = 0;
  std::uint64_t subtreesResumed = 0;
  // Progress only (never in results): the estimated executions of the whole search (0: none),
  // and the estimate from the finished subtrees alone (estimateExecutions in Subtrees.h).
  std::uint64_t estimatedExecutions = 0;
  std::uint64_t estimatedFromFinished = 0;
  double etaSeconds = -1; // from the estimate and this run's rate (-1: unknown)
  bool operator==(const ExploreStats &) const = default;
};

struct SubtreeHooks;
struct SubtreeResult;
class Harness;
class Crew; // verify/src/explore/Crew.h

// In Counterexample::choices: this decision is answered by the continuation (the process that ran
// last while it can, else the first enabled event; a stale byte the newest value).
constexpr std::uint32_t kContinuationChoice = 0xffffffffu;

struct Counterexample {
  Violation violation;
  // The decision sequence: each the option chosen, or kContinuationChoice (minimised
  // counterexamples answer every decision but their deviations so, and replay files store a run
  // of them as one entry).
  std::vector<std::uint32_t> choices;
  // Whether the execution continues past `choices` by the continuation (the process that ran last
  // while it can, else the first enabled event; stale bytes the newest value) rather than ending
  // exactly with them. Minimised counterexamples do: their decisions stop at the last one that
  // differs from the continuation.
  bool continues = false;
  // Of `choices`, those that differ from the continuation (set by minimise(); 0 otherwise).
  std::uint64_t deviations = 0;
  unsigned preemptions = 0;
  std::uint64_t events = 0;  // events up to and including the violation's
  std::uint64_t logHash = 0; // FNV-1a of the execution's full logText() (0: not hashed)
  bool operator==(const Counterexample &) const = default;
};

// The decisions of `c` a replay file stores one by one: those not answered by the continuation.
std::size_t storedDecisions(const Counterexample &c);

// The engine-level exhaustive search's base schedule, from which its bound counts deviations
// (VisibleSearch.h).
enum class Continuation : std::uint8_t {
  RunOn,      // the process that ran last while it can (the patcher when it passes on)
  RoundRobin, // the CPUs and the patcher in turn, one event each (rr-bounded's base)
};
std::optional<Continuation> continuationByName(std::string_view name);
std::string continuationNames(); // "run-on, round-robin"

struct ExploreOptions {
  std::string explorer = "exhaustive";  // a registered explorer
  bool reduction = true;                // exhaustive: source-DPOR + sleep sets; false: naive
  int preemptionBound = -1;             // exhaustive: CHESS bound (-1 none); rr-bounded: deviations
  std::uint64_t maxExecutions = 200000; // exhaustive/rr-bounded budget; pct/random: the runs
  std::uint64_t seed = 1;
  unsigned pctDepth = 3;
  // exhaustive on the engine-level kinds (VisibleSearch.h): prune subtrees whose root state was
  // expanded before; false searches every schedule in the bounds (to measure the hashing).
  bool stateHashing = true;
  // exhaustive on the engine-level kinds: the base schedule deviations are counted from.
  Continuation continuation = Continuation::RunOn;
  bool stopAtFirst = true; // stop at the first violating execution
  // > 0: stop (incomplete) once this much wall time has passed without a violation.
  double wallSeconds = 0;
  // Give each counterexample its logHash, which formats the execution's whole event log. The
  // searches inside minimise() do without: only the counterexample they return is hashed.
  bool hashLogs = true;
  OracleList oracles; // empty: oraclesFor(harness)
  // The counterexample's trail lists every event up to the violation (--full-timeline), not the
  // relevance slice (Slice.h).
  bool fullTrail = false;
  // Called every `progressEvery` of wall time with the running stats (stderr progress).
  std::function<void(const ExploreStats &)> progress;
  std::chrono::milliseconds progressEvery{1000};
  // Exhaustive: split the tree at the first depth with at least `subtrees` subtrees (Subtrees.h;
  // 0: search it as one tree) and search them on `jobs` threads, each but the first with a harness
  // of its own from `newHarness`. The results do not depend on `jobs`.
  unsigned subtrees = 0;
  unsigned jobs = 1;
  // Executions after which a piece of a subtree splits what is left of it, doubled with each
  // split (Subtrees.h); part of the tree's identity, like `subtrees`.
  std::uint64_t pieceExecutions = 1024;
  std::function<std::unique_ptr<Harness>()> newHarness;
  const SubtreeHooks *subtreeHooks = nullptr; // checkpoints, resumed and partial runs
  // The workers of the split search, started early by startWorkers (Subtrees.h); the search
  // starts its own when this is empty or another search used it.
  std::shared_ptr<Crew> crew;
};

struct ExploreResult {
  ExploreStats stats;
  std::optional<Counterexample> counterexample; // the first violation found
  std::uint64_t violatingExecutions = 0;
  bool exhaustive = false; // the explorer enumerates a space (exhaustive, rr-bounded)
  Coverage coverage() const;
};

// The accounting every explorer reports its executions through: oracles, statistics, distinct
// states, the first counterexample, progress.
class Exploration {
public:
  Exploration(Harness &harness, const ExploreOptions &options);
  Harness &harness() { return harness_; }
  const ExploreOptions &options() const { return options_; }
  ExploreStats &stats() { return result_.stats; }
  // Accounts for the execution the harness just ran under `scheduler`; `cut`: the explorer stopped
  // it early (a sleep-set-blocked prefix). Returns false when exploration must stop.
  bool finish(sim::Scheduler &scheduler, unsigned preemptions, bool cut, sim::RunResult run);
  // Every violating execution goes here first; returns false to stop exploring.
  std::function<bool(const Counterexample &)> onViolation;
  ExploreResult result(bool exhaustive);
  // Adds a searched subtree's executions, states and counterexample (Subtrees.h).
  void absorb(const SubtreeResult &subtree);
  // The distinct final states so far.
  const std::unordered_set<std::uint64_t> &states() const { return states_; }
  std::uint64_t violatingExecutions() const { return result_.violatingExecutions; }
  const std::optional<Counterexample> &counterexample() const { return result_.counterexample; }
  // The wall-time limit (options().wallSeconds) has passed; false when there is none.
  bool pastWallLimit() const;

private:
  double elapsed() const;
  void progress();

  Harness &harness_;
  const ExploreOptions &options_;
  OracleList oracles_;
  ExploreResult result_;
  std::unordered_set<std::uint64_t> states_;
  std::chrono::steady_clock::time_point start_, lastProgress_;
};

class Explorer {
public:
  virtual ~Explorer() = default;
  virtual std::string_view name() const = 0;
  // Whether it enumerates a bounded space (VERIFIED possible) rather than sampling it.
  virtual bool exhaustive() const = 0;
  virtual void run(Exploration &exploration) const = 0;
  // For people: the bounds of a search with `options` on `harness` ("at most 1 preemptions",
  // "timer preemptions <= 1 around round robin", "seed 1, depth 3").
  virtual std::string bounds(const Harness &harness, const ExploreOptions &options) const = 0;
  // How it searched, when that matters to the verdict (", source-DPOR + sleep sets").
  virtual std::string method(const Harness &, const ExploreOptions &) const { return {}; }
};

// nullptr when unknown.
const Explorer *findExplorer(std::string_view name);
// FatalError naming the known explorers.
const Explorer &explorerByName(std::string_view name);
std::string explorerNames(); // "exhaustive, rr-bounded, deviation-bounded, pct, random"

ExploreResult explore(Harness &harness, const ExploreOptions &options);

// Minimisation: fewest preemptions, then fewest events, then fewest decisions; never more
// preemptions than `found` (fewer preemptions may need a later violation: more events). A schedule
// is seen as its deviations: the decisions whose answer differs from the continuation
// (Counterexample::continues). Delta debugging (Zeller and Hildebrandt, TSE 2002: ddmin) over the
// deviations made up to the violating event (all of them if those alone do not show it) finds a
// 1-minimal set that still shows a violation of the same oracle as the first one; every later
// decision is the continuation's. Then, for harnesses with cheap executions, naive
// preemption-bounded exhaustive search at bounds 0, 1, ... up to the counterexample's own
// preemption count keeps the violation observed earliest (at most `budget` executions per bound),
// and ddmin shortens what it found. The result's decisions end at its last deviation (`continues`).
// At most `budget` executions in ddmin. Candidates are judged without formatting their logs; the
// result is replayed once at the end for its logHash. A candidate is stopped, and fails, once it
// has more preemptions than `found`, or once it has run 4 times `found`'s whole execution plus
// 1,000 events with no violation so far (a violation it would show only later is not looked for:
// on trampoline scenarios, whose continuation idles on for 100,000 events, this makes ddmin about
// 4 times faster).
Counterexample minimise(Harness &harness, const Counterexample &found,
                        const OracleList &oracles = {}, std::uint64_t budget = 20000);

// Runs `choices` on the harness (with `continues`, the continuation answers after them; without,
// too few or out-of-range choices are a FatalError) and returns the violations of that execution.
struct ReplayedExecution {
  std::vector<Violation> violations;
  std::uint64_t logHash = 0;
  unsigned preemptions = 0;
  std::uint64_t events = 0;
};
ReplayedExecution replayChoices(Harness &harness, const std::vector<std::uint32_t> &choices,
                                const OracleList &oracles = {}, bool continues = false);

std::uint64_t fnv1a(std::string_view text);

} // namespace ftsim::verify
