// Engine-level scenarios on kernel::Kernel: one execution, its oracles, randomised exploration and
// prefix minimisation (ScenarioKernel.h).

#include "ftsim/verify/ScenarioKernel.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/RecordFlags.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace ftsim::verify {
namespace {

// One of the scenario's ops with its recorded callbacks.
struct OpsCall {
  std::uint64_t event;
  unsigned cpu;
  int task;
  std::uint64_t ip;
};
struct OpsSlot {
  const EngineOpsSpec *spec = nullptr;
  std::unique_ptr<model::FtraceOps> ops;
  std::vector<OpsCall> calls;
};

// The state of each ops between operations: registered, and the ips it is enabled for.
struct OpsState {
  bool live = false;
  std::set<std::uint64_t> ips;
};
using EngineState = std::vector<OpsState>; // by slot

struct OpInterval {
  std::uint64_t begin, end; // events [begin, end)
};

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

EngineState captureState(kernel::Kernel &k, const std::vector<OpsSlot> &slots) {
  EngineState st(slots.size());
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

// The reference model of the records and the sites (ScenarioKernel.h, engine-invariant).
std::optional<std::string> checkEngine(kernel::Kernel &k, bool opsTrampolines) {
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
    const std::string name = core.recordName(rec);
    auto fail = [&](const std::string &what) {
      bad = fmt::format("{} ({:#x}) flags {:#010x}: {}", name, rec.ip, rec.flags, what);
    };
    if (!core.ftraceEnabled())
      refs.clear();
    if (rec.count() != refs.size())
      return fail(
          fmt::format("reference count {} but {} live ops want it", rec.count(), refs.size()));
    if (rec.has(model::RecordFlag::Enabled) != !refs.empty())
      return fail(fmt::format("ENABLED is {} with {} ops", rec.has(model::RecordFlag::Enabled),
                              refs.size()));
    if (!refs.empty() && rec.has(model::RecordFlag::Regs) != regs)
      return fail(
          fmt::format("REGS is {} but SAVE_REGS ops: {}", rec.has(model::RecordFlag::Regs), regs));
    const bool tramp = opsTrampolines && refs.size() == 1 && refs.front()->trampoline != 0;
    if (opsTrampolines && !refs.empty() && rec.has(model::RecordFlag::Tramp) != tramp)
      return fail(fmt::format("TRAMP is {} but the model says {}",
                              rec.has(model::RecordFlag::Tramp), tramp));
    arch::Bytes want;
    if (refs.empty())
      want = a.nop();
    else {
      const std::uint64_t target = tramp  ? refs.front()->trampoline
                                   : regs ? addr.ftraceRegsCaller
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

Violation makeViolation(std::string oracle, std::uint64_t event, unsigned cpu, int task,
                        std::uint64_t pc, std::string message) {
  Violation v;
  v.oracle = std::move(oracle);
  v.event = event;
  v.cpus = {cpu};
  v.task = task;
  v.pc = pc;
  v.message = std::move(message);
  return v;
}

std::string oracleOf(sim::FindingKind kind) {
  switch (kind) {
  case sim::FindingKind::GuestFault:
    return "guest-fault";
  case sim::FindingKind::TornFetch:
    return "torn-fetch";
  case sim::FindingKind::TrampolineLifetime:
    return "trampoline-lifetime";
  case sim::FindingKind::Deadlock:
    return "deadlock";
  }
  return "guest-fault";
}

// Records every answer so that a ReplayScheduler can repeat the execution.
class Recording final : public sim::Scheduler {
public:
  explicit Recording(sim::Scheduler &inner) : inner_(inner) {}
  std::uint32_t decide(const sim::Machine &m, const sim::DecisionPoint &p) override {
    const std::uint32_t c = inner_.decide(m, p);
    choices.push_back(c);
    return c;
  }
  std::vector<std::uint32_t> choices;

private:
  sim::Scheduler &inner_;
};

// A prefix of answers, then the first enabled event (stale bytes: the newest value).
class PrefixScheduler final : public sim::Scheduler {
public:
  explicit PrefixScheduler(const std::vector<std::uint32_t> &choices) : choices_(choices) {}
  std::uint32_t decide(const sim::Machine &, const sim::DecisionPoint &p) override {
    if (next_ < choices_.size()) {
      const std::uint32_t c = choices_[next_++];
      if (c < p.options)
        return c;
      return p.options - 1;
    }
    ++next_;
    return p.kind == sim::DecisionKind::StaleByte ? p.options - 1 : 0;
  }

private:
  const std::vector<std::uint32_t> &choices_;
  std::size_t next_ = 0;
};

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

} // namespace

// --- PCT ------------------------------------------------------------------------------------

PctScheduler::PctScheduler(std::uint64_t seed, unsigned depth, std::uint64_t expectedEvents)
    : state_(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {
  for (unsigned i = 1; i < depth; ++i)
    changePoints_.push_back(next() % std::max<std::uint64_t>(expectedEvents, 1));
  std::sort(changePoints_.begin(), changePoints_.end());
}

std::uint64_t PctScheduler::next() { // splitmix64
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint32_t PctScheduler::decide(const sim::Machine &machine, const sim::DecisionPoint &p) {
  if (p.kind == sim::DecisionKind::StaleByte)
    return static_cast<std::uint32_t>(next() % p.options);
  const unsigned cpus = machine.config().cpus;
  auto process = [&](const sim::EventChoice &e) -> std::size_t {
    switch (e.kind) {
    case sim::EventKind::Store:
    case sim::EventKind::Publish:
    case sim::EventKind::Alloc:
    case sim::EventKind::Free:
      return 3 * cpus;
    case sim::EventKind::Ipi:
      return 3 * e.cpu + 1;
    case sim::EventKind::Preempt:
      return 3 * e.cpu + 2;
    default:
      return 3 * e.cpu;
    }
  };
  if (priority_.empty()) {
    priority_.resize(3 * cpus + 1);
    for (auto &pr : priority_) // distinct random priorities above every change point's
      pr = static_cast<std::int64_t>(changePoints_.size() + 1 + next() % 1000000);
  }
  std::uint32_t best = 0;
  for (std::uint32_t i = 1; i < p.options; ++i)
    if (priority_[process(p.events[i])] > priority_[process(p.events[best])])
      best = i;
  const std::uint64_t step = steps_++;
  for (std::size_t c = 0; c < changePoints_.size(); ++c)
    if (changePoints_[c] == step)
      priority_[process(p.events[best])] = static_cast<std::int64_t>(c); // d-1 .. lowest
  return best;
}

// --- One execution ---------------------------------------------------------------------------

KernelScenarioRunner::KernelScenarioRunner(Scenario scenario, std::string imagePath)
    : scenario_(std::move(scenario)), imagePath_(std::move(imagePath)) {
  if (scenario_.code != CodeKind::Kernel)
    fatal("{}: not an engine-level scenario (code kind is not \"kernel\")", scenario_.name);
  // The reference: the boot-time ops, no patcher steps, round robin.
  Scenario ref = scenario_;
  ref.engine.steps.clear();
  KernelScenarioRunner *self = this;
  std::swap(self->scenario_, ref);
  sim::RoundRobinScheduler rr;
  KernelExecution e = run(rr);
  std::swap(self->scenario_, ref);
  if (!e.violations.empty())
    fatal("{}: the reference run (no patcher operations) fails: {}", scenario_.name,
          summarizeViolation(e.violations.front()));
  reference_ = e.results;
}

KernelScenarioRunner::~KernelScenarioRunner() = default;

KernelExecution KernelScenarioRunner::run(
    sim::Scheduler &scheduler,
    const std::function<void(const kernel::Kernel &, const KernelExecution &)> &inspect) {
  const Scenario &s = scenario_;
  kernel::KernelConfig config;
  config.machine.cpus = s.cpus;
  config.machine.storeModel = s.store;
  config.machine.fetchModel = s.fetch;
  config.machine.preemption = s.preemption;
  config.machine.quantum = 64;
  config.protocol = s.protocol;
  config.opsTrampolines = s.engine.opsTrampolines;
  auto kernel = std::make_unique<kernel::Kernel>(arch::loadImage(imagePath_), config);
  kernel::Kernel &k = *kernel;
  k.core().setPre59338f754a55Order(s.engine.pre59338f754a55);

  KernelExecution out;
  std::vector<OpsSlot> slots(s.engine.ops.size());
  std::map<std::string, std::size_t> byName;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const EngineOpsSpec &spec = s.engine.ops[i];
    byName[spec.name] = i;
    std::uint32_t flags = 0;
    if (spec.dynamic)
      flags |= model::OpsFlag::Dynamic;
    if (spec.saveRegs)
      flags |= model::OpsFlag::SaveRegs;
    if (spec.recursion)
      flags |= model::OpsFlag::Recursion;
    std::uint64_t redirect = 0;
    if (!spec.livepatch.empty()) {
      flags |= model::OpsFlag::SaveRegs | model::OpsFlag::IpModify;
      redirect = k.symbolAddress(spec.livepatch);
    }
    OpsSlot &slot = slots[i];
    slot.spec = &spec;
    slot.ops = std::make_unique<model::FtraceOps>(
        spec.name,
        [&k, &slot, redirect](std::uint64_t ip, std::uint64_t, model::FtraceOps &,
                              arch::GuestContext *regs) {
          const kernel::CallbackEvent &cb = k.callbacks().back();
          slot.calls.push_back({cb.event, cb.cpu, cb.task, ip});
          if (redirect && regs)
            regs->setPc(redirect);
        },
        flags);
    const auto globs = splitGlobs(spec.filter);
    for (std::size_t g = 0; g < globs.size(); ++g)
      k.core().setFilter(*slot.ops, globs[g], g == 0);
  }
  for (OpsSlot &slot : slots)
    if (slot.spec->boot)
      k.core().registerFunction(*slot.ops);

  std::vector<EngineState> states{captureState(k, slots)};
  std::vector<OpInterval> intervals;
  std::vector<Violation> engineViolations;
  auto engineCheck = [&](const std::string &after) {
    if (auto bad = checkEngine(k, s.engine.opsTrampolines))
      engineViolations.push_back(
          makeViolation("engine-invariant", k.now(), 0, -1, 0, after + ": " + *bad));
  };
  engineCheck("after boot");
  k.watchPatchSites();
  for (std::size_t i = 0; i < s.engine.workloads.size(); ++i)
    k.addWorkload(s.engine.workloads[i], static_cast<unsigned>(i + 1), s.engine.seed + i);

  if (!s.engine.steps.empty())
    k.patcher([&](kernel::Kernel &kk) {
      for (const EngineStep &step : s.engine.steps) {
        const std::uint64_t begin = kk.now();
        try {
          if (step.op == EngineOpKind::Tracer) {
            kk.tracefs().write("current_tracer", step.tracer);
          } else {
            model::FtraceOps &ops = *slots[byName.at(step.ops)].ops;
            switch (step.op) {
            case EngineOpKind::Register:
              kk.core().registerFunction(ops);
              break;
            case EngineOpKind::Unregister:
              kk.core().unregisterFunction(ops);
              break;
            case EngineOpKind::SetFilter:
              kk.core().setFilter(ops, step.pattern, true);
              break;
            case EngineOpKind::AppendFilter:
              kk.core().setFilter(ops, step.pattern, false);
              break;
            case EngineOpKind::RemoveFilter:
              kk.core().setFilter(ops, "!" + step.pattern, false);
              break;
            case EngineOpKind::Tracer:
              break;
            }
          }
        } catch (const model::FtraceError &e) {
          out.notes.push_back(
              fmt::format("{}: errno {}: {}", step.describe(), e.errnoValue(), e.what()));
        }
        intervals.push_back({begin, kk.now()});
        states.push_back(captureState(kk, slots));
        engineCheck("after " + step.describe());
      }
    });

  Recording rec(scheduler);
  const sim::RunResult result = k.run(rec, s.bounds.maxEvents);
  const sim::Machine &m = k.machine();
  out.choices = std::move(rec.choices);
  out.events = m.events().size();
  out.logHash = fnv1a(m.logText());
  for (const sim::EventRecord &e : m.events())
    if (e.kind == sim::EventKind::Preempt)
      ++out.preemptions;

  std::vector<Violation> &vs = out.violations;
  for (const sim::Finding &f : m.findings()) {
    Violation v = makeViolation(oracleOf(f.kind), f.event, f.cpu, f.task, f.pc, f.message);
    v.bytes = arch::Bytes(f.bytes.begin(), f.bytes.end());
    v.decoded = f.decoded;
    if (f.kind == sim::FindingKind::TornFetch)
      v.site = k.symbolName(f.addr, true);
    vs.push_back(std::move(v));
  }
  for (const kernel::OpsUseAfterFree &u : k.opsUseAfterFree())
    vs.push_back(makeViolation(
        "trampoline-lifetime", u.event, u.cpu, u.task, u.ip,
        fmt::format("the list function walked ops '{}' freed at event {} (list read at event {})",
                    u.ops, u.freedEvent, u.readEvent)));
  vs.insert(vs.end(), engineViolations.begin(), engineViolations.end());

  // Transparency.
  const bool finished = result.status == sim::RunResult::Status::Completed;
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    out.results.push_back(info.result);
    if (finished && info.state == sim::TaskState::Exited && t < reference_.size() &&
        info.result != reference_[t])
      vs.push_back(makeViolation(
          "transparency", out.events ? out.events - 1 : 0, info.cpu, static_cast<int>(t), 0,
          fmt::format("task{} ({}) returned {:#x}, the reference run returned {:#x}", t, info.name,
                      info.result, reference_[t])));
  }
  if (result.status == sim::RunResult::Status::EventLimit)
    out.notes.push_back(fmt::format("cut at {} events (bounds.max_events)", s.bounds.maxEvents));

  // Trace completeness over the scenario's ops.
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
    for (const OpInterval &iv : intervals)
      if (iv.begin <= b && a < iv.end)
        return true;
    return false;
  };
  const std::vector<kernel::SiteExecution> sites = k.siteExecutions();
  std::map<int, std::vector<const kernel::SiteExecution *>> byTask;
  for (const kernel::SiteExecution &se : sites)
    byTask[se.task].push_back(&se);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    for (const OpsCall &c : slots[i].calls) {
      // The site execution this callback belongs to: the task's last one at or before it.
      const kernel::SiteExecution *from = nullptr;
      for (const kernel::SiteExecution *se : byTask[c.task])
        if (se->event <= c.event && se->ip == c.ip)
          from = se;
      const std::uint64_t start = from ? from->event : c.event;
      const std::size_t lo = statesAt(start).first, hi = statesAt(c.event).second;
      bool allowed = false;
      for (std::size_t st = lo; st <= hi && st < states.size(); ++st)
        allowed |= states[st][i].live && states[st][i].ips.count(c.ip) != 0;
      if (!allowed)
        vs.push_back(makeViolation(
            "trace-completeness", c.event, c.cpu, c.task, c.ip,
            fmt::format("ops '{}' called for {} ({:#x}), which it was never enabled for while "
                        "the call ran (filter '{}')",
                        slots[i].spec->name, k.symbolName(c.ip, false), c.ip,
                        slots[i].spec->filter)));
    }
  }
  for (auto &[task, list] : byTask) {
    for (std::size_t j = 0; j < list.size(); ++j) {
      const kernel::SiteExecution &se = *list[j];
      const std::uint64_t end = j + 1 < list.size() ? list[j + 1]->event : out.events;
      if (j + 1 == list.size() && !finished)
        continue;
      if (inOp(se.event, end))
        continue;
      const EngineState &st = states[statesAt(se.event).first];
      for (std::size_t i = 0; i < slots.size(); ++i) {
        if (!st[i].live || !st[i].ips.count(se.ip))
          continue;
        std::size_t n = 0;
        for (const OpsCall &c : slots[i].calls)
          n += c.task == task && c.ip == se.ip && c.event >= se.event && c.event < end;
        if (n != 1)
          vs.push_back(makeViolation(
              "trace-completeness", se.event, se.cpu, task, se.ip,
              fmt::format("{} ({:#x}) ran while ops '{}' was enabled for it, and the ops was "
                          "called {} times for that call",
                          k.symbolName(se.ip, false), se.ip, slots[i].spec->name, n)));
      }
    }
  }
  std::stable_sort(vs.begin(), vs.end(),
                   [](const Violation &a, const Violation &b) { return a.event < b.event; });
  for (Violation &v : vs)
    if (v.trail.empty())
      v.trail.push_back(rtrim(kernelTimeline(k, v.event)));
  if (inspect)
    inspect(k, out);
  return out;
}

KernelExecution KernelScenarioRunner::replay(
    const std::vector<std::uint32_t> &choices,
    const std::function<void(const kernel::Kernel &, const KernelExecution &)> &inspect) {
  PrefixScheduler prefix(choices);
  return run(prefix, inspect);
}

// --- Timeline --------------------------------------------------------------------------------

std::string kernelTimeline(const kernel::Kernel &kernel, std::uint64_t upTo) {
  const sim::Machine &m = kernel.machine();
  std::set<std::uint64_t> siteIps;
  for (const kernel::SiteExecution &se : kernel.siteExecutions())
    siteIps.insert(se.ip);
  std::map<std::uint64_t, std::vector<const kernel::CallbackEvent *>> callbacks;
  for (const kernel::CallbackEvent &c : kernel.callbacks())
    callbacks[c.event].push_back(&c);
  auto who = [](const sim::EventRecord &e) {
    return e.task >= 0 ? fmt::format("cpu{} task{}", e.cpu, e.task)
                       : fmt::format("cpu{} patcher", e.cpu);
  };
  std::string out;
  for (const sim::EventRecord &e : m.events()) {
    if (e.index > upTo)
      break;
    std::string what;
    switch (e.kind) {
    case sim::EventKind::Store:
      what =
          fmt::format("store {} at {}", arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount)),
                      kernel.symbolName(e.storeAddr, true));
      break;
    case sim::EventKind::Publish:
      what = fmt::format("publish {}", m.publishName(e.detail));
      break;
    case sim::EventKind::Ipi:
      what = "takes the sync IPI (serialises)";
      break;
    case sim::EventKind::Preempt:
      what = fmt::format("timer preemption at {}", kernel.symbolName(e.pc, true));
      break;
    case sim::EventKind::Alloc:
      what = fmt::format("allocText {:#x} ({} bytes)", e.storeAddr, e.detail);
      break;
    case sim::EventKind::Free:
      what = fmt::format("freeText {:#x} ({} bytes)", e.storeAddr, e.detail);
      break;
    case sim::EventKind::Step:
      if (siteIps.count(e.pc))
        what = fmt::format("executes the site of {} [{}]{}", kernel.symbolName(e.pc, false),
                           arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount)),
                           e.outcome == sim::StepOutcome::TrapHandled ? " (int3 handled)" : "");
      else if (e.outcome == sim::StepOutcome::Fault)
        what = fmt::format("faults at {}", kernel.symbolName(e.pc, true));
      else if (e.outcome == sim::StepOutcome::Exit)
        what = fmt::format("exits with {:#x}", e.detail);
      break;
    default:
      break;
    }
    if (auto it = callbacks.find(e.index); it != callbacks.end())
      for (const kernel::CallbackEvent *c : it->second)
        what += fmt::format("{}callback {} for {}", what.empty() ? "" : "; ", c->function,
                            kernel.symbolName(c->ip, false));
    if (!what.empty())
      out += fmt::format("  #{:<7} {:<14} {}\n", e.index, who(e), what);
  }
  for (const sim::Finding &f : m.findings())
    if (f.event <= upTo)
      out += fmt::format("  finding: {}\n", sim::formatFinding(f));
  return out;
}

// --- Exploration -----------------------------------------------------------------------------

namespace {
Counterexample counterexampleOf(const KernelExecution &e) {
  Counterexample c;
  c.violation = e.violations.front();
  c.choices = e.choices;
  c.preemptions = e.preemptions;
  c.events = e.events;
  c.logHash = e.logHash;
  return c;
}
} // namespace

KernelExploreResult exploreKernelScenario(KernelScenarioRunner &runner, bool stopAtFirst) {
  const Scenario &s = runner.scenario();
  const auto t0 = std::chrono::steady_clock::now();
  KernelExploreResult r;
  std::uint64_t lastEvents = 2000;
  for (std::uint64_t run = 0; run < s.engine.runs; ++run) {
    const std::uint64_t seed = s.engine.scheduleSeed * 1000003 + run;
    KernelExecution e;
    if (s.engine.explore == "pct") {
      PctScheduler pct(seed, s.engine.pctDepth, lastEvents);
      e = runner.run(pct);
    } else {
      sim::RandomScheduler random(seed);
      e = runner.run(random);
    }
    ++r.executions;
    r.events += e.events;
    lastEvents = std::max<std::uint64_t>(e.events, 1);
    if (!e.violations.empty()) {
      ++r.violatingExecutions;
      if (!r.found)
        r.found = counterexampleOf(e);
      if (stopAtFirst)
        break;
    }
  }
  r.coverage = fmt::format("{} {} runs (seed {}{}), at most {} events per execution, {} CPUs, "
                           "workloads on CPUs 1-{}",
                           r.executions, s.engine.explore, s.engine.scheduleSeed,
                           s.engine.explore == "pct" ? fmt::format(", depth {}", s.engine.pctDepth)
                                                     : std::string(),
                           s.bounds.maxEvents, s.cpus, s.engine.workloads.size());
  if (r.found)
    r.counterexample = minimiseKernel(runner, *r.found);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Counterexample minimiseKernel(KernelScenarioRunner &runner, const Counterexample &found) {
  const std::string oracle = found.violation.oracle;
  auto attempt = [&](std::size_t n) -> std::optional<KernelExecution> {
    std::vector<std::uint32_t> prefix(
        found.choices.begin(),
        found.choices.begin() + static_cast<std::ptrdiff_t>(std::min(n, found.choices.size())));
    KernelExecution e = runner.replay(prefix);
    for (const Violation &v : e.violations)
      if (v.oracle == oracle)
        return e;
    return std::nullopt;
  };
  // Binary search for a short prefix (a violation with prefix n does not imply one with n+1, so
  // this finds a locally shortest prefix, not the global minimum).
  std::size_t lo = 0, hi = found.choices.size();
  std::optional<KernelExecution> best;
  if (auto e = attempt(0)) {
    best = std::move(e);
    hi = 0;
  }
  while (lo + 1 < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (auto e = attempt(mid)) {
      best = std::move(e);
      hi = mid;
    } else {
      lo = mid;
    }
  }
  if (!best)
    return found;
  // Keep the violation of the same oracle first.
  Counterexample c = counterexampleOf(*best);
  for (const Violation &v : best->violations)
    if (v.oracle == oracle) {
      c.violation = v;
      break;
    }
  return c;
}

KernelReproduction reproduceKernel(KernelScenarioRunner &runner, const ReplayFile &file,
                                   const std::string &origin, bool chrome) {
  KernelReproduction r;
  r.execution = runner.replay(
      file.counterexample.choices, [&](const kernel::Kernel &k, const KernelExecution &e) {
        r.timeline = kernelTimeline(k);
        if (chrome)
          r.chrome = chromeTrace(
              k.machine(), [&](std::uint64_t a) { return k.symbolName(a, true); }, e.violations);
      });
  if (r.execution.logHash != file.counterexample.logHash)
    fatal("{}: the execution does not reproduce (event log hash {:#018x}, the file records "
          "{:#018x}: another build of the guest, or an edited file)",
          origin, r.execution.logHash, file.counterexample.logHash);
  const std::string &want = file.counterexample.violation.message; // the recorded summary
  for (const Violation &v : r.execution.violations)
    if (summarizeViolation(v) == want) {
      r.violation = v;
      return r;
    }
  fatal("{}: the execution reproduces but shows no '{}'", origin, want);
}

} // namespace ftsim::verify
