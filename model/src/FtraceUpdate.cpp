// The update engine: ftrace_run_update_code(), ftrace_modify_all_code(), ftrace_replace_code()
// applying ftrace_check_record() to every record, and the graph caller's jump.

#include "ftsim/model/FtraceCore.h"

#include <fmt/format.h>

#include <cerrno>

namespace ftsim::model {

// ftrace_run_update_code(): x86 and powerpc both patch without stop_machine.
void FtraceCore::runUpdateCode(unsigned command) {
  config_.patcher->prepare();
  modifyAllCode(command);
  config_.patcher->postProcess();
}

void FtraceCore::runModifyCode(FtraceOps &ops, unsigned command, const FtraceOpsHash &oldHash) {
  ops.flags |= OpsFlag::Modifying;
  ops.oldHash = oldHash;
  runUpdateCode(command);
  ops.oldHash = FtraceOpsHash{};
  ops.flags &= ~OpsFlag::Modifying;
}

bool FtraceCore::updateFtraceFunc(const TraceFunction &function) {
  // update_ftrace_func(): avoid patching when nothing changed.
  if (function == patchedFunction_)
    return true;
  patchedFunction_ = function;
  return config_.patcher->updateFtraceFunc(function).ok();
}

// ftrace_modify_all_code()
void FtraceCore::modifyAllCode(unsigned command) {
  const bool update = command & UpdateTraceFunc;
  if (pre59338f754a55_) {
    // Before 59338f754a55: sites first, then ftrace_call. A site that starts calling
    // ftrace_caller while ftrace_call still calls a single ops directly runs that ops for a
    // function outside its filter.
    if (command & UpdateCalls)
      replaceCode(true);
    else if (command & DisableCalls)
      replaceCode(false);
    if (disabled_ || !update)
      return;
    if (traceFunction_.kind != TraceFunction::Kind::ListFunc && !pre405e1d834807_) {
      publishFunctionTraceOp();
      config_.port->syncCores();
    }
    if (!updateFtraceFunc(traceFunction_))
      kill();
    return;
  }
  // If ftrace_caller calls an ops directly, that ops must only see the functions it expects.
  // Switch to the list function first, which checks every ops' hashes, then move the call sites,
  // and only then switch to the final function (59338f754a55 "ftrace: Fix a slight race in
  // modifying what function callback gets traced").
  //
  //   CPU 0 (patcher)                       CPU 1
  //   ftrace_call -> list_func
  //   patch sites for the new ops           enters a newly patched site
  //                                         list_func tests hashes: only the right ops runs
  //   function_trace_op = ops; sync
  //   ftrace_call -> ops->func
  if (update && !updateFtraceFunc({TraceFunction::Kind::ListFunc, nullptr})) {
    kill();
    return;
  }
  if (command & UpdateCalls)
    replaceCode(true);
  else if (command & DisableCalls)
    replaceCode(false);
  if (disabled_)
    return;
  if (update && traceFunction_.kind != TraceFunction::Kind::ListFunc) {
    if (!pre405e1d834807_) { // before 405e1d834807 update_ftrace_function() had set it already
      publishFunctionTraceOp();
      config_.port->syncCores();  // smp_call_function(ftrace_sync_ipi): every CPU sees the op
      if (functionTraceOpWait_) { // the hypothesis: no CPU or task still holds the old op
        config_.port->scheduleOnEachCpu();
        config_.port->synchronizeRcuTasks();
      }
    }
    if (!updateFtraceFunc(traceFunction_))
      kill();
  }
}

// function_trace_op = set_function_trace_op, as one publication.
void FtraceCore::publishFunctionTraceOp() {
  config_.port->publish("function_trace_op", [this] {
    functionTraceOp_ = setFunctionTraceOp_;
    if (config_.functionTraceOpChanged)
      config_.functionTraceOpChanged(*functionTraceOp_);
  });
}

// ftrace_replace_code(): verify every site first (arch/x86/kernel/ftrace.c), then hand each
// record's action to the arch, then complete the batch.
void FtraceCore::replaceCode(bool enable) {
  if (disabled_)
    return;
  ArchPatcher &patcher = *config_.patcher;
  const unsigned siteSize = patcher.arch().siteSize();

  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      DynFtrace probe = rec;
      const CheckResult check = checkRecord(probe, enable, false, config_.records);
      arch::Bytes old;
      switch (check.action) {
      case UpdateAction::Ignore:
        continue;
      case UpdateAction::MakeCall:
        old = patcher.nopBytes(rec);
        break;
      case UpdateAction::ModifyCall:
      case UpdateAction::MakeNop:
        old = patcher.callBytes(rec, addrCurr(rec));
        break;
      }
      if (disabled_)
        return;
      // ftrace_verify_code()
      arch::Bytes current(siteSize);
      if (!config_.port->readText(rec.ip, current)) {
        ftraceBug(PatchStatus::ReadFault, check.bugType, rec, old);
        return;
      }
      if (current != old) {
        ftraceBug(PatchStatus::Mismatch, check.bugType, rec, old);
        return;
      }
    }
  }

  patcher.beginBatch();
  bool failed = false;
  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      DynFtrace probe = rec;
      const UpdateAction action = checkRecord(probe, enable, false, config_.records).action;
      if (action == UpdateAction::Ignore)
        continue;
      // Addresses are taken before ftrace_update_record() changes the _EN flags.
      const std::uint64_t newAddr = action == UpdateAction::MakeNop ? 0 : addrNew(rec);
      const std::uint64_t oldAddr = action == UpdateAction::MakeCall ? 0 : addrCurr(rec);
      if (disabled_) {
        failed = true;
        break;
      }
      const CheckResult check = checkRecord(rec, enable, true, config_.records);
      PatchOutcome outcome;
      switch (check.action) {
      case UpdateAction::Ignore:
        continue;
      case UpdateAction::MakeCall:
        outcome = patcher.makeCall(rec, newAddr);
        break;
      case UpdateAction::MakeNop:
        outcome = patcher.makeNop(rec, oldAddr);
        break;
      case UpdateAction::ModifyCall:
        outcome = patcher.modifyCall(rec, oldAddr, newAddr);
        break;
      }
      if (!outcome.ok()) {
        ftraceBug(outcome.status, check.bugType, rec, outcome.expected);
        failed = true;
        break;
      }
    }
    if (failed)
      break;
  }
  patcher.finishBatch();
}

// ftrace_enable_ftrace_graph_caller / ftrace_disable_ftrace_graph_caller (ftrace_mod_jmp() of
// ftrace_graph_call, text_poke_bp() on x86): the core decides the jump, the arch patcher makes it.
void FtraceCore::setGraphCaller(bool enable) {
  const GraphCallSite &graph = config_.graphCall;
  if (!graph.site)
    return;
  arch::Bytes current(graph.off.size());
  if (!config_.port->readText(graph.site, current))
    FTSIM_PANIC("ftrace_graph_call at {:#x} is not mapped", graph.site);
  arch::Bytes wanted = graph.off;
  if (enable) {
    const arch::EncodeResult jmp = config_.patcher->arch().jump(graph.site, graph.caller);
    if (!jmp.ok)
      FTSIM_PANIC("ftrace_graph_call: {}", jmp.error);
    wanted = jmp.bytes;
  }
  if (current == wanted)
    return;
  const PatchOutcome outcome = config_.patcher->modifyCode(graph.site, current, wanted);
  if (!outcome.ok())
    FTSIM_PANIC("ftrace_graph_call at {:#x}: {}", graph.site, toString(outcome.status));
}

} // namespace ftsim::model
