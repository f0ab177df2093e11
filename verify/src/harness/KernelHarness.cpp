// Engine-level scenarios on the simulated kernel: one execution (KernelHarness.h).

#include "ftsim/verify/harness/KernelHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/model/LinuxProfile.h"
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
    : KernelBackedHarness(std::move(scenario), std::move(imagePath)) {
  if (scenario_.code != CodeKind::Kernel)
    fatal("{}: not an engine-level scenario (code kind is not \"kernel\")", scenario_.name);
  // The reference: the boot-time ops, no patcher steps, round robin.
  std::vector<EngineStep> steps;
  std::swap(steps, scenario_.engine.steps);
  sim::RoundRobinScheduler rr;
  runExecution(rr);
  std::swap(steps, scenario_.engine.steps);
  takeReference("the boot-time ops, no patcher operations");
}

KernelHarness::~KernelHarness() = default;

void KernelHarness::boot() {
  const Scenario &s = scenario_;
  KernelConfig config;
  config.machine.cpus = s.cpus;
  config.machine.storeModel = s.store;
  config.machine.fetchModel = s.fetch;
  config.machine.preemption = s.preemption;
  config.machine.quantum = 64;
  config.machine.traceFlagSteps = true;
  config.protocol = s.protocol;
  config.livePatchingRule = true;
  config.opsTrampolines = s.engine.opsTrampolines;
  config.release = scenarioReleaseCode(s);
  kernel_.reset(); // its ops list and callbacks point into the slots: drop it first
  slots_.clear();
  kernel_ = std::make_unique<Kernel>(image(), config);
  Kernel &k = *kernel_;
  k.core().setPre59338f754a55Order(s.engine.pre59338f754a55);
  k.core().setPre405e1d834807(s.engine.pre405e1d834807);
  k.core().setFunctionTraceOpWait(s.engine.functionTraceOpWait);
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
    openOp_ = begin;
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
    openOp_.reset();
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
  openOp_.reset();
  siteIps_.clear();
  k.core().records().forEach([&](const model::DynFtrace &rec) { siteIps_.insert(rec.ip); });
  historyScanned_ = 0;
  callsFolded_.assign(slots_.size(), 0);
  taskHistories_.clear();
  if (auto bad = checkEngineState(k, scenario_.engine.opsTrampolines))
    engineChecks_.push_back({k.now(), "after boot: " + *bad});
  k.watchPatchSites();
  for (std::size_t i = 0; i < scenario_.engine.workloads.size(); ++i)
    k.addWorkload(scenario_.engine.workloads[i], static_cast<unsigned>(i + 1),
                  scenario_.engine.seed + i);
  if (!scenario_.engine.steps.empty())
    k.patcher([this](Kernel &kk) { runOperations(kk); });

  return runKernel(scheduler, stop);
}

void KernelHarness::annotateExecution() const {
  const Kernel &k = *kernel_;
  for (const CallbackEvent &c : k.callbacks())
    annotateEvent(c.event,
                  fmt::format("callback {} for {}", c.function, k.symbolName(c.ip, false)));
  for (const OpInterval &iv : intervals_)
    annotateEvent(iv.begin, fmt::format("engine: {} begins (ends at #{})", iv.what, iv.end));
}

std::uint64_t KernelHarness::extraState() const {
  std::uint64_t calls = 0;
  for (const OpsSlot &slot : slots_)
    calls = calls * 31 + slot.calls.size();
  return calls;
}

// What the oracles (KernelOracles.cpp) will read of the history: per task, in order, its site
// executions and its ops calls, each with where the engine's operations were when it happened (the
// trace-completeness oracle judges a call by the engine states between its site execution and its
// callback, and a site execution by the calls up to the task's next one); the engine checks and
// notes so far. Event indices are left out: two schedules that order different tasks' events
// differently reach the same hash when each task's own history is the same.
std::uint64_t KernelHarness::historyHash() const {
  auto position = [&](std::uint64_t event) -> std::uint64_t {
    for (std::size_t i = 0; i < intervals_.size(); ++i) {
      if (event < intervals_[i].begin)
        return 2 * i;
      if (event < intervals_[i].end)
        return 2 * i + 1;
    }
    return 2 * intervals_.size() + (openOp_ && event >= *openOp_ ? 1 : 0);
  };
  auto mixInto = [](std::uint64_t &h, std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  // What happened since the last call: site executions (the kernel's siteExecutions(): a step at a
  // record's ip) and ops calls, in event order. Their positions never change once an event has
  // one, so each task's history is folded as it grows.
  struct Entry {
    std::uint64_t event;
    int task;
    std::uint64_t what, ip;
  };
  std::vector<Entry> fresh;
  const auto log = machine().events();
  for (; historyScanned_ < log.size(); ++historyScanned_) {
    const sim::EventRecord &e = log[historyScanned_];
    if (e.kind == sim::EventKind::Step && siteIps_.count(e.pc))
      fresh.push_back({e.index, e.task, 0, e.pc});
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    for (; callsFolded_[i] < slots_[i].calls.size(); ++callsFolded_[i]) {
      const OpsCall &c = slots_[i].calls[callsFolded_[i]];
      fresh.push_back({c.event, c.task, i + 1, c.ip});
    }
  std::sort(fresh.begin(), fresh.end(), [](const Entry &a, const Entry &b) {
    return a.event < b.event || (a.event == b.event && a.what < b.what);
  });
  for (const Entry &e : fresh) {
    std::uint64_t &history =
        taskHistories_.try_emplace(e.task, 0xcbf29ce484222325ull).first->second;
    mixInto(history, e.what);
    mixInto(history, e.ip);
    mixInto(history, position(e.event));
  }
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto &[task, history] : taskHistories_) {
    mixInto(h, static_cast<std::uint64_t>(task));
    mixInto(h, history);
  }
  for (const EngineCheck &c : engineChecks_)
    mixInto(h, std::hash<std::string>{}(c.message));
  for (const std::string &n : notes_)
    mixInto(h, std::hash<std::string>{}(n));
  mixInto(h, states_.size());
  return h;
}

std::string KernelHarness::describeSetup() const {
  return fmt::format("{} CPUs (patcher on cpu0), workloads on CPUs 1-{}, {} engine operation{}",
                     scenario_.cpus, scenario_.engine.workloads.size(),
                     scenario_.engine.steps.size(), scenario_.engine.steps.size() == 1 ? "" : "s");
}

} // namespace ftsim::verify
