#pragma once
// What `ftsim check` was asked, before it is a Scenario: a scenario file or the built-in site
// scenario, the trampoline scenarios' shorthand (--tramp-free), and overrides of the scenario's
// models, code and exploration. Every field is optional; a flag that does not apply to the
// scenario's kind or explorer is a one-line error (FatalError), never silently ignored.

#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <optional>
#include <string>

namespace ftsim::verify {

struct CheckRequest {
  std::string scenarioFile; // "" : built from the flags
  // The trampoline scenarios' shorthand: any of these makes a kind "trampoline" scenario.
  std::optional<std::string>
      trampFree; // immediate | sched-sync | rcu-tasks | rude | rcu-tasks-classic
  std::optional<std::string> trampScenario; // tramp-free-preempted | ops-uaf-no-sync
  bool noSyncUnchanged = false;
  bool preempt = false; // trampoline scenarios: timer preemption
  // Overrides.
  std::optional<std::string> arch, protocol, store, fetch, transition, image;
  // --protocol-file FILE: a protocol as data (ProtocolFile.h) instead of --protocol.
  std::optional<std::string> protocolFile;
  // --linux VERSION: one kernel profile's choices throughout (model/LinuxProfile.h).
  std::optional<std::string> linuxProfile;
  // Linux's own code (kind linux): an installed tree (6.1, 6.12) or a tree's directory.
  std::optional<std::string> kernel, kernelTree;
  std::optional<std::string> mutant; // a source mutation operator applied to that tree
  bool foreignInt3 = false;          // a kprobe-like int3 the batch does not own
  std::optional<unsigned> batches;   // batches back to back (each undoes the one before)
  std::optional<unsigned> cpus, sites, siteOffset;
  bool preemption = false; // site scenarios: two tasks per CPU and timer preemption
  // Exploration.
  std::optional<std::string> explorer;
  std::optional<int> bound;
  std::optional<std::uint64_t> runs, seed, maxExecutions;
  std::optional<unsigned> depth;
  bool naive = false;
  bool noStateHashing = false;             // exhaustive on the engine-level kinds: no state hashing
  std::optional<std::string> continuation; // exhaustive on the engine-level kinds: the base
  // Exhaustive: worker threads (default: the machine's cores) and the split of the tree
  // (Subtrees.h; default kDefaultSubtrees for site scenarios, 0 for kernel and trampoline ones;
  // 0: one tree on one thread).
  std::optional<unsigned> jobs, subtrees;
};

// The default split of a site scenario's exhaustive tree: enough subtrees to keep a few dozen
// workers busy when the subtrees' sizes differ, few enough that the sleep-set-only levels above
// the frontier stay shallow.
inline constexpr unsigned kDefaultSubtrees = 64;

// The scenario the request names, validated; FatalError naming the flag or file otherwise.
Scenario buildCheckScenario(const CheckRequest &request);
// Its exploration: the scenario's [explore] and [bounds], then the request's flags.
ExploreOptions buildExploreOptions(const Scenario &scenario, const CheckRequest &request);
// The workers of its split search, started before the caller builds its own harness
// (startWorkers, Subtrees.h); none for a scenario on a Linux tree, whose first harness may build
// the tree's objects for minutes, or fail to, so that its workers start once it is built, as they
// would without this call.
std::shared_ptr<Crew> startWorkers(const Scenario &scenario, const ExploreOptions &options);

} // namespace ftsim::verify
