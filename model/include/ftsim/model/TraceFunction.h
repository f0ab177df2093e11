#pragma once
// What the `call` at ftrace_call inside ftrace_caller / ftrace_regs_caller targets
// (ftrace_trace_function, chosen by update_ftrace_function() in kernel/trace/ftrace.c).

#include <string>

namespace ftsim::model {

class FtraceOps;

struct TraceFunction {
  enum class Kind {
    Stub,       // ftrace_stub: nothing registered
    ListFunc,   // ftrace_ops_list_func: test every ops' hashes
    OpsFunc,    // the single ops' func, called directly with function_trace_op
    AssistFunc, // ftrace_ops_assist_func: single ops that needs recursion/RCU protection
  };
  Kind kind = Kind::Stub;
  FtraceOps *ops = nullptr; // for OpsFunc and AssistFunc

  bool operator==(const TraceFunction &) const = default;
  std::string describe() const; // "ftrace_stub", "ftrace_ops_list_func", "function_trace_call"...
};

} // namespace ftsim::model
