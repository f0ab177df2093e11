#pragma once
// The harness: how one kind of scenario is put on the machine and executed. It is the one
// interface that explorers, oracles, minimisation, replay files, timelines and Chrome traces are
// written against, so each of those exists once for every kind of scenario.
//
// Kinds (Scenario's `[code] kind`), one file and one registry entry each:
//   snippet     SiteHarness.h       hand-built guest code whose functions have one patch site
//                                   each; the patcher runs one patch protocol over the sites
//   kernel      KernelHarness.h     a guest image booted through the simulated kernel; the
//                                   patcher runs the scenario's engine operations
//   trampoline  TrampolineHarness.h a dynamic ops' trampoline (or the ops itself) freed while
//                                   tasks may still be running on it
//
// Adding a kind: a Harness subclass in its own file and one registerHarnessKind() call in
// Harness.cpp's table (see verify/README.md).

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/verify/oracle/Oracle.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

class Harness {
public:
  virtual ~Harness() = default;

  virtual const Scenario &scenario() const = 0;
  virtual const arch::Arch &arch() const = 0;

  // One execution from the scenario's initial state under `scheduler`, until every task exited,
  // the scenario's max_events, or `stop` (checked after every event when given) returns true.
  virtual sim::RunResult runExecution(sim::Scheduler &scheduler,
                                      const std::function<bool()> &stop = {}) = 0;
  // The machine holding the last execution (its event log, findings, tasks, schedule).
  virtual sim::Machine &machine() = 0;
  virtual const sim::Machine &machine() const = 0;

  // Every task's result in the reference run (no patcher operations), by task id. Empty when the
  // kind has no reference (transparency then does not apply).
  virtual const std::vector<std::uint64_t> &referenceResults() const = 0;
  // A name for an address: "site0+2", "schedule+0x4", "ftrace_caller+0x10", or hex.
  virtual std::string symbol(std::uint64_t addr) const = 0;
  // The patch site an address lies in ("site0", "site1+3", "schedule+0x4"), or "" for none.
  virtual std::string siteOf(std::uint64_t addr) const = 0;
  // What this kind adds to an event of the last execution in timelines (a trampoline reached, an
  // ops callback, an engine operation): "" for nothing.
  virtual std::string annotate(const sim::EventRecord &event) const = 0;
  // A hash of the last execution's final state (for distinct-state counts).
  virtual std::uint64_t finalStateHash() const = 0;
  // A hash of everything the rest of the running execution depends on, taken between two of its
  // events (from a Scheduler's decide()): the machine's state, where the patcher's host code is,
  // the host state the CPUs change, and what this kind's oracles will read of the history so far.
  // Two schedules with equal hashes have the same futures and the same verdicts after them, so an
  // explorer may expand only the first (the engine-level search, VisibleSearch.h). nullopt: this
  // kind cannot say, and nothing is pruned.
  virtual std::optional<std::uint64_t> midStateHash() const { return std::nullopt; }
  // The oracles particular to this kind (its trace completeness, engine invariants, ...); the
  // generic ones come from the oracle registry (Oracle.h).
  virtual OracleList kindOracles() const = 0;
  // Whether source-DPOR's dependency relation (Explore.h) covers everything this kind's
  // executions share. The simulated kernel's engine and tracers are host code whose state is not
  // in the event footprints (frees of trampolines and ops are log notes, callbacks read host
  // state), so on those kinds the exhaustive explorer runs without reduction: sound, and larger.
  virtual bool reductionSound() const = 0;
  // Whether executions cost so little (a snapshot restore, no boot) that minimisation may search
  // thousands of them.
  virtual bool cheapExecutions() const = 0;
  // The findings of the ISA's live-patching rule (arch::LivePatchingRule, e.g. powerpc CMODX) over
  // the writes the patcher made in the last execution, one line each; empty when the ISA has no
  // rule or nothing broke it.
  virtual std::vector<std::string> livePatchingFindings() const = 0;
  // One line for people on the search space's fixed parts: "2 CPUs (patcher on cpu0), 2 tasks on
  // cpu1 x 16 calls".
  virtual std::string describeSetup() const = 0;
};

// What a harness needs from its environment: where a scenario's guest image is (the CLI resolves
// built-in flavour names against its build tree).
struct HarnessEnv {
  std::function<std::string(const Scenario &)> imagePath;
};

// The registered kinds, by Scenario::code.
using HarnessFactory =
    std::function<std::unique_ptr<Harness>(const Scenario &, const HarnessEnv &)>;
// Builds the harness for the scenario's kind; FatalError naming the scenario when it cannot be
// built (a bad image, a reference run that does not finish).
std::unique_ptr<Harness> makeHarness(const Scenario &scenario, const HarnessEnv &env = {});

// The untraced reference run of a harness's tasks: round robin, no patcher, from the machine's
// current state, then back to `initial`. Each task's result, in task order; FatalError naming
// `scenario` when a task does not finish. Not part of any exploration, so the scenario's
// max_events does not bound it.
std::vector<std::uint64_t> runUntracedReference(sim::Machine &machine, const sim::Snapshot &initial,
                                                const std::string &scenario);

// Every oracle that applies to an execution of `harness`: the registered generic ones
// (Oracle.h) followed by the harness's own.
OracleList oraclesFor(const Harness &harness);

} // namespace ftsim::verify
