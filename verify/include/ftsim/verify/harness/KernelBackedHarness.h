#pragma once
// What the two harnesses on the simulated kernel share (KernelHarness, TrampolineHarness): a fresh
// kernel::Kernel per execution, run under the scheduler with an optional stop; names from the
// kernel's symbols (kallsyms' %pS); patch sites from the kernel's watched sites; annotations the
// subclass computes after each execution; the final-state hash (tasks, findings, and what the
// subclass adds). Source-DPOR is not sound over the kernel's host-side state (Harness.h).

#include "ftsim/arch/Image.h"
#include "ftsim/verify/harness/Harness.h"

#include <map>
#include <memory>
#include <optional>

namespace ftsim::kernel {
class Kernel;
}

namespace ftsim::verify {

class KernelBackedHarness : public Harness {
public:
  ~KernelBackedHarness() override;

  const Scenario &scenario() const override { return scenario_; }
  const arch::Arch &arch() const override;
  sim::Machine &machine() override;
  const sim::Machine &machine() const override;
  const std::vector<std::uint64_t> &referenceResults() const override { return reference_; }
  std::string symbol(std::uint64_t addr) const override;
  std::string siteOf(std::uint64_t addr) const override;
  std::string annotate(const sim::EventRecord &event) const override;
  std::uint64_t finalStateHash() const override;
  // The machine's stateHash(), the patcher's progress (its events so far: the engine's host state
  // changes only in its code, which reads the machine and the engine), the kernel's
  // hostStateHash(), the live-patching rule's findings so far, and the subclass's historyHash().
  std::optional<std::uint64_t> midStateHash() const override;
  bool reductionSound() const override { return false; }
  bool cheapExecutions() const override { return false; }
  // The ISA's rule over the kernel's live writes (KernelConfig::livePatchingRule).
  std::vector<std::string> livePatchingFindings() const override;

  // The kernel of the last execution.
  const ::ftsim::kernel::Kernel &kernel() const { return *kernel_; }

protected:
  KernelBackedHarness(Scenario scenario, std::string imagePath);
  // The guest image at imagePath_, read and parsed once (the first boot): every execution boots
  // a copy of it.
  const arch::Image &image();
  // Runs the kernel set up in kernel_ until completion, max_events or `stop`.
  sim::RunResult runKernel(sim::Scheduler &scheduler, const std::function<bool()> &stop);
  // Every task's result after a reference run; FatalError naming `what` when one did not finish.
  void takeReference(const std::string &what);
  // Appends `text` to event `index`'s annotation (from annotateExecution).
  void annotateEvent(std::uint64_t index, const std::string &text) const;
  // The subclass's annotations of the last execution, made the first time one is asked for (a
  // timeline), not after every execution: a search formats only its counterexample.
  virtual void annotateExecution() const {}
  // What the subclass adds to the final-state hash.
  virtual std::uint64_t extraState() const { return 0; }
  // What the subclass's oracles and patcher will read of the history so far (midStateHash).
  virtual std::uint64_t historyHash() const = 0;

  Scenario scenario_;
  std::string imagePath_;
  std::vector<std::uint64_t> reference_;
  std::unique_ptr<::ftsim::kernel::Kernel> kernel_;
  mutable std::map<std::uint64_t, std::string> annotations_;
  mutable bool annotated_ = false;

private:
  // midStateHash's count of the patcher's events, kept up with the log (reset per execution).
  mutable std::size_t patcherScanned_ = 0;
  mutable std::uint64_t patcherEvents_ = 0;
  std::optional<arch::Image> image_;
};

} // namespace ftsim::verify
