// The oracle registry and the generic oracles (Oracle.h): the machine's findings and
// transparency, for every kind of scenario.

#include "ftsim/verify/oracle/Oracle.h"

#include "ftsim/arch/LivePatchingRule.h"
#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

namespace ftsim::verify {

std::string summarizeViolation(const Violation &v) {
  std::string cpus;
  for (unsigned c : v.cpus)
    cpus += fmt::format("{}cpu{}", cpus.empty() ? "" : ",", c);
  return fmt::format("{} {}{}{} at event #{}: {}", v.oracle, cpus.empty() ? "-" : cpus,
                     v.site.empty() ? "" : " ", v.site, v.event, v.message);
}

std::string formatViolation(const Violation &v, bool withTrail) {
  std::string out = "VIOLATION " + summarizeViolation(v) + "\n";
  if (!v.bytes.empty())
    out += fmt::format("  bytes {} = {}\n", arch::hexBytes(v.bytes), v.decoded);
  if (withTrail && !v.trail.empty()) {
    out += "  events that led to it:\n";
    for (const std::string &line : v.trail)
      out += "    " + line + "\n";
  }
  return out;
}

std::uint64_t lastEvent(const sim::Machine &m) {
  return m.events().empty() ? 0 : m.events().back().index;
}

std::uint64_t exitEvent(const sim::Machine &m, int task) {
  std::uint64_t at = lastEvent(m);
  for (const sim::EventRecord &e : m.events())
    if (e.outcome == sim::StepOutcome::Exit && e.task == task)
      at = e.index;
  return at;
}

Violation violationAt(std::string oracle, std::uint64_t event, std::string message) {
  Violation v;
  v.oracle = std::move(oracle);
  v.event = event;
  v.message = std::move(message);
  return v;
}

namespace {

// The machine's own findings, one oracle per kind.
class FindingOracle final : public Oracle {
public:
  explicit FindingOracle(sim::FindingKind kind) : kind_(kind) {}
  std::string_view name() const override { return sim::findingKindName(kind_); }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    for (const sim::Finding &f : x.machine.findings())
      if (f.kind == kind_)
        out.push_back(fromFinding(x, f));
  }

private:
  static Violation fromFinding(const ExecutionView &x, const sim::Finding &f) {
    Violation v = violationAt(std::string(sim::findingKindName(f.kind)), f.event, f.message);
    v.cpus = {f.cpu};
    v.task = f.task;
    v.pc = f.pc;
    v.bytes = f.bytes;
    v.decoded = f.decoded;
    v.site = x.harness.siteOf(f.kind == sim::FindingKind::TornFetch ? f.addr : f.pc);
    if (f.kind != sim::FindingKind::TornFetch && v.site.empty())
      v.message += fmt::format(" (at {})", x.harness.symbol(f.pc));
    // The patcher's CPU is involved whenever one of its stores precedes the finding.
    for (const sim::EventRecord &e : x.machine.events()) {
      if (e.index > f.event)
        break;
      if (e.kind == sim::EventKind::Store &&
          std::find(v.cpus.begin(), v.cpus.end(), e.cpu) == v.cpus.end())
        v.cpus.push_back(e.cpu);
    }
    return v;
  }
  sim::FindingKind kind_;
};

// Transparency: every task that exited returned what it returns in the reference run. (A task
// that faulted is the guest-fault oracle's; a task still running was cut by the event bound.)
class TransparencyOracle final : public Oracle {
public:
  std::string_view name() const override { return "transparency"; }
  bool appliesTo(const Harness &h) const override { return !h.referenceResults().empty(); }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    const auto &reference = x.harness.referenceResults();
    for (std::size_t t = 0; t < x.machine.taskCount() && t < reference.size(); ++t) {
      const sim::TaskInfo info = x.machine.task(static_cast<int>(t));
      if (info.state != sim::TaskState::Exited || info.result == reference[t])
        continue;
      Violation v =
          violationAt("transparency", exitEvent(x.machine, static_cast<int>(t)),
                      fmt::format("task{} ({}) returned {:#x}, the reference run returned {:#x}", t,
                                  info.name, info.result, reference[t]));
      v.cpus = {info.cpu};
      v.task = static_cast<int>(t);
      out.push_back(std::move(v));
    }
  }
};

// The ISA's live-patching rule (arch::LivePatchingRule) over the patcher's writes: a write the
// rule forbids is a violation even when no schedule within the bounds made a CPU execute it.
class LivePatchingOracle final : public Oracle {
public:
  std::string_view name() const override { return "live-patching"; }
  bool appliesTo(const Harness &h) const override { return h.arch().livePatchingRule() != nullptr; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    for (const std::string &finding : x.harness.livePatchingFindings()) {
      Violation v = violationAt("live-patching", lastEvent(x.machine), finding);
      v.cpus = {x.machine.config().patcherCpu};
      out.push_back(std::move(v));
    }
  }
};

struct Registry {
  std::mutex mutex;
  OracleList oracles;
  Registry() {
    // At one event, a fetch from freed text is reported as trampoline-lifetime before the guest
    // fault its poison bytes cause.
    for (sim::FindingKind k : {sim::FindingKind::TornFetch, sim::FindingKind::TrampolineLifetime,
                               sim::FindingKind::GuestFault, sim::FindingKind::Deadlock})
      oracles.push_back(std::make_shared<FindingOracle>(k));
    oracles.push_back(std::make_shared<TransparencyOracle>());
    oracles.push_back(std::make_shared<LivePatchingOracle>());
  }
};

Registry &registry() {
  static Registry r;
  return r;
}

} // namespace

OracleList registeredOracles() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  return r.oracles;
}

OracleRegistration::OracleRegistration(std::shared_ptr<const Oracle> oracle)
    : oracle_(oracle.get()) {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  r.oracles.push_back(std::move(oracle));
}

OracleRegistration::~OracleRegistration() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.oracles, [&](const auto &o) { return o.get() == oracle_; });
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
