#include "ftsim/model/TraceFunctionStubs.h"

#include "ftsim/arch/Error.h"
#include "ftsim/model/FtraceOps.h"

namespace ftsim::model {

TraceFunctionStubs::TraceFunctionStubs(TraceFunctionAddresses addresses)
    : addresses_(std::move(addresses)) {}

std::uint64_t TraceFunctionStubs::addressOf(const TraceFunction &function) {
  switch (function.kind) {
  case TraceFunction::Kind::Stub:
    return addresses_.stub;
  case TraceFunction::Kind::ListFunc:
    return addresses_.listFunc;
  case TraceFunction::Kind::OpsFunc:
  case TraceFunction::Kind::AssistFunc:
    break;
  }
  if (function.kind == TraceFunction::Kind::OpsFunc &&
      (!function.ops || function.ops->has(OpsFlag::Stub)))
    return addresses_.stub; // graph_ops.func = ftrace_stub
  for (const auto &[stub, target] : bound_)
    if (target == function)
      return stub;
  if (bound_.size() == addresses_.callbackStubs.size())
    FTSIM_PANIC("out of callback stubs ({} distinct trace functions)", bound_.size());
  const std::uint64_t stub = addresses_.callbackStubs[bound_.size()];
  bound_[stub] = function;
  return stub;
}

const TraceFunction *TraceFunctionStubs::functionAt(std::uint64_t stub) const {
  auto it = bound_.find(stub);
  return it == bound_.end() ? nullptr : &it->second;
}

} // namespace ftsim::model
