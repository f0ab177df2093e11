#pragma once
// A Scenario built on a sim::Machine, ready to be executed many times: the hand-built guest code
// is mapped, tasks are added, sites are watched, and the initial state is snapshotted. Each
// execution restores that snapshot (engines and their translated code survive), starts a fresh
// patcher running the scenario's protocol over its sites, and runs under a Scheduler.
//
// The guest (one layout for both ISAs, text at the kernel's base address):
//   +0x00.. hypercall stubs (schedule, idle, user, exit)
//   trampoline A (0x2e37 past the first site's end: the slide's `e8 37 2e 00 00`) and trampoline
//   B (A + 0x1040): host hypercalls that record (cpu, task, site)
//   +0x40   worker(seed): acc = seed; `calls` times { for each function f_j: acc += 3; f_j() };
//           return acc
//   f_j     a traced function (x86: push %rbp; mov %rsp,%rbp; <site>; pop %rbp; ret; powerpc:
//           stwu; mflr; stw; <site>; lwz; mtlr; addi; blr) placed so that its site is at an
//           address = site_offset (mod 64), each in its own 256-byte block.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/verify/Scenario.h"

#include <functional>
#include <memory>
#include <vector>

namespace ftsim::verify {

struct PatchSiteInfo {
  std::uint64_t addr = 0;
  std::uint64_t function = 0;
  Transition transition = Transition::NopToCall;
  arch::Bytes oldBytes;
  arch::Bytes newBytes;
};

// One call that reached a trampoline.
struct TraceHit {
  std::uint64_t event = 0; // the event that executed the trampoline
  unsigned cpu = 0;
  int task = -1;
  std::size_t site = 0;    // index into sites(); sites().size() when the caller is no site
  unsigned trampoline = 0; // 0: A, 1: B
};

// The machine configuration exploration uses: fast mode (a CPU runs unwatched code as one Run
// event, which commutes with everything the patcher does), the scenario's models.
sim::MachineConfig machineConfigFor(const Scenario &scenario);

class ScenarioInstance {
public:
  // FatalError when the scenario cannot be built.
  explicit ScenarioInstance(Scenario scenario);
  ~ScenarioInstance();
  ScenarioInstance(const ScenarioInstance &) = delete;
  ScenarioInstance &operator=(const ScenarioInstance &) = delete;

  const Scenario &scenario() const { return scenario_; }
  const arch::Arch &arch() const { return arch_; }
  sim::Machine &machine() { return *machine_; }
  const sim::Machine &machine() const { return *machine_; }
  const std::vector<PatchSiteInfo> &sites() const { return sites_; }
  std::uint64_t trampoline(unsigned which) const { return which ? trampB_ : trampA_; }
  // The site index whose address is `addr`, or sites().size().
  std::size_t siteIndex(std::uint64_t addr) const;
  // "site0" or "site0+2"
  std::string siteName(std::uint64_t addr) const;

  // Restores the initial state and starts the patcher (the protocol over every site, one batch
  // in the scenario's order). After this, run the machine (runExecution does both).
  void begin();
  // begin(), then run under `scheduler` until completion, the scenario's event bound, or until
  // `stop` (checked after every event) returns true.
  sim::RunResult runExecution(sim::Scheduler &scheduler, const std::function<bool()> &stop = {});

  // The untraced reference: every task's result when no patcher runs (round robin).
  const std::vector<std::uint64_t> &referenceResults() const { return reference_; }
  // Trampoline hits of the current execution, in order.
  const std::vector<TraceHit> &trace() const { return trace_; }
  // The protocol object of the current execution (its trap handler is installed).
  const arch::PatchProtocol *protocol() const { return protocol_.get(); }
  // Index of the last event of the patcher in the current execution (none: -1 cast), and
  // whether it finished.
  bool patcherFinished() const;

private:
  void build();
  void recordHit(arch::GuestContext &ctx, unsigned which);

  Scenario scenario_;
  const arch::Arch &arch_;
  std::unique_ptr<sim::Machine> machine_;
  sim::Snapshot initial_;
  std::vector<PatchSiteInfo> sites_;
  std::uint64_t trampA_ = 0, trampB_ = 0;
  std::vector<std::uint64_t> reference_;
  std::vector<TraceHit> trace_;
  std::unique_ptr<arch::PatchProtocol> protocol_;
  bool patcherDone_ = false;
};

} // namespace ftsim::verify
