// What the trampolines run at ftrace_call: recursion protection, __ftrace_ops_list_func,
// ftrace_ops_assist_func and the single ops' function.

#include "ftsim/model/FtraceCore.h"

#include <fmt/format.h>

namespace ftsim::model {

// trace_test_and_set_recursion(): one bit per context level per task, plus a transition bit that
// tolerates one level of recursion while the context (irq entry) is not yet accounted for.
int FtraceCore::testAndSetRecursion(const ExecutionContext &context) {
  constexpr int transitionBit = 4;
  const std::int64_t key = context.task >= 0 ? context.task : -1 - std::int64_t{context.cpu};
  std::uint32_t &val = recursion_[key];
  int bit = 0;
  switch (context.level) {
  case ContextLevel::Nmi:
    bit = 0;
    break;
  case ContextLevel::Irq:
    bit = 1;
    break;
  case ContextLevel::Softirq:
    bit = 2;
    break;
  case ContextLevel::Normal:
    bit = 3;
    break;
  }
  if (val & (1u << bit)) {
    bit = transitionBit;
    if (val & (1u << bit))
      return -1;
  }
  val |= 1u << bit;
  return bit;
}

void FtraceCore::clearRecursion(const ExecutionContext &context, int bit) {
  const std::int64_t key = context.task >= 0 ? context.task : -1 - std::int64_t{context.cpu};
  recursion_[key] &= ~(1u << bit);
}

void FtraceCore::listFunc(CallSite &site) {
  // The list is read once, as an RCU reader would; a callback may (un)register ops.
  const std::vector<FtraceOps *> list = opsList_;
  listFunc(site, list);
}

void FtraceCore::listFunc(CallSite &site, const std::vector<FtraceOps *> &list) {
  const int bit = testAndSetRecursion(site.context);
  if (bit < 0) {
    ++recursionsBlocked_;
    return;
  }
  for (FtraceOps *op : list) {
    if (op->has(OpsFlag::Stub))
      continue;
    if (opsTest(*op, site.ip, site.regs != nullptr)) {
      if (!op->func) {
        warn(fmt::format("op={} has no func", op->name));
        kill();
        break;
      }
      op->func(site.ip, site.parentIp, *op, site.regs);
    }
  }
  clearRecursion(site.context, bit);
}

void FtraceCore::assistFunc(FtraceOps &ops, CallSite &site) {
  const int bit = testAndSetRecursion(site.context);
  if (bit < 0) {
    ++recursionsBlocked_;
    return;
  }
  if (ops.func)
    ops.func(site.ip, site.parentIp, ops, site.regs);
  clearRecursion(site.context, bit);
}

void FtraceCore::invoke(const TraceFunction &function, CallSite &site) {
  switch (function.kind) {
  case TraceFunction::Kind::Stub:
    return;
  case TraceFunction::Kind::ListFunc:
    listFunc(site);
    return;
  case TraceFunction::Kind::OpsFunc:
    // The trampoline passes function_trace_op as it loaded it (or, when it did not, whatever it
    // is at this instant).
    if (function.ops && function.ops->func)
      function.ops->func(site.ip, site.parentIp, site.op ? *site.op : *functionTraceOp_, site.regs);
    return;
  case TraceFunction::Kind::AssistFunc:
    if (function.ops)
      assistFunc(*function.ops, site);
    return;
  }
}

} // namespace ftsim::model
