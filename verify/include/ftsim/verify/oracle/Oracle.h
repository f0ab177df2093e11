#pragma once
// Oracles: what counts as a violation in one execution. Each oracle looks at a finished (or cut)
// execution of a Harness — the machine's event log and findings, the harness's reference results
// and its own records — and reports violations that name the oracle, the CPUs, the site and the
// events that led to it.
//
// Generic oracles are registered once and apply to every kind of scenario whose harness they
// accept (Oracle::appliesTo): torn-fetch, guest-fault, deadlock, trampoline-lifetime (the
// machine's findings), transparency (every task that exited returned what it returns in the
// reference run) and the ISA's live-patching rule (arch/'s rule, e.g. powerpc CMODX, over the
// stores the patcher made). A harness adds the oracles only it can judge (Harness::kindOracles):
// trace completeness over its tracer's records, the engine invariants of the simulated kernel.
//
// Adding an oracle: a class in its own file and one registerOracle() call (Oracle.cpp's built-in
// table, or at run time — a test registering a toy oracle sees it applied to every kind).

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/Machine.h"

#include <memory>
#include <string>
#include <vector>

namespace ftsim::verify {

class Harness;

struct Violation {
  std::string oracle;         // torn-fetch, guest-fault, deadlock, trampoline-lifetime,
                              // transparency, trace-completeness, engine-invariant, live-patching,
                              // function-trace-op
  std::vector<unsigned> cpus; // the CPUs involved (the observing CPU first)
  std::string site;           // "site0", "site1+3", "schedule+0x4", or "" when none is involved
  std::uint64_t event = 0;    // index of the event where it was observed
  int task = -1;
  std::uint64_t pc = 0;
  arch::Bytes bytes;              // the bytes fetched (torn fetch, guest fault)
  std::string decoded;            // their Capstone decoding
  std::string message;            // one line
  std::vector<std::string> trail; // the events that led to it, formatted (Timeline.h)
  bool operator==(const Violation &) const = default;
};

// Several lines: the headline, the bytes and their decoding, the trail (unless `withTrail` is
// false: a timeline printed with it already shows those events).
std::string formatViolation(const Violation &v, bool withTrail = true);
// One line: "torn-fetch cpu1,cpu0 site0 at event #7: ...".
std::string summarizeViolation(const Violation &v);

// What an oracle sees: the harness and the machine holding the execution.
struct ExecutionView {
  const Harness &harness;
  const sim::Machine &machine;
  sim::RunResult run;
};

class Oracle {
public:
  virtual ~Oracle() = default;
  virtual std::string_view name() const = 0;
  // Whether the oracle can judge executions of this harness (default: every harness).
  virtual bool appliesTo(const Harness &) const { return true; }
  virtual void check(const ExecutionView &execution, std::vector<Violation> &out) const = 0;
};

using OracleList = std::vector<std::shared_ptr<const Oracle>>;

// The registered generic oracles, built-in ones first, in registration order.
OracleList registeredOracles();

// Registers `oracle` for as long as the returned handle lives.
class OracleRegistration {
public:
  explicit OracleRegistration(std::shared_ptr<const Oracle> oracle);
  ~OracleRegistration();
  OracleRegistration(const OracleRegistration &) = delete;
  OracleRegistration &operator=(const OracleRegistration &) = delete;

private:
  const Oracle *oracle_;
};

// Runs every oracle; violations sorted by the event where they were observed (stable).
std::vector<Violation> checkExecution(const ExecutionView &execution, const OracleList &oracles);

// The building blocks oracles share.
// A violation of `oracle` observed at `event` (its trail is attached to the counterexample that
// is reported, Timeline.h).
Violation violationAt(std::string oracle, std::uint64_t event, std::string message);
// The index of the last event of the execution (0 for an empty log).
std::uint64_t lastEvent(const sim::Machine &machine);
// The event at which task `task` exited, else the last event.
std::uint64_t exitEvent(const sim::Machine &machine, int task);

} // namespace ftsim::verify
