// Engine-level scenarios on the simulated kernel: one execution (KernelHarness.h).

#include "ftsim/verify/harness/KernelHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim::verify {

using namespace ftsim::kernel;
namespace {

std::vector<std::string> splitGlobs(const std::string &filter) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : filter + ",") {
    if (c == ',') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

KernelHarness::EngineState captureState(Kernel &k,
                                        const std::vector<KernelHarness::OpsSlot> &slots) {
  KernelHarness::EngineState st(slots.size());
  const auto &list = k.core().opsList();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const model::FtraceOps &ops = *slots[i].ops;
    st[i].live = std::find(list.begin(), list.end(), &ops) != list.end();
    if (!st[i].live)
      continue;
    k.core().records().forEach([&](const model::DynFtrace &rec) {
      if (!rec.has(model::RecordFlag::Disabled) && ops.funcHash.containsIp(rec.ip))
        st[i].ips.insert(rec.ip);
    });
  }
  return st;
}

std::uint32_t opsFlags(const EngineOpsSpec &spec) {
  std::uint32_t flags = 0;
  if (spec.dynamic)
    flags |= model::OpsFlag::Dynamic;
  if (spec.saveRegs)
    flags |= model::OpsFlag::SaveRegs;
  if (spec.recursion)
    flags |= model::OpsFlag::Recursion;
  if (!spec.livepatch.empty())
    flags |= model::OpsFlag::SaveRegs | model::OpsFlag::IpModify;
  return flags;
}

void applyStep(Kernel &k, const EngineStep &step, model::FtraceOps *ops) {
  switch (step.op) {
  case EngineOpKind::Tracer:
    k.tracefs().write("current_tracer", step.tracer);
    break;
  case EngineOpKind::Register:
    k.core().registerFunction(*ops);
    break;
  case EngineOpKind::Unregister:
    k.core().unregisterFunction(*ops);
    break;
  case EngineOpKind::SetFilter:
    k.core().setFilter(*ops, step.pattern, true);
    break;
  case EngineOpKind::AppendFilter:
    k.core().setFilter(*ops, step.pattern, false);
    break;
  case EngineOpKind::RemoveFilter:
    k.core().setFilter(*ops, "!" + step.pattern, false);
    break;
  }
}

} // namespace

KernelHarness::KernelHarness(Scenario scenario, std::string imagePath)
    : scenario_(std::move(scenario)), imagePath_(std::move(imagePath)) {
  if (scenario_.code != CodeKind::Kernel)
    fatal("{}: not an engine-level scenario (code kind is not \"kernel\")", scenario_.name);
  // The reference: the boot-time ops, no patcher steps, round robin.
  std::vector<EngineStep> steps;
  std::swap(steps, scenario_.engine.steps);
  sim::RoundRobinScheduler rr;
  const sim::RunResult run = runExecution(rr);
  std::swap(steps, scenario_.engine.steps);
  const sim::Machine &m = machine();
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    if (info.state != sim::TaskState::Exited)
      fatal("{}: task {} ({}) did not finish the reference run (no patcher operations) within "
            "max_events = {} ({})",
            scenario_.name, t, info.name, scenario_.bounds.maxEvents,
            run.status == sim::RunResult::Status::EventLimit ? "cut"
                                                             : sim::taskStateName(info.state));
    reference_.push_back(info.result);
  }
  if (!m.findings().empty())
    fatal("{}: the reference run (no patcher operations) fails: {}", scenario_.name,
          sim::formatFinding(m.findings().front()));
}

KernelHarness::~KernelHarness() = default;

const arch::Arch &KernelHarness::arch() const { return arch::archByName(scenario_.arch); }
sim::Machine &KernelHarness::machine() { return kernel_->machine(); }
const sim::Machine &KernelHarness::machine() const { return kernel_->machine(); }

void KernelHarness::boot() {
  const Scenario &s = scenario_;
  KernelConfig config;
  config.machine.cpus = s.cpus;
  config.machine.storeModel = s.store;
  config.machine.fetchModel = s.fetch;
  config.machine.preemption = s.preemption;
  config.machine.quantum = 64;
  config.protocol = s.protocol;
  config.opsTrampolines = s.engine.opsTrampolines;
  kernel_.reset(); // its ops list and callbacks point into the slots: drop it first
  slots_.clear();
  kernel_ = std::make_unique<Kernel>(arch::loadImage(imagePath_), config);
  Kernel &k = *kernel_;
  k.core().setPre59338f754a55Order(s.engine.pre59338f754a55);
  slots_.resize(s.engine.ops.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const EngineOpsSpec &spec = s.engine.ops[i];
    const std::uint64_t redirect = spec.livepatch.empty() ? 0 : k.symbolAddress(spec.livepatch);
    OpsSlot &slot = slots_[i];
    slot.spec = &spec;
    slot.ops = std::make_unique<model::FtraceOps>(
        spec.name,
        [&k, &slot, redirect](std::uint64_t ip, std::uint64_t, model::FtraceOps &,
                              arch::GuestContext *regs) {
          const CallbackEvent &cb = k.callbacks().back();
          slot.calls.push_back({cb.event, cb.cpu, cb.task, ip});
          if (redirect && regs)
            regs->setPc(redirect);
        },
        opsFlags(spec));
    const auto globs = splitGlobs(spec.filter);
    for (std::size_t g = 0; g < globs.size(); ++g)
      k.core().setFilter(*slot.ops, globs[g], g == 0);
  }
  for (OpsSlot &slot : slots_)
    if (slot.spec->boot)
      k.core().registerFunction(*slot.ops);
}

void KernelHarness::runOperations(Kernel &k) {
  auto engineCheck = [&](const std::string &after) {
    if (auto bad = checkEngineState(k, scenario_.engine.opsTrampolines))
      engineChecks_.push_back({k.now(), after + ": " + *bad});
  };
  for (const EngineStep &step : scenario_.engine.steps) {
    const std::uint64_t begin = k.now();
    try {
      model::FtraceOps *ops = nullptr;
      if (step.op != EngineOpKind::Tracer)
        for (OpsSlot &slot : slots_)
          if (slot.spec->name == step.ops)
            ops = slot.ops.get();
      applyStep(k, step, ops);
    } catch (const model::FtraceError &e) {
      notes_.push_back(fmt::format("{}: errno {}: {}", step.describe(), e.errnoValue(), e.what()));
    }
    intervals_.push_back({begin, k.now(), step.describe()});
    states_.push_back(captureState(k, slots_));
    engineCheck("after " + step.describe());
  }
}

sim::RunResult KernelHarness::runExecution(sim::Scheduler &scheduler,
                                           const std::function<bool()> &stop) {
  boot();
  Kernel &k = *kernel_;
  states_ = {captureState(k, slots_)};
  intervals_.clear();
  engineChecks_.clear();
  notes_.clear();
  annotations_.clear();
  if (auto bad = checkEngineState(k, scenario_.engine.opsTrampolines))
    engineChecks_.push_back({k.now(), "after boot: " + *bad});
  k.watchPatchSites();
  for (std::size_t i = 0; i < scenario_.engine.workloads.size(); ++i)
    k.addWorkload(scenario_.engine.workloads[i], static_cast<unsigned>(i + 1),
                  scenario_.engine.seed + i);
  if (!scenario_.engine.steps.empty())
    k.patcher([this](Kernel &kk) { runOperations(kk); });

  const std::uint64_t limit = scenario_.bounds.maxEvents;
  sim::RunResult total;
  if (!stop) {
    total = k.run(scheduler, limit);
  } else {
    total.status = sim::RunResult::Status::EventLimit;
    while (total.events < limit) {
      const sim::RunResult r = k.run(scheduler, 1);
      total.events += r.events;
      total.status = r.status;
      if (r.status != sim::RunResult::Status::EventLimit || stop())
        break;
    }
  }
  siteIps_.clear();
  for (const SiteExecution &se : k.siteExecutions())
    siteIps_.insert(se.ip);
  for (const CallbackEvent &c : k.callbacks())
    annotations_[c.event] +=
        fmt::format("{}callback {} for {}", annotations_.count(c.event) ? "; " : "", c.function,
                    k.symbolName(c.ip, false));
  for (const OpInterval &iv : intervals_)
    annotations_[iv.begin] +=
        fmt::format("{}engine: {} begins (ends at #{})", annotations_.count(iv.begin) ? "; " : "",
                    iv.what, iv.end);
  return total;
}

std::string KernelHarness::symbol(std::uint64_t addr) const {
  return kernel_->symbolName(addr, true);
}

std::string KernelHarness::siteOf(std::uint64_t addr) const {
  for (const PatchSite &site : kernel_->patchSites())
    if (addr >= site.addr && addr < site.addr + site.size)
      return kernel_->symbolName(addr, true);
  return {};
}

std::string KernelHarness::annotate(const sim::EventRecord &e) const {
  auto it = annotations_.find(e.index);
  return it == annotations_.end() ? std::string() : it->second;
}

std::uint64_t KernelHarness::finalStateHash() const {
  const sim::Machine &m = machine();
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    mix(static_cast<std::uint64_t>(info.state));
    mix(info.result);
  }
  for (const OpsSlot &slot : slots_)
    mix(slot.calls.size());
  for (const sim::Finding &f : m.findings()) {
    mix(static_cast<std::uint64_t>(f.kind));
    mix(f.pc);
  }
  return h;
}

std::string KernelHarness::describeSetup() const {
  return fmt::format("{} CPUs (patcher on cpu0), workloads on CPUs 1-{}, {} engine operation{}",
                     scenario_.cpus, scenario_.engine.workloads.size(),
                     scenario_.engine.steps.size(), scenario_.engine.steps.size() == 1 ? "" : "s");
}

// The simulated kernel routes boot-time writes (text_poke_early: nothing else runs) and live
// updates through one patcher port, and the ISA's rule has no notion of boot; it is applied to
// site scenarios and by `ftsim mutants` (see verify/README.md, Limits).
std::vector<std::string> KernelHarness::livePatchingFindings() const { return {}; }

} // namespace ftsim::verify
