// The oracles of DESIGN.md over one execution of a scenario.

#include "ftsim/verify/Oracle.h"

#include "ftsim/verify/ScenarioInstance.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ftsim::verify {

std::string describeEvent(const ScenarioInstance &instance, const sim::Machine &machine,
                          const sim::EventRecord &e) {
  const arch::Arch &arch = instance.arch();
  std::string who = e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish ||
                            e.kind == sim::EventKind::Alloc || e.kind == sim::EventKind::Free
                        ? fmt::format("cpu{} patcher", e.cpu)
                        : (e.task >= 0 ? fmt::format("cpu{} task{}", e.cpu, e.task)
                                       : fmt::format("cpu{}", e.cpu));
  std::string out = fmt::format("#{} {} {}", e.index, who, sim::eventKindName(e.kind));
  std::span<const std::uint8_t> bytes(e.bytes, e.byteCount);
  switch (e.kind) {
  case sim::EventKind::Step:
  case sim::EventKind::Run:
    out += fmt::format(" pc={:#x}->{:#x}", e.pc, e.pcAfter);
    break;
  case sim::EventKind::FetchLine:
  case sim::EventKind::Ipi:
  case sim::EventKind::Preempt:
    out += fmt::format(" pc={:#x}", e.pc);
    break;
  case sim::EventKind::Store:
    out += fmt::format(" {} [{}]", instance.siteName(e.storeAddr), arch::hexBytes(bytes));
    break;
  case sim::EventKind::Publish:
    out += fmt::format(" {}", machine.publishName(e.detail));
    break;
  case sim::EventKind::Alloc:
  case sim::EventKind::Free:
    out += fmt::format(" {:#x}+{}", e.storeAddr, e.detail);
    break;
  }
  if (e.fetchSize)
    out += fmt::format(" fetch {} [{}] = {}", instance.siteName(e.fetchAddr), arch::hexBytes(bytes),
                       arch::describeBytes(arch, bytes, e.fetchAddr));
  if (e.dataSize)
    out += fmt::format(" data-{} {:#x}+{}", e.dataWrite ? "write" : "read", e.dataAddr, e.dataSize);
  if (e.outcome != sim::StepOutcome::None && e.outcome != sim::StepOutcome::WatchedStop) {
    out += fmt::format(" {}", sim::stepOutcomeName(e.outcome));
    if (e.outcome == sim::StepOutcome::Exit)
      out += fmt::format("({})", e.detail);
    else if (e.outcome == sim::StepOutcome::TrapHandled)
      out += fmt::format("({})", instance.siteName(e.detail));
    else if (e.outcome == sim::StepOutcome::Hypercall)
      out += e.detail == instance.trampoline(0)   ? "(trampoline A)"
             : e.detail == instance.trampoline(1) ? "(trampoline B)"
                                                  : fmt::format("({:#x})", e.detail);
  }
  return out;
}

std::vector<std::string> eventTrail(const ScenarioInstance &instance, const sim::Machine &machine,
                                    std::uint64_t upTo) {
  std::vector<std::string> out;
  for (const sim::EventRecord &e : machine.events()) {
    if (e.index > upTo)
      break;
    const bool plain =
        (e.kind == sim::EventKind::Step || e.kind == sim::EventKind::Run) && !e.fetchSize &&
        !e.dataSize && !e.sharedRead &&
        (e.outcome == sim::StepOutcome::None || e.outcome == sim::StepOutcome::WatchedStop);
    if (!plain || e.index == upTo)
      out.push_back(describeEvent(instance, machine, e));
  }
  return out;
}

std::string summarizeViolation(const Violation &v) {
  std::string cpus;
  for (unsigned c : v.cpus)
    cpus += fmt::format("{}cpu{}", cpus.empty() ? "" : ",", c);
  return fmt::format("{} {}{}{} at event #{}: {}", v.oracle, cpus.empty() ? "-" : cpus,
                     v.site.empty() ? "" : " ", v.site, v.event, v.message);
}

std::string formatViolation(const Violation &v) {
  std::string out = "VIOLATION " + summarizeViolation(v) + "\n";
  if (!v.bytes.empty())
    out += fmt::format("  bytes {} = {}\n", arch::hexBytes(v.bytes), v.decoded);
  if (!v.trail.empty()) {
    out += "  events that led to it:\n";
    for (const std::string &line : v.trail)
      out += "    " + line + "\n";
  }
  return out;
}

namespace {

Violation fromFinding(const ExecutionView &x, const sim::Finding &f) {
  Violation v;
  v.oracle = std::string(sim::findingKindName(f.kind));
  v.cpus = {f.cpu};
  v.event = f.event;
  v.task = f.task;
  v.pc = f.pc;
  v.bytes = f.bytes;
  v.decoded = f.decoded;
  v.message = f.message;
  if (f.kind == sim::FindingKind::TornFetch)
    v.site = x.instance.siteName(f.addr);
  else if (x.instance.siteName(f.pc).rfind("site", 0) == 0)
    v.site = x.instance.siteName(f.pc);
  // The patcher's CPU is involved whenever one of its stores precedes the finding.
  for (const sim::EventRecord &e : x.machine.events()) {
    if (e.index > f.event)
      break;
    if (e.kind == sim::EventKind::Store &&
        std::find(v.cpus.begin(), v.cpus.end(), e.cpu) == v.cpus.end())
      v.cpus.push_back(e.cpu);
  }
  v.trail = eventTrail(x.instance, x.machine, f.event);
  return v;
}

// The machine's own findings, one oracle per kind.
class FindingOracle final : public Oracle {
public:
  FindingOracle(std::string name, sim::FindingKind kind) : name_(std::move(name)), kind_(kind) {}
  std::string_view name() const override { return name_; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    for (const sim::Finding &f : x.machine.findings())
      if (f.kind == kind_)
        out.push_back(fromFinding(x, f));
  }

private:
  std::string name_;
  sim::FindingKind kind_;
};

std::uint64_t lastEvent(const sim::Machine &m) {
  return m.events().empty() ? 0 : m.events().back().index;
}

// Transparency: every task that exited returned what it returns in the untraced run. (A task that
// faulted is the guest-fault oracle's; a task still running was cut by the event bound.)
class TransparencyOracle final : public Oracle {
public:
  std::string_view name() const override { return "transparency"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    const auto &reference = x.instance.referenceResults();
    for (std::size_t t = 0; t < x.machine.taskCount(); ++t) {
      const sim::TaskInfo info = x.machine.task(static_cast<int>(t));
      if (info.state != sim::TaskState::Exited || info.result == reference[t])
        continue;
      Violation v;
      v.oracle = "transparency";
      v.cpus = {info.cpu};
      v.task = static_cast<int>(t);
      v.event = lastEvent(x.machine);
      for (const sim::EventRecord &e : x.machine.events())
        if (e.outcome == sim::StepOutcome::Exit && e.task == static_cast<int>(t))
          v.event = e.index;
      v.message = fmt::format("task{} ({}) returned {:#x}, the untraced run returns {:#x}", t,
                              info.name, info.result, reference[t]);
      v.trail = eventTrail(x.instance, x.machine, v.event);
      out.push_back(std::move(v));
    }
  }
};

// Trace completeness at site level: a site that calls a trampoline before and after the patch
// (call->call) is traced for the whole run, so every call of its function by every task that
// finished must reach one of the two trampolines; a trampoline that is neither the old nor the new
// target of a site must never be reached from it.
class TraceCompletenessOracle final : public Oracle {
public:
  std::string_view name() const override { return "trace-completeness"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    const auto &sites = x.instance.sites();
    const unsigned calls = x.instance.scenario().calls;
    std::map<std::pair<int, std::size_t>, unsigned> hits;
    for (const TraceHit &h : x.instance.trace()) {
      if (h.site >= sites.size())
        continue;
      const PatchSiteInfo &s = sites[h.site];
      const bool oldTarget = s.transition != Transition::NopToCall && h.trampoline == 0;
      const bool newTarget = s.transition != Transition::CallToNop &&
                             h.trampoline == (s.transition == Transition::CallToCall ? 1u : 0u);
      if (!oldTarget && !newTarget) {
        Violation v;
        v.oracle = "trace-completeness";
        v.cpus = {h.cpu};
        v.task = h.task;
        v.site = fmt::format("site{}", h.site);
        v.event = h.event;
        v.message = fmt::format("task{} reached trampoline {} from site{}, which is neither its "
                                "old nor its new target",
                                h.task, h.trampoline ? 'B' : 'A', h.site);
        v.trail = eventTrail(x.instance, x.machine, h.event);
        out.push_back(std::move(v));
      }
      ++hits[{h.task, h.site}];
    }
    for (std::size_t t = 0; t < x.machine.taskCount(); ++t) {
      const sim::TaskInfo info = x.machine.task(static_cast<int>(t));
      if (info.state != sim::TaskState::Exited)
        continue;
      for (std::size_t s = 0; s < sites.size(); ++s) {
        if (sites[s].transition != Transition::CallToCall)
          continue;
        const unsigned seen = hits[{static_cast<int>(t), s}];
        if (seen == calls)
          continue;
        Violation v;
        v.oracle = "trace-completeness";
        v.cpus = {info.cpu};
        v.task = static_cast<int>(t);
        v.site = fmt::format("site{}", s);
        v.event = lastEvent(x.machine);
        for (const sim::EventRecord &e : x.machine.events())
          if (e.outcome == sim::StepOutcome::Exit && e.task == static_cast<int>(t))
            v.event = e.index;
        v.message = fmt::format("task{} called the function of site{} {} times while it was "
                                "traced throughout; the trace has {}",
                                t, s, calls, seen);
        v.trail = eventTrail(x.instance, x.machine, v.event);
        out.push_back(std::move(v));
      }
    }
  }
};

class EngineInvariantOracle final : public Oracle {
public:
  EngineInvariantOracle(std::string name, EngineInvariant check)
      : name_(std::move(name)), check_(std::move(check)) {}
  std::string_view name() const override { return name_; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    if (auto what = check_(x.machine)) {
      Violation v;
      v.oracle = "engine-invariant";
      v.event = lastEvent(x.machine);
      v.message = fmt::format("{}: {}", name_, *what);
      v.trail = eventTrail(x.instance, x.machine, v.event);
      out.push_back(std::move(v));
    }
  }

private:
  std::string name_;
  EngineInvariant check_;
};

} // namespace

OracleList siteOracles() {
  return {
      std::make_shared<FindingOracle>("torn-fetch", sim::FindingKind::TornFetch),
      std::make_shared<FindingOracle>("guest-fault", sim::FindingKind::GuestFault),
      std::make_shared<FindingOracle>("trampoline-lifetime", sim::FindingKind::TrampolineLifetime),
      std::make_shared<FindingOracle>("deadlock", sim::FindingKind::Deadlock),
      std::make_shared<TransparencyOracle>(),
      std::make_shared<TraceCompletenessOracle>(),
  };
}

std::shared_ptr<const Oracle> makeEngineInvariantOracle(std::string name, EngineInvariant check) {
  return std::make_shared<EngineInvariantOracle>(std::move(name), std::move(check));
}

std::vector<Violation> checkExecution(const ExecutionView &execution, const OracleList &oracles) {
  std::vector<Violation> out;
  for (const auto &oracle : oracles)
    oracle->check(execution, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Violation &a, const Violation &b) { return a.event < b.event; });
  return out;
}

} // namespace ftsim::verify
