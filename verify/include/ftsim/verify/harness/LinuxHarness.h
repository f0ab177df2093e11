#pragma once
// The harness of kind "linux": a Linux tree's own x86 patching code as guest code (linux/
// README.md). The tree's objects, built with its Kbuild and linked with ftsim's shims and traced
// workload, are loaded on the machine; CPUs other than the patcher's call the traced functions in
// a loop. The patcher is the tree's text_poke_queue() per site then text_poke_finish(), as
// ftrace_replace_code() calls them, running on its own engine (linux::PokeCpu): its text writes
// (__text_poke) are the machine's stores under the store model, its text_poke_sync() IPIs are the
// machine's IPIs, each of its accesses to the tree's shared data (bp_desc, tp_vec) is one event,
// and a cpu_relax() spin on that data waits until another CPU changes it. An int3 another CPU
// fetches enters the tree's poke_int3_handler() as guest code on that CPU, interrupts off, and
// its return value decides between iret and an unhandled int3.

#include "ftsim/linux/Int3Entry.h"
#include "ftsim/linux/LinuxGuest.h"
#include "ftsim/linux/PokeCpu.h"
#include "ftsim/verify/harness/Harness.h"

#include <memory>
#include <string>
#include <vector>

namespace ftsim::verify {

struct LinuxSite {
  std::uint64_t addr = 0;
  Transition transition = Transition::NopToCall;
  arch::Bytes oldBytes, newBytes;
};

// What the Linux harness itself saw go wrong in an execution (the "linux" oracle reports it).
struct LinuxFinding {
  std::uint64_t event = 0;
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t pc = 0;
  std::string message;
};

class LinuxHarness final : public Harness {
public:
  // FatalError when the tree cannot be built or the reference run does not finish.
  explicit LinuxHarness(Scenario scenario);
  ~LinuxHarness() override;
  LinuxHarness(const LinuxHarness &) = delete;
  LinuxHarness &operator=(const LinuxHarness &) = delete;

  const Scenario &scenario() const override { return scenario_; }
  const arch::Arch &arch() const override { return arch_; }
  sim::RunResult runExecution(sim::Scheduler &scheduler,
                              const std::function<bool()> &stop = {}) override;
  sim::Machine &machine() override { return *machine_; }
  const sim::Machine &machine() const override { return *machine_; }
  const std::vector<std::uint64_t> &referenceResults() const override { return reference_; }
  // "site0", "poke_int3_handler+0x1c (arch/x86/kernel/alternative.c:2390)", or hex.
  std::string symbol(std::uint64_t addr) const override;
  std::string siteOf(std::uint64_t addr) const override;
  std::string annotate(const sim::EventRecord &event) const override;
  std::uint64_t finalStateHash() const override;
  OracleList kindOracles() const override;
  // Every access the patcher and the handlers share is an event footprint: the text (stores,
  // watched sites), the tree's data (watched on every CPU, one event per patcher access).
  bool reductionSound() const override { return true; }
  bool cheapExecutions() const override { return true; }
  std::vector<std::string> livePatchingFindings() const override { return {}; }
  std::string describeSetup() const override;

  const linuxk::LinuxGuest &guest() const { return guest_; }
  const std::vector<LinuxSite> &sites() const { return sites_; }
  const std::vector<LinuxFinding> &findings() const { return findings_; }
  // The int3s (site addresses) poke_int3_handler resumed at the next instruction in the last
  // execution, emulating no call (a nop's emulation, or a handler that skips).
  const std::vector<std::uint64_t> &resumedWithoutCall() const { return resumedWithoutCall_; }
  // ftsim_tracer's and ftsim_tracer_b's hits in the last execution.
  std::uint64_t tracerHits() const;

private:
  void build();
  void runReference();
  arch::TrapVerdict onTrap(arch::GuestContext &ctx, std::uint64_t trapAddress);
  std::string dataName(std::uint64_t addr) const;
  std::uint8_t *
  guestWord(std::uint64_t addr) const; // 8 bytes of the guest's data, FatalError if none
  void writeGuestWord(std::uint64_t addr, std::uint64_t value);

  Scenario scenario_;
  const arch::Arch &arch_;
  linuxk::LinuxGuest guest_;
  std::unique_ptr<sim::Machine> machine_;
  std::unique_ptr<linuxk::PokeCpu> poke_;
  std::vector<LinuxSite> sites_;
  std::vector<linuxk::PokeRequest> requests_; // old -> new, in queueing order
  std::vector<linuxk::PokeRequest> undo_;     // new -> old: every second batch
  sim::Snapshot initial_;
  std::vector<std::uint64_t> reference_;
  std::vector<LinuxFinding> findings_;
  std::vector<linuxk::Int3Frame> frames_; // per CPU: the handler's pt_regs, regs == 0 outside
  std::vector<std::uint64_t> trapAt_;     // per CPU: the int3 its handler was entered for
  std::vector<std::uint64_t> resumedWithoutCall_;
  std::uint64_t handler_ = 0, iretStub_ = 0;
  std::uint64_t kprobe_ = 0; // the foreign int3's address, 0 without one
};

} // namespace ftsim::verify
