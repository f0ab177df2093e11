// What the harnesses on the simulated kernel share (KernelBackedHarness.h).

#include "ftsim/verify/harness/KernelBackedHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/kernel/Kernel.h"

namespace ftsim::verify {

KernelBackedHarness::KernelBackedHarness(Scenario scenario, std::string imagePath)
    : scenario_(std::move(scenario)), imagePath_(std::move(imagePath)) {}

KernelBackedHarness::~KernelBackedHarness() = default;

const arch::Image &KernelBackedHarness::image() {
  if (!image_)
    image_ = arch::loadImage(imagePath_);
  return *image_;
}

const arch::Arch &KernelBackedHarness::arch() const { return arch::archByName(scenario_.arch); }
sim::Machine &KernelBackedHarness::machine() { return kernel_->machine(); }
const sim::Machine &KernelBackedHarness::machine() const { return kernel_->machine(); }

sim::RunResult KernelBackedHarness::runKernel(sim::Scheduler &scheduler,
                                              const std::function<bool()> &stop) {
  annotations_.clear();
  annotated_ = false;
  patcherScanned_ = 0;
  patcherEvents_ = 0;
  const std::uint64_t limit = scenario_.bounds.maxEvents;
  if (!stop)
    return kernel_->run(scheduler, limit);
  sim::RunResult total;
  total.status = sim::RunResult::Status::EventLimit;
  while (total.events < limit) {
    const sim::RunResult r = kernel_->run(scheduler, 1);
    total.events += r.events;
    total.status = r.status;
    if (r.status != sim::RunResult::Status::EventLimit || stop())
      break;
  }
  return total;
}

void KernelBackedHarness::takeReference(const std::string &what) {
  const sim::Machine &m = machine();
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    if (info.state != sim::TaskState::Exited)
      fatal("{}: task {} ({}) did not finish the reference run ({}) within max_events = {} ({})",
            scenario_.name, t, info.name, what, scenario_.bounds.maxEvents,
            sim::taskStateName(info.state));
    reference_.push_back(info.result);
  }
  if (!m.findings().empty())
    fatal("{}: the reference run ({}) fails: {}", scenario_.name, what,
          sim::formatFinding(m.findings().front()));
}

void KernelBackedHarness::annotateEvent(std::uint64_t index, const std::string &text) const {
  std::string &note = annotations_[index];
  note += (note.empty() ? "" : "; ") + text;
}

std::vector<std::string> KernelBackedHarness::livePatchingFindings() const {
  return kernel_->livePatchingFindings();
}

std::string KernelBackedHarness::symbol(std::uint64_t addr) const {
  return kernel_->symbolName(addr, true);
}

std::string KernelBackedHarness::siteOf(std::uint64_t addr) const {
  for (const kernel::PatchSite &site : kernel_->patchSites())
    if (addr >= site.addr && addr < site.addr + site.size)
      return kernel_->symbolName(addr, true);
  return {};
}

std::string KernelBackedHarness::annotate(const sim::EventRecord &e) const {
  if (!annotated_) {
    annotated_ = true;
    annotateExecution();
  }
  auto it = annotations_.find(e.index);
  return it == annotations_.end() ? std::string() : it->second;
}

std::uint64_t KernelBackedHarness::finalStateHash() const {
  const sim::Machine &m = machine();
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    mix(static_cast<std::uint64_t>(info.state));
    mix(info.result);
  }
  for (const sim::Finding &f : m.findings()) {
    mix(static_cast<std::uint64_t>(f.kind));
    mix(f.pc);
  }
  mix(extraState());
  return h;
}

std::optional<std::uint64_t> KernelBackedHarness::midStateHash() const {
  const sim::Machine &m = machine();
  std::uint64_t h = m.stateHash();
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  const auto log = m.events();
  for (; patcherScanned_ < log.size(); ++patcherScanned_)
    patcherEvents_ += log[patcherScanned_].kind == sim::EventKind::Store ||
                      log[patcherScanned_].kind == sim::EventKind::Publish;
  mix(patcherEvents_);
  mix(m.eventCount()); // the guest's clock (Kernel::now)
  mix(kernel_->hostStateHash());
  for (const std::string &f : kernel_->livePatchingFindings())
    mix(std::hash<std::string>{}(f));
  mix(historyHash());
  return h;
}

} // namespace ftsim::verify
