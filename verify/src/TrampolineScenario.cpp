#include "ftsim/verify/TrampolineScenario.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/sim/Scheduler.h"

#include <fmt/format.h>

#include <map>
#include <memory>

namespace ftsim::verify {
namespace {

constexpr std::uint64_t kMaxEventsPerExecution = 400000;
constexpr const char *kTracedFunction = "posix_cpu_timer_set";

// Round robin over the CPUs and the patcher (like sim::RoundRobinScheduler, never choosing a
// timer preemption), with the answers at some decisions overridden; records the alternatives an
// explorer may try at every decision from `recordFrom` on.
class BoundedScheduler final : public sim::Scheduler {
public:
  BoundedScheduler(std::map<std::uint64_t, std::uint32_t> overrides, std::uint64_t recordFrom,
                   bool preemptions)
      : overrides_(std::move(overrides)), recordFrom_(recordFrom), preemptions_(preemptions) {}

  std::uint32_t decide(const sim::Machine &machine, const sim::DecisionPoint &point) override {
    if (point.kind == sim::DecisionKind::StaleByte)
      return point.options - 1;
    const std::uint64_t index = decisions_++;
    const unsigned actors = machine.config().cpus + 1;
    auto actorOf = [&](const sim::EventChoice &e) -> unsigned {
      return e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish ? actors - 1
                                                                                  : e.cpu;
    };
    std::uint32_t base = point.options;
    for (unsigned d = 1; d <= actors && base == point.options; ++d) {
      const unsigned actor = (lastActor_ + d) % actors;
      for (std::uint32_t i = 0; i < point.options; ++i)
        if (actorOf(point.events[i]) == actor && point.events[i].kind != sim::EventKind::Preempt) {
          base = i;
          break;
        }
    }
    if (base == point.options)
      base = 0; // only preemptions are enabled
    if (index >= recordFrom_)
      for (std::uint32_t i = 0; i < point.options; ++i) {
        const bool preempt = point.events[i].kind == sim::EventKind::Preempt;
        if (i != base && preempt == preemptions_)
          alternatives_.push_back({index, i});
      }
    std::uint32_t choice = base;
    if (auto it = overrides_.find(index); it != overrides_.end()) {
      if (it->second >= point.options)
        FTSIM_PANIC("bounded schedule: decision {} has {} options, override {}", index,
                    point.options, it->second);
      choice = it->second;
    }
    lastActor_ = actorOf(point.events[choice]);
    return choice;
  }

  std::uint64_t decisions() const { return decisions_; }
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> &alternatives() const {
    return alternatives_;
  }

private:
  std::map<std::uint64_t, std::uint32_t> overrides_;
  std::uint64_t recordFrom_;
  bool preemptions_;
  std::uint64_t decisions_ = 0;
  unsigned lastActor_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> alternatives_;
};

struct Execution {
  std::optional<std::string> violation;
  std::string timeline;
  std::vector<std::uint32_t> choices;
  std::uint64_t decisions = 0;
  std::uint64_t events = 0;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> alternatives;
  bool sleptUntilCall = false;
};

// The events that matter for a trampoline's lifetime, up to and including `upTo`, one per line.
std::string timelineOf(kernel::Kernel &kernel, std::uint64_t upTo) {
  const sim::Machine &m = kernel.machine();
  auto inTrampoline = [&](std::uint64_t pc) -> const kernel::OpsTrampoline * {
    for (const kernel::OpsTrampoline &t : kernel.opsTrampolines())
      if (pc >= t.addr && pc < t.addr + t.size)
        return &t;
    return nullptr;
  };
  auto who = [&](const sim::EventRecord &e) {
    return e.task >= 0 ? fmt::format("cpu{} task{}", e.cpu, e.task)
                       : fmt::format("cpu{} patcher", e.cpu);
  };
  std::string out;
  std::map<unsigned, bool> wasInside; // per CPU: the last step was inside a trampoline
  for (const sim::EventRecord &e : m.events()) {
    if (e.index > upTo)
      break;
    std::string what;
    switch (e.kind) {
    case sim::EventKind::Preempt:
      what = fmt::format("timer preempts the task at {} (not a quiescent state)",
                         kernel.symbolName(e.pc, true));
      break;
    case sim::EventKind::Store:
      what =
          fmt::format("store {} at {}", arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount)),
                      kernel.symbolName(e.storeAddr, true));
      break;
    case sim::EventKind::Publish:
      what = fmt::format("publish {}", m.publishName(e.detail));
      break;
    case sim::EventKind::Alloc:
      what = fmt::format("allocText {:#x} ({} bytes): ops trampoline", e.storeAddr, e.detail);
      break;
    case sim::EventKind::Free:
      what = fmt::format("freeText {:#x} ({} bytes): poisoned and watched", e.storeAddr, e.detail);
      break;
    case sim::EventKind::Step:
    case sim::EventKind::Run: {
      const bool inside = inTrampoline(e.pc) != nullptr;
      if (inside && !wasInside[e.cpu])
        what = fmt::format("enters {}", kernel.symbolName(e.pc, true));
      else if (!inside && wasInside[e.cpu])
        what = fmt::format("leaves the trampoline to {}", kernel.symbolName(e.pc, true));
      wasInside[e.cpu] = inside;
      if (e.outcome == sim::StepOutcome::Schedule)
        what = "schedule(): voluntary switch (quiescent)";
      else if (e.outcome == sim::StepOutcome::Exit)
        what = "exits";
      else if (e.outcome == sim::StepOutcome::Fault)
        what = fmt::format("faults at {}", kernel.symbolName(e.pc, true));
      break;
    }
    default:
      break;
    }
    if (!what.empty())
      out += fmt::format("  #{:<6} {:<14} {}\n", e.index, who(e), what);
  }
  return out;
}

Execution runOnce(const TrampolineCheckOptions &options,
                  const std::map<std::uint64_t, std::uint32_t> &overrides,
                  std::uint64_t recordFrom) {
  kernel::KernelConfig config;
  config.machine.cpus = 2;
  config.machine.quantum = 64;
  config.machine.preemption = options.preempt;
  arch::Image image = arch::loadImage(options.imagePath);
  // The image names the ISA (x86_64 or ppc32); "" takes its correct protocol (int3 / word).
  config.protocol =
      options.protocol.empty() ? arch::protocolsFor(*image.arch).front().name : options.protocol;
  const bool uaf = options.scenario == TrampolineScenarioKind::OpsUafNoSync;
  config.opsTrampolines = !uaf;
  config.splitListFunction = uaf;
  config.freePolicy = options.free;
  kernel::Kernel kernel(std::move(image), config);
  kernel.addWorkload("timers", 1, 1);
  kernel.addWorkload("timers", 1, 2);

  // kmalloc'ed ops (FTRACE_OPS_FL_DYNAMIC), like perf's or a kprobe's.
  std::vector<std::unique_ptr<model::FtraceOps>> ops;
  for (unsigned i = 0; i < (uaf ? 2u : 1u); ++i) {
    ops.push_back(std::make_unique<model::FtraceOps>(
        fmt::format("dynamic_ops{}", i),
        [](std::uint64_t, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {},
        model::OpsFlag::Dynamic));
    kernel.core().setFilter(*ops.back(), kTracedFunction, true);
  }
  std::uint64_t site = 0; // the traced function's patch site
  const arch::ImageSymbol *traced = kernel.image().findSymbol(kTracedFunction);
  if (!traced)
    fatal("{}: no {} to trace", kernel.image().name, kTracedFunction);
  kernel.core().records().forEach([&](const model::DynFtrace &rec) {
    if (!site && rec.ip >= traced->addr && rec.ip < traced->addr + traced->size)
      site = rec.ip;
  });
  const bool sleepUntilCall =
      options.sleepUntilCall.value_or(kernel.image().arch->name() == "ppc32");
  auto unregisterAll = [&](kernel::Kernel &k) {
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      k.core().unregisterFunction(**it);
      k.freeOps(**it); // the owner's kfree()
    }
  };
  kernel.patcher([&](kernel::Kernel &k) {
    for (auto &op : ops)
      k.core().registerFunction(*op);
    // The tasks call through it for a while: an RCU-tasks grace period; for the list function
    // case schedule_on_each_cpu(), which a preempted reader does not hold up.
    if (uaf) {
      k.machine().scheduleOnEachCpu();
    } else {
      k.machine().synchronizeRcuTasks();
      if (!sleepUntilCall)
        return unregisterAll(k);
      // Then sleep (one no-op publication at a time, the tasks running meanwhile) until a task
      // calls the function again, so the unregistration races a call that is inside the
      // trampoline. (How soon a call follows the end of the grace period depends on the ISA's
      // code: on ppc32 the next call comes too late for the round-robin schedule otherwise.)
      std::uint64_t scanned = k.now();
      for (int i = 0; i < 100000; ++i) {
        bool called = false;
        const auto events = k.machine().events();
        for (; scanned < events.size(); ++scanned)
          called = called ||
                   (events[scanned].kind == sim::EventKind::Step && events[scanned].pc == site);
        if (called)
          break;
        k.machine().publish("sleep", [] {});
      }
    }
    unregisterAll(k);
  });
  BoundedScheduler scheduler(overrides, recordFrom, options.preempt);
  const sim::RunResult run = kernel.run(scheduler, kMaxEventsPerExecution);

  Execution out;
  out.sleptUntilCall = sleepUntilCall && !uaf;
  out.decisions = scheduler.decisions();
  out.events = run.events;
  out.alternatives = scheduler.alternatives();
  std::optional<std::uint64_t> at;
  if (!kernel.machine().findings().empty()) {
    const sim::Finding &f = kernel.machine().findings().front();
    out.violation = fmt::format("{}: cpu{} task{} at {} — {}", sim::findingKindName(f.kind), f.cpu,
                                f.task, kernel.symbolName(f.pc, true), f.message);
    at = f.event;
  }
  if (!kernel.opsUseAfterFree().empty()) {
    const kernel::OpsUseAfterFree &u = kernel.opsUseAfterFree().front();
    if (!at || u.event < *at) {
      out.violation = fmt::format(
          "ops-use-after-free: cpu{} task{} walked {} (read ftrace_ops_list at #{}, freed at "
          "#{}) for {}",
          u.cpu, u.task, u.ops, u.readEvent, u.freedEvent, kernel.symbolName(u.ip, false));
      at = u.event;
    }
  }
  if (!out.violation && run.status == sim::RunResult::Status::EventLimit) {
    out.violation = fmt::format("event limit: the execution did not finish in {} events",
                                kMaxEventsPerExecution);
    at = kernel.now();
  }
  if (out.violation) {
    out.timeline = timelineOf(kernel, *at);
    out.choices = sim::choicesOf(kernel.machine().schedule());
  }
  return out;
}

} // namespace

TrampolineCheckResult checkTrampolineScenario(const TrampolineCheckOptions &options) {
  TrampolineCheckResult result;
  const unsigned bound = options.preempt ? options.preemptionBound : options.delayBound;
  result.bounds = fmt::format(
      "{} <= {} around round robin; 2 CPUs (patcher on cpu0), 2 tasks on cpu1 x 16 calls, fast "
      "mode quantum 64 (trampolines and patched sites stepped per instruction)",
      options.preempt ? "timer preemptions" : "delays (another enabled event)", bound);

  struct Node {
    std::map<std::uint64_t, std::uint32_t> overrides;
    std::uint64_t recordFrom = 0;
  };
  std::vector<Node> stack{{}};
  result.complete = true;
  while (!stack.empty()) {
    if (result.executions >= options.maxExecutions) {
      result.complete = false;
      break;
    }
    Node node = std::move(stack.back());
    stack.pop_back();
    Execution e = runOnce(options, node.overrides, node.recordFrom);
    ++result.executions;
    result.events += e.events;
    if (node.overrides.empty()) {
      result.baseDecisions = e.decisions;
      if (e.sleptUntilCall)
        result.bounds += "; after the grace period the patcher sleeps until the next call";
    }
    if (e.violation && !result.violation) {
      result.violation = e.violation;
      result.timeline = std::move(e.timeline);
      result.choices = std::move(e.choices);
      if (options.stopAtFirst) {
        result.complete = false;
        break;
      }
    }
    if (node.overrides.size() < bound)
      // Later deviations only (after the last one), so every set of deviations runs once; pushed
      // in reverse so the earliest is explored first.
      for (auto it = e.alternatives.rbegin(); it != e.alternatives.rend(); ++it) {
        Node child{node.overrides, it->first + 1};
        child.overrides[it->first] = it->second;
        stack.push_back(std::move(child));
      }
  }
  if (result.violation)
    result.complete = result.complete && !options.stopAtFirst;
  return result;
}

std::string formatTrampolineCheck(const TrampolineCheckOptions &options,
                                  const TrampolineCheckResult &result) {
  const std::string what = fmt::format(
      "{} free={}{} preempt={}",
      options.scenario == TrampolineScenarioKind::TrampFreePreempted ? "tramp-free-preempted"
                                                                     : "ops-uaf-no-sync",
      model::trampolineFreeName(options.free.free),
      options.free.syncWhenUnchanged ? "" : " (no sync when no code changes)",
      options.preempt ? "yes" : "no");
  std::string out;
  if (result.violation) {
    out = fmt::format("FOUND     {}\n  {}\n  after {} executions; schedule of {} decisions\n"
                      "  timeline (CPU 0 = patcher):\n{}",
                      what, *result.violation, result.executions, result.choices.size(),
                      result.timeline);
  } else {
    out = fmt::format("{}  {}\n  {} executions, {} events, round-robin schedule {} decisions\n",
                      result.complete ? "VERIFIED" : "NO VIOLATION (budget hit)", what,
                      result.executions, result.events, result.baseDecisions);
  }
  out += fmt::format("  bounds: {}\n", result.bounds);
  return out;
}

} // namespace ftsim::verify
