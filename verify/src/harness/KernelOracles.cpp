// The kernel harness's own oracles (KernelHarness.h): engine invariants against a reference model
// of the ops hashes, trace completeness over the scenario's ops, ops use-after-free, a callback
// called with another ops' op.

#include "ftsim/verify/harness/KernelHarness.h"

#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/model/RecordFlags.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ftsim::verify {

using namespace ftsim::kernel;

// The reference model of the records and the sites (ScenarioKernel.h, engine-invariant).
std::optional<std::string> checkEngineState(Kernel &k, bool opsTrampolines) {
  model::FtraceCore &core = k.core();
  if (core.dead())
    return std::string("ftrace is dead (ftrace_kill): ") +
           (core.bugs().empty() ? std::string("no bug report") : core.bugs().front().text());
  const arch::Arch &a = k.machine().arch();
  const auto &addr = core.config().addresses;
  std::vector<const model::FtraceOps *> live;
  for (const model::FtraceOps *o : core.opsList())
    if (!o->has(model::OpsFlag::Stub))
      live.push_back(o);
  std::optional<std::string> bad;
  core.records().forEach([&](const model::DynFtrace &rec) {
    if (bad || rec.has(model::RecordFlag::Disabled))
      return;
    std::vector<const model::FtraceOps *> refs;
    for (const model::FtraceOps *o : live)
      if (o->funcHash.containsIp(rec.ip))
        refs.push_back(o);
    const bool regs = std::any_of(refs.begin(), refs.end(), [](const model::FtraceOps *o) {
      return o->has(model::OpsFlag::SaveRegs);
    });
    // The record's name only for a report: naming every record after every step cost more than
    // the rest of the check.
    auto fail = [&](const std::string &what) {
      bad = fmt::format("{} ({:#x}) flags {:#010x}: {}", core.recordName(rec), rec.ip, rec.flags,
                        what);
    };
    if (!core.ftraceEnabled())
      refs.clear();
    if (rec.count() != refs.size())
      return fail(
          fmt::format("reference count {} but {} live ops want it", rec.count(), refs.size()));
    if (rec.has(model::RecordFlag::Enabled) != !refs.empty())
      return fail(fmt::format("ENABLED is {} with {} ops", rec.has(model::RecordFlag::Enabled),
                              refs.size()));
    // REGS must be set while a SAVE_REGS ops wants the record; it may stay set after the last
    // such ops stopped wanting it while other ops still do. That is Linux (6.1 and 6.12
    // kernel/trace/ftrace.c): ftrace_hash_move() calls ftrace_hash_rec_disable_modify() while the
    // ops' old filter hash is still installed, so __ftrace_hash_rec_update()'s decrement asks
    // test_rec_ops_needs_regs(), which walks ftrace_ops_list, finds the moving ops itself still
    // matching the record through its old hash, and keeps REGS; ftrace_hash_rec_enable_modify()
    // with the new hash then does not touch the record. The site keeps calling
    // ftrace_regs_caller: slower, not wrong. Only "no more users" (ftrace_check_record) clears it.
    if (!refs.empty() && regs && !rec.has(model::RecordFlag::Regs))
      return fail("REGS is false but a SAVE_REGS ops wants the record");
    const bool tramp = opsTrampolines && refs.size() == 1 && refs.front()->trampoline != 0;
    if (opsTrampolines && !refs.empty() && rec.has(model::RecordFlag::Tramp) != tramp)
      return fail(fmt::format("TRAMP is {} but the model says {}",
                              rec.has(model::RecordFlag::Tramp), tramp));
    arch::Bytes want;
    if (refs.empty())
      want = a.nop();
    else {
      // ftrace_get_addr_new(): the REGS flag, not the ops, picks ftrace_regs_caller.
      const bool regsFlag = rec.has(model::RecordFlag::Regs);
      const std::uint64_t target = tramp      ? refs.front()->trampoline
                                   : regsFlag ? addr.ftraceRegsCaller
                                              : addr.ftraceCaller;
      want = a.call(rec.ip, target).bytes;
    }
    for (unsigned cpu = 0; cpu < k.machine().config().cpus; ++cpu) {
      const arch::Bytes seen = k.machine().viewBytes(cpu, rec.ip, a.siteSize());
      if (seen != want)
        return fail(fmt::format("cpu{} sees {} but the model says {}", cpu, arch::hexBytes(seen),
                                arch::hexBytes(want)));
    }
  });
  if (bad)
    return bad;
  const arch::TrampolineCode &code = k.trampolines();
  for (std::uint64_t call : {code.ftraceCall, code.ftraceRegsCall}) {
    if (!call)
      continue;
    const arch::Bytes bytes = k.machine().viewBytes(0, call, a.siteSize());
    const auto target = a.callTarget(call, bytes);
    if (!target)
      return fmt::format("{} holds {}, not a call", k.symbolName(call, true),
                         arch::hexBytes(bytes));
    if (live.empty() && *target != code.ftraceStub)
      return fmt::format("{} calls {:#x} with no live ops (ftrace_stub is {:#x})",
                         k.symbolName(call, true), *target, code.ftraceStub);
    if (live.size() >= 2 && *target != code.listFuncStub)
      return fmt::format("{} calls {:#x} with {} live ops (the list function is {:#x})",
                         k.symbolName(call, true), *target, live.size(), code.listFuncStub);
  }
  return std::nullopt;
}

namespace {

class EngineInvariantOracle final : public Oracle {
public:
  explicit EngineInvariantOracle(const KernelHarness &h) : h_(h) {}
  std::string_view name() const override { return "engine-invariant"; }
  void check(const ExecutionView &, std::vector<Violation> &out) const override {
    for (const KernelHarness::EngineCheck &c : h_.engineChecks()) {
      Violation v = violationAt("engine-invariant", c.event, c.message);
      v.cpus = {0};
      out.push_back(std::move(v));
    }
  }

private:
  const KernelHarness &h_;
};

// The list function walked an ops its owner had already freed.
class OpsUseAfterFreeOracle final : public Oracle {
public:
  explicit OpsUseAfterFreeOracle(std::function<const Kernel &()> kernel)
      : kernel_(std::move(kernel)) {}
  std::string_view name() const override { return "trampoline-lifetime"; }
  void check(const ExecutionView &, std::vector<Violation> &out) const override {
    const Kernel &k = kernel_();
    for (const OpsUseAfterFree &u : k.opsUseAfterFree()) {
      Violation v = violationAt(
          "trampoline-lifetime", u.event,
          fmt::format("ops-use-after-free: the list function walked ops '{}' freed at event {} "
                      "(ftrace_ops_list read at event {}) for {}",
                      u.ops, u.freedEvent, u.readEvent, k.symbolName(u.ip, false)));
      v.cpus = {u.cpu};
      v.task = u.task;
      v.pc = u.ip;
      out.push_back(std::move(v));
    }
  }

private:
  std::function<const Kernel &()> kernel_;
};

// ftrace_call called one ops' func directly while the op the trampoline had loaded from
// function_trace_op (its third argument) was another: the callback runs with data that is not its
// own, e.g. ftrace_list_end for ops whose callback reads op->private (405e1d834807).
class FunctionTraceOpOracle final : public Oracle {
public:
  explicit FunctionTraceOpOracle(const KernelHarness &h) : h_(h) {}
  std::string_view name() const override { return "function-trace-op"; }
  void check(const ExecutionView &, std::vector<Violation> &out) const override {
    const Kernel &k = h_.kernel();
    for (const OpMismatch &m : k.opMismatches()) {
      Violation v = violationAt(
          "function-trace-op", m.event,
          fmt::format("ops '{}' called for {} ({:#x}) with op '{}', not its own '{}': ftrace_call "
                      "called its func directly while the trampoline passed function_trace_op",
                      m.function, k.symbolName(m.ip, false), m.ip, m.op, m.function));
      v.cpus = {m.cpu};
      v.task = m.task;
      v.pc = m.ip;
      out.push_back(std::move(v));
    }
  }

private:
  const KernelHarness &h_;
};

} // namespace

std::shared_ptr<const Oracle> makeOpsUseAfterFreeOracle(std::function<const Kernel &()> kernel) {
  return std::make_shared<OpsUseAfterFreeOracle>(std::move(kernel));
}

namespace {

class KernelTraceCompleteness final : public Oracle {
public:
  explicit KernelTraceCompleteness(const KernelHarness &h) : h_(h) {}
  std::string_view name() const override { return "trace-completeness"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    const Kernel &k = h_.kernel();
    const auto &intervals = h_.intervals();
    const auto &states = h_.states();
    const auto &slots = h_.slots();
    const bool finished = x.run.status == sim::RunResult::Status::Completed;
    const std::uint64_t events = x.machine.eventCount();
    auto violation = [&](std::uint64_t event, unsigned cpu, int task, std::uint64_t ip,
                         std::string message) {
      Violation v = violationAt("trace-completeness", event, std::move(message));
      v.cpus = {cpu};
      v.task = task;
      v.pc = ip;
      out.push_back(std::move(v));
    };
    auto statesAt = [&](std::uint64_t event) -> std::pair<std::size_t, std::size_t> {
      for (std::size_t i = 0; i < intervals.size(); ++i) {
        if (event < intervals[i].begin)
          return {i, i};
        if (event < intervals[i].end)
          return {i, i + 1};
      }
      return {intervals.size(), intervals.size()};
    };
    auto inOp = [&](std::uint64_t a, std::uint64_t b) { // any operation overlaps [a, b]
      for (const KernelHarness::OpInterval &iv : intervals)
        if (iv.begin <= b && a < iv.end)
          return true;
      return false;
    };
    const std::vector<SiteExecution> sites = k.siteExecutions();
    std::map<int, std::vector<const SiteExecution *>> byTask;
    // The events of each task's site executions and of each ops' calls, per (task, ip), in event
    // order (the log's, the calls'): looked up by binary search, where scanning a task's whole
    // list for every call made the oracle quadratic in the length of an execution.
    using Key = std::pair<int, std::uint64_t>;
    std::map<Key, std::vector<std::uint64_t>> siteEvents;
    for (const SiteExecution &se : sites) {
      byTask[se.task].push_back(&se);
      siteEvents[{se.task, se.ip}].push_back(se.event);
    }
    std::vector<std::map<Key, std::vector<std::uint64_t>>> callEvents(slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i)
      for (const KernelHarness::OpsCall &c : slots[i].calls)
        callEvents[i][{c.task, c.ip}].push_back(c.event);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      for (const KernelHarness::OpsCall &c : slots[i].calls) {
        // The site execution this callback belongs to: the task's last one at or before it.
        std::uint64_t start = c.event;
        if (auto it = siteEvents.find({c.task, c.ip}); it != siteEvents.end()) {
          const auto after = std::upper_bound(it->second.begin(), it->second.end(), c.event);
          if (after != it->second.begin())
            start = *std::prev(after);
        }
        const std::size_t lo = statesAt(start).first, hi = statesAt(c.event).second;
        bool allowed = false;
        for (std::size_t st = lo; st <= hi && st < states.size(); ++st)
          allowed |= states[st][i].live && states[st][i].ips.count(c.ip) != 0;
        if (!allowed)
          violation(
              c.event, c.cpu, c.task, c.ip,
              fmt::format("ops '{}' called for {} ({:#x}), which it was never enabled for while "
                          "the call ran (filter '{}')",
                          slots[i].spec->name, k.symbolName(c.ip, false), c.ip,
                          slots[i].spec->filter));
      }
    }
    for (auto &[task, list] : byTask) {
      for (std::size_t j = 0; j < list.size(); ++j) {
        const SiteExecution &se = *list[j];
        const std::uint64_t end = j + 1 < list.size() ? list[j + 1]->event : events;
        if (j + 1 == list.size() && !finished)
          continue;
        if (inOp(se.event, end))
          continue;
        const KernelHarness::EngineState &st = states[statesAt(se.event).first];
        for (std::size_t i = 0; i < slots.size(); ++i) {
          if (!st[i].live || !st[i].ips.count(se.ip))
            continue;
          std::size_t n = 0;
          if (auto it = callEvents[i].find({task, se.ip}); it != callEvents[i].end())
            n = static_cast<std::size_t>(
                std::lower_bound(it->second.begin(), it->second.end(), end) -
                std::lower_bound(it->second.begin(), it->second.end(), se.event));
          if (n != 1)
            violation(
                se.event, se.cpu, task, se.ip,
                fmt::format("{} ({:#x}) ran while ops '{}' was enabled for it, and the ops was "
                            "called {} times for that call",
                            k.symbolName(se.ip, false), se.ip, slots[i].spec->name, n));
        }
      }
    }
  }

private:
  const KernelHarness &h_;
};

} // namespace

OracleList KernelHarness::kindOracles() const {
  return {std::make_shared<EngineInvariantOracle>(*this),
          makeOpsUseAfterFreeOracle([this]() -> const Kernel & { return kernel(); }),
          std::make_shared<KernelTraceCompleteness>(*this),
          std::make_shared<FunctionTraceOpOracle>(*this)};
}

} // namespace ftsim::verify
