// The ops list: add/remove ftrace_ops, update_ftrace_function(), ftrace_startup() and
// ftrace_shutdown() with the trampoline free policy, and sysctl kernel.ftrace_enabled.

#include "ftsim/model/FtraceCore.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace ftsim::model {

void FtraceCore::addOps(FtraceOps &ops) {
  // add_ftrace_ops(): ops->next is set before the list head points to it; one publication.
  std::vector<FtraceOps *> list = opsList_;
  list.insert(list.begin(), &ops);
  config_.port->publish("ftrace_ops_list", [&] { opsList_ = list; });
}

bool FtraceCore::removeOps(FtraceOps &ops) {
  auto it = std::find(opsList_.begin(), opsList_.end(), &ops);
  if (it == opsList_.end())
    return false;
  std::vector<FtraceOps *> list = opsList_;
  list.erase(list.begin() + (it - opsList_.begin()));
  config_.port->publish("ftrace_ops_list", [&] { opsList_ = list; });
  return true;
}

// ftrace_ops_get_func(): an ops that does not protect itself from recursion, or needs RCU, is
// called through ftrace_ops_assist_func.
TraceFunction FtraceCore::opsGetListFunc(FtraceOps &ops) const {
  // ftrace_ops_get_list_func(): a dynamic or RCU ops always goes through the list function, which
  // disables preemption around the call (Rostedt's slides, "Dynamic ftrace_ops").
  if (ops.has(OpsFlag::Dynamic) || ops.has(OpsFlag::Rcu))
    return {TraceFunction::Kind::ListFunc, nullptr};
  if (ops.has(OpsFlag::Recursion))
    return {TraceFunction::Kind::AssistFunc, &ops};
  return {TraceFunction::Kind::OpsFunc, &ops};
}

// update_ftrace_function()
void FtraceCore::updateFtraceFunction() {
  TraceFunction func;
  setFunctionTraceOp_ = opsList_.empty() ? &listEnd_ : opsList_.front();
  if (opsList_.empty()) {
    func = TraceFunction{};
  } else if (opsList_.size() == 1) {
    // One ops: the trampoline may call it directly.
    func = opsGetListFunc(*opsList_.front());
  } else {
    setFunctionTraceOp_ = &listEnd_;
    func = {TraceFunction::Kind::ListFunc, nullptr};
  }
  // Before 405e1d834807 function_trace_op took the new value here, long before ftrace_call.
  if (pre405e1d834807_ && functionTraceOp_ != setFunctionTraceOp_)
    publishFunctionTraceOp();
  if (traceFunction_ == func)
    return;
  // With dynamic ftrace the new function takes effect when ftrace_modify_all_code() patches
  // ftrace_call; function_trace_op is published there first.
  traceFunction_ = func;
}

void FtraceCore::registerFunction(FtraceOps &ops) { startup(ops, 0); }
void FtraceCore::unregisterFunction(FtraceOps &ops) { shutdown(ops, 0); }

// ftrace_startup()
void FtraceCore::startup(FtraceOps &ops, unsigned command) {
  if (disabled_)
    fail(ENODEV, fmt::format("ftrace is dead: cannot register {}", ops.name));

  // __register_ftrace_function()
  if (ops.has(OpsFlag::Deleted))
    fail(EINVAL, fmt::format("ftrace_ops {} was deleted", ops.name));
  if (ops.has(OpsFlag::Enabled))
    fail(EBUSY, fmt::format("ftrace_ops {} is already registered", ops.name));
  if (!config_.withRegs) {
    if (ops.has(OpsFlag::SaveRegs) && !ops.has(OpsFlag::SaveRegsIfSupported))
      fail(EINVAL, fmt::format("ftrace_ops {} needs SAVE_REGS, which {} does not support", ops.name,
                               config_.patcher->arch().name()));
    if (ops.has(OpsFlag::SaveRegsIfSupported))
      ops.flags |= OpsFlag::SaveRegs;
  }
  if (!ftraceEnabled_ && ops.has(OpsFlag::Permanent))
    fail(EBUSY, fmt::format("ftrace_ops {} is PERMANENT but ftrace_enabled is 0", ops.name));
  ops.flags |= OpsFlag::Initialized;
  addOps(ops);
  ops.savedFunc = ops.func;
  // ftrace_update_trampoline(): before the records are counted, so that a record this ops alone
  // traces gets FTRACE_FL_TRAMP.
  if (config_.trampolines)
    config_.trampolines->updateTrampoline(ops);
  if (ftraceEnabled_)
    updateFtraceFunction();

  ++startUp_;
  ops.flags |= OpsFlag::Enabled | OpsFlag::Adding;

  const std::optional<FtraceHash> filter =
      ops.funcHash.filter.empty() ? std::nullopt : std::optional<FtraceHash>(ops.funcHash.filter);
  if (int ret = hashUpdateIpModify(ops, FtraceHash{}, filter); ret < 0) {
    // Roll back the registration.
    removeOps(ops);
    if (ftraceEnabled_)
      updateFtraceFunction();
    ops.func = ops.savedFunc;
    --startUp_;
    ops.flags &= ~(OpsFlag::Enabled | OpsFlag::Adding);
    fail(-ret, fmt::format("ftrace_ops {}: IPMODIFY conflict", ops.name));
  }

  if (hashRecUpdate(ops, true))
    command |= UpdateCalls;

  // ftrace_startup_enable()
  if (!(savedFtraceFunc_ == traceFunction_)) {
    savedFtraceFunc_ = traceFunction_;
    command |= UpdateTraceFunc;
  }
  if (command && ftraceEnabled_)
    runUpdateCode(command);

  if (disabled_) {
    removeOps(ops);
    fail(ENODEV, fmt::format("ftrace died while registering {}", ops.name));
  }
  ops.flags &= ~OpsFlag::Adding;
}

// ftrace_shutdown()
void FtraceCore::shutdown(FtraceOps &ops, unsigned command) {
  if (disabled_)
    fail(ENODEV, fmt::format("ftrace is dead: cannot unregister {}", ops.name));
  if (!ops.has(OpsFlag::Enabled))
    fail(EBUSY, fmt::format("ftrace_ops {} is not registered", ops.name));
  if (!removeOps(ops))
    fail(EINVAL, fmt::format("ftrace_ops {} is not on the ops list", ops.name));
  if (ftraceEnabled_)
    updateFtraceFunction();
  ops.func = ops.savedFunc;

  --startUp_;
  // Disabling IPMODIFY never fails.
  const std::optional<FtraceHash> filter =
      ops.funcHash.filter.empty() ? std::nullopt : std::optional<FtraceHash>(ops.funcHash.filter);
  hashUpdateIpModify(ops, filter, FtraceHash{});

  if (hashRecUpdate(ops, false))
    command |= UpdateCalls;
  ops.flags &= ~OpsFlag::Enabled;

  if (!(savedFtraceFunc_ == traceFunction_)) {
    savedFtraceFunc_ = traceFunction_;
    command |= UpdateTraceFunc;
  }

  // Before 0e792b89e680: "If these are dynamic or per_cpu ops, they still need their data freed.
  // Since, function tracing is not currently active, we can just free them without synchronizing
  // all CPUs." — but the list function may still be walking the ops.
  if ((!command || !ftraceEnabled_) && !config_.freePolicy.syncWhenUnchanged) {
    if (ops.has(OpsFlag::Dynamic))
      freeTrampoline(ops);
    return;
  }

  if (command && ftraceEnabled_)
    updateCodeWithout(ops, command);
  waitAndFreeTrampoline(ops);
}

// The code update of ftrace_shutdown(): the trampoline logic looks the removed ops up by its old
// hashes.
void FtraceCore::updateCodeWithout(FtraceOps &ops, unsigned command) {
  ops.flags |= OpsFlag::Removing;
  removedOps_ = &ops;
  ops.oldHash = ops.funcHash;
  runUpdateCode(command);
  // With no ops left, every record must be back to its history flags.
  if (opsList_.empty() && !disabled_)
    checkRecordsCleared();
  ops.oldHash = FtraceOpsHash{};
  removedOps_ = nullptr;
  ops.flags &= ~OpsFlag::Removing;
}

void FtraceCore::checkRecordsCleared() {
  bool leftover = false;
  records_.forEach([&](const DynFtrace &rec) {
    if (rec.flags & ~RecordFlag::NoClear) {
      warn(
          fmt::format("  {} flags:{:x}", formatSymbolOffset(symbolize(rec.ip), rec.ip), rec.flags));
      leftover = true;
    }
  });
  if (leftover)
    kill(); // FTRACE_WARN_ON_ONCE
}

// A dynamic ops may be freed by its owner as soon as this returns: every CPU must be out of the
// list function (synchronize_rcu_tasks_rude) and every task out of any trampoline that called it
// (synchronize_rcu_tasks; preemption is not a quiescent state). Done even when no code changed:
// 0e792b89e680 "ftrace: Fix use-after-free for dynamic ftrace_ops". The history of this wait is
// FtraceConfig::freePolicy (OpsTrampolines.h):
//
//   CPU 0 (unregister)                    CPU 1, task T
//                                         call dynamic_trampoline; save regs ... <preempted>
//   sites: call tramp -> nop (+ syncs)
//   schedule_on_each_cpu()                (CPU 1 runs another task: it "scheduled")
//   free(tramp)                           ... T resumes inside the freed trampoline
//
// Only synchronize_rcu_tasks() waits for T itself to leave (a voluntary switch, user, idle).
void FtraceCore::waitAndFreeTrampoline(FtraceOps &ops) {
  if (!ops.has(OpsFlag::Dynamic))
    return;
  const TrampolineFree free = config_.freePolicy.free;
  // synchronize_rcu_tasks_rude() is schedule_on_each_cpu() (kernel/rcu/tasks.h, 6.1 and 6.12).
  if (free == TrampolineFree::SchedSync || free == TrampolineFree::Rude ||
      free == TrampolineFree::RcuTasks)
    config_.port->scheduleOnEachCpu();
  if (free == TrampolineFree::RcuTasks || free == TrampolineFree::RcuTasksClassic)
    config_.port->synchronizeRcuTasks();
  freeTrampoline(ops);
}

// ftrace_trampoline_free() -> arch_ftrace_trampoline_free(): only what ftrace allocated.
void FtraceCore::freeTrampoline(FtraceOps &ops) {
  if (ops.has(OpsFlag::AllocTramp) && ops.trampoline) {
    config_.port->freeText(ops.trampoline, ops.trampolineSize);
    ops.trampoline = 0;
    ops.trampolineSize = 0;
  }
}

void FtraceCore::setFtraceEnabled(bool enabled) {
  // ftrace_enable_sysctl()
  if (enabled == ftraceEnabled_ || disabled_)
    return;
  if (enabled) {
    ftraceEnabled_ = true;
    if (!opsList_.empty())
      updateFtraceFunction();
    if (startUp_) {
      unsigned command = UpdateCalls;
      if (!(savedFtraceFunc_ == traceFunction_)) {
        savedFtraceFunc_ = traceFunction_;
        command |= UpdateTraceFunc;
      }
      runUpdateCode(command);
    }
    return;
  }
  for (FtraceOps *op : opsList_)
    if (op->has(OpsFlag::Permanent))
      fail(EBUSY, fmt::format("ftrace_ops {} is PERMANENT", op->name));
  ftraceEnabled_ = false;
  traceFunction_ = TraceFunction{};
  if (startUp_)
    runUpdateCode(DisableCalls);
}

} // namespace ftsim::model
