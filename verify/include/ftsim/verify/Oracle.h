#pragma once
// Oracles: what counts as a violation in one execution (DESIGN.md, "Oracles"). Each oracle looks at
// a finished (or cut) execution — the machine's event log and findings, the scenario's trace and
// reference results — and reports violations that name the oracle, the CPUs, the site and the
// events that led to it.
//
// Site-level oracles (siteOracles()): torn fetch, guest fault, deadlock, trampoline lifetime (from
// the machine's findings), transparency (task results equal the untraced reference run) and trace
// completeness (over the trampoline hits of the scenario's sites). Engine-level oracles plug in
// through the same interface: the Kernel integration supplies trace completeness over its ring
// buffer and engine invariants (record flags vs. a reference model of the ops hashes) with
// makeEngineInvariantOracle().

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/Machine.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

class ScenarioInstance;

struct Violation {
  std::string oracle;         // torn-fetch, guest-fault, deadlock, trampoline-lifetime,
                              // transparency, trace-completeness, engine-invariant
  std::vector<unsigned> cpus; // the CPUs involved (the observing CPU first)
  std::string site;           // "site0", "site1+3", or "" when no site is involved
  std::uint64_t event = 0;    // index of the event where it was observed
  int task = -1;
  std::uint64_t pc = 0;
  arch::Bytes bytes;              // the bytes fetched (torn fetch, guest fault)
  std::string decoded;            // their Capstone decoding
  std::string message;            // one line
  std::vector<std::string> trail; // the events that led to it: every store, publication, IPI
                                  // and site fetch up to `event`, formatted
  bool operator==(const Violation &) const = default;
};

// Several lines: the headline, the bytes and their decoding, the trail.
std::string formatViolation(const Violation &v);
// One line: "torn-fetch cpu1 site0 event 7: ...".
std::string summarizeViolation(const Violation &v);

// What an oracle sees.
struct ExecutionView {
  const ScenarioInstance &instance;
  const sim::Machine &machine;
  sim::RunResult run;
};

class Oracle {
public:
  virtual ~Oracle() = default;
  virtual std::string_view name() const = 0;
  virtual void check(const ExecutionView &execution, std::vector<Violation> &out) const = 0;
};

using OracleList = std::vector<std::shared_ptr<const Oracle>>;

// torn-fetch, guest-fault, deadlock, trampoline-lifetime, transparency, trace-completeness.
OracleList siteOracles();

// An engine invariant: returns a one-line description of the first disagreement, or nothing.
using EngineInvariant = std::function<std::optional<std::string>(const sim::Machine &)>;
std::shared_ptr<const Oracle> makeEngineInvariantOracle(std::string name, EngineInvariant check);

// Runs every oracle; violations sorted by the event where they were observed (stable).
std::vector<Violation> checkExecution(const ExecutionView &execution, const OracleList &oracles);

// The events that led to event `upTo`: stores, publications, IPIs, preemptions, notes, and every
// event with a footprint, formatted with site names and decodings.
std::vector<std::string> eventTrail(const ScenarioInstance &instance, const sim::Machine &machine,
                                    std::uint64_t upTo);
// One event for people: "#7 cpu1 task0 step 0x...: fetch site0 [0f 1f 2e 00 00] nopl (%rsi); ..."
std::string describeEvent(const ScenarioInstance &instance, const sim::Machine &machine,
                          const sim::EventRecord &event);

} // namespace ftsim::verify
