#pragma once
// The harness of engine-level scenarios (code kind "kernel"): the built-in guest image booted
// through the simulated kernel (Kernel.h), guest workloads on CPUs 1.., and the scenario's engine
// operation sequence (register/unregister ops, set/append/remove filters, switch tracers) run as
// the machine's patcher on CPU 0, so every store, sync and publication the engine makes is a
// scheduled event.
//
// One execution boots a fresh kernel (the engine's host-side state cannot be snapshotted with the
// machine), registers the `boot` ops, watches every patch site and patched trampoline instruction,
// and runs under a Scheduler. Its own oracles (KernelOracles.cpp):
//  - trampoline-lifetime: an ops use-after-free (Kernel::opsUseAfterFree);
//  - trace-completeness, over the scenario's own ops (their callbacks are recorded with the CPU,
//    task and event): a callback for a function its ops was not enabled for at any state the call
//    could have seen (the state before and after every operation overlapping the call) is a
//    violation; a call whose site ran while no operation was in progress, and whose next site
//    execution by the same task also precedes the next operation, must reach every ops enabled
//    for it exactly once. Tracer ops (tracefs' global_ops) are covered by the other oracles only;
//  - function-trace-op: ftrace_call called one ops' func directly with another op in the third
//    argument (the trampoline's load of function_trace_op; Kernel::opMismatches, 405e1d834807);
//  - engine-invariant, after boot and after every operation (when the engine is quiescent): every
//    record's reference count, ENABLED, REGS and (with ops trampolines) TRAMP flag equal a
//    reference model computed from the live ops' hashes; every CPU's view of each site is the
//    nop or the call the model says (ftrace_caller, ftrace_regs_caller or the one ops'
//    trampoline); ftrace_call / ftrace_regs_call target ftrace_stub with no live ops and the list
//    function with two or more.
// The reference results (transparency) come from a run with the boot-time ops and no patcher
// operations, round robin — for a livepatch scenario the reference already runs the new function.

#include "ftsim/verify/harness/KernelBackedHarness.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ftsim::model {
class FtraceOps;
}
namespace ftsim::kernel {}

namespace ftsim::kernel {
class Kernel;
}

namespace ftsim::verify {

class KernelHarness final : public KernelBackedHarness {
public:
  // `imagePath`: the linked guest image. FatalError when the scenario is not of kind kernel, the
  // image does not boot, or the reference run fails.
  KernelHarness(Scenario scenario, std::string imagePath);
  ~KernelHarness() override;

  sim::RunResult runExecution(sim::Scheduler &scheduler,
                              const std::function<bool()> &stop = {}) override;
  OracleList kindOracles() const override;
  std::string describeSetup() const override;

  // Engine operations of the last execution that failed (errno), one line each.
  const std::vector<std::string> &notes() const { return notes_; }

  // What the kernel oracles read of the last execution.
  struct OpsCall {
    std::uint64_t event;
    unsigned cpu;
    int task;
    std::uint64_t ip;
  };
  struct OpsSlot {
    const EngineOpsSpec *spec = nullptr;
    std::unique_ptr<model::FtraceOps> ops;
    std::vector<OpsCall> calls;
  };
  // Each ops between operations: registered, and the ips it is enabled for.
  struct OpsState {
    bool live = false;
    std::set<std::uint64_t> ips;
  };
  using EngineState = std::vector<OpsState>; // by slot
  struct OpInterval {
    std::uint64_t begin, end; // events [begin, end)
    std::string what;         // the operation
  };
  struct EngineCheck {
    std::uint64_t event;
    std::string message;
  };
  const std::vector<OpsSlot> &slots() const { return slots_; }
  const std::vector<EngineState> &states() const { return states_; }
  const std::vector<OpInterval> &intervals() const { return intervals_; }
  const std::vector<EngineCheck> &engineChecks() const { return engineChecks_; }

private:
  void boot();
  void runOperations(::ftsim::kernel::Kernel &k);
  std::uint64_t extraState() const override;
  // The callbacks and the engine's operations of the last execution.
  void annotateExecution() const override;
  std::uint64_t historyHash() const override;

  std::vector<OpsSlot> slots_;
  std::vector<EngineState> states_;
  std::vector<OpInterval> intervals_;
  std::vector<EngineCheck> engineChecks_;
  std::vector<std::string> notes_;
  std::optional<std::uint64_t> openOp_; // the event the running engine operation began at
  // historyHash's per-task histories, kept up with the log and the calls (reset per execution).
  std::set<std::uint64_t> siteIps_;
  mutable std::size_t historyScanned_ = 0;
  mutable std::vector<std::size_t> callsFolded_;
  mutable std::map<int, std::uint64_t> taskHistories_;
};

// The reference model of the records and the sites (engine-invariant above): the first
// disagreement, one line, or nothing.
std::optional<std::string> checkEngineState(::ftsim::kernel::Kernel &kernel, bool opsTrampolines);

// trampoline-lifetime for ops: the list function walked an ops its owner had already freed
// (Kernel::opsUseAfterFree) — in the kernel `kernel()` returns for the execution checked.
std::shared_ptr<const Oracle>
makeOpsUseAfterFreeOracle(std::function<const ::ftsim::kernel::Kernel &()> kernel);

} // namespace ftsim::verify
