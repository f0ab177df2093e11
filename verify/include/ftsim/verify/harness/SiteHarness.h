#pragma once
// The harness of site-level scenarios (code kind "snippet"): a Scenario built on a sim::Machine,
// ready to be executed many times. The hand-built guest code is mapped, tasks are added, sites are
// watched, and the initial state is snapshotted. Each execution restores that snapshot (engines
// and their translated code survive), starts a fresh patcher running the scenario's protocol over
// its sites, and runs under a Scheduler. Its own oracle is trace completeness over the two
// trampolines' hits (SiteOracles.cpp).
//
// The guest (one layout for both ISAs, text at the kernel's base address):
//   +0x00.. hypercall stubs (schedule, idle, user, exit, user_enter, kernel_entry)
//   trampoline A (0x2e37 past the first site's end: the slide's `e8 37 2e 00 00`) and trampoline
//   B (A + 0x1040): host hypercalls that record (cpu, task, site)
//   +0x40   worker(seed): acc = seed; `calls` times { for each function f_j: acc += 3; f_j() };
//           return acc
//   f_j     a traced function (x86: push %rbp; mov %rsp,%rbp; <site>; pop %rbp; ret; powerpc:
//           stwu; mflr; stw; <site>; lwz; mtlr; addi; blr) placed so that its site is at an
//           address = site_offset (mod 64), each in its own 256-byte block.
//   code.module_toc: each site is followed by the TOC reload (ppc32 `lwz r2,12(r1)`), the
//   trampolines also save the caller's r2 in that slot and leave the kernel's TOC in r2, the worker
//   adds r2 to acc after every call, and a disabled site is a nop or a branch over the reload.

#include "ftsim/arch/LivePatchingRule.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SnippetEmitter.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/verify/harness/Harness.h"

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

class SiteHarness final : public Harness {
public:
  // FatalError when the scenario cannot be built or its untraced reference run does not finish.
  explicit SiteHarness(Scenario scenario);
  ~SiteHarness() override;
  SiteHarness(const SiteHarness &) = delete;
  SiteHarness &operator=(const SiteHarness &) = delete;

  // --- Harness
  const Scenario &scenario() const override { return scenario_; }
  const arch::Arch &arch() const override { return arch_; }
  sim::RunResult runExecution(sim::Scheduler &scheduler,
                              const std::function<bool()> &stop = {}) override;
  sim::Machine &machine() override { return *machine_; }
  const sim::Machine &machine() const override { return *machine_; }
  // The untraced reference: every task's result when no patcher runs (round robin).
  const std::vector<std::uint64_t> &referenceResults() const override { return reference_; }
  // "site0", "site0+2", "trampoline A", or hex.
  std::string symbol(std::uint64_t addr) const override;
  std::string siteOf(std::uint64_t addr) const override;
  std::string annotate(const sim::EventRecord &) const override { return {}; }
  std::uint64_t finalStateHash() const override;
  OracleList kindOracles() const override;
  bool reductionSound() const override { return true; }
  bool cheapExecutions() const override { return true; }
  std::string describeSetup() const override;
  std::vector<std::string> livePatchingFindings() const override;

  const std::vector<PatchSiteInfo> &sites() const { return sites_; }
  std::uint64_t trampoline(unsigned which) const { return which ? trampB_ : trampA_; }
  // The site index whose address is `addr`, or sites().size().
  std::size_t siteIndex(std::uint64_t addr) const;
  // Trampoline hits of the current execution, in order.
  const std::vector<TraceHit> &trace() const { return trace_; }
  // The bytes site `site` holds now in canonical text (what the patcher wrote last).
  arch::Bytes siteBytes(std::size_t site) const;
  // The protocol object of the current execution (its trap handler is installed).
  const arch::PatchProtocol *protocol() const { return protocol_.get(); }

private:
  void build();
  void runReference();
  // Restores the initial state and starts the patcher (the protocol over every site, one batch
  // in the scenario's order).
  void begin();
  void recordHit(arch::GuestContext &ctx, unsigned which);
  void moduleStub(arch::GuestContext &ctx, const arch::ModuleTocSite &toc);

  Scenario scenario_;
  const arch::Arch &arch_;
  std::unique_ptr<sim::Machine> machine_;
  sim::Snapshot initial_;
  std::vector<PatchSiteInfo> sites_;
  std::uint64_t trampA_ = 0, trampB_ = 0;
  std::vector<std::uint64_t> reference_;
  std::vector<TraceHit> trace_;
  std::unique_ptr<arch::PatchProtocol> protocol_;
  std::unique_ptr<arch::RuleCheckedPort> rulePort_; // the ISA's live-patching rule, if any
};

} // namespace ftsim::verify
