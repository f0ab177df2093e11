#pragma once
// A simulated tracefs (/sys/kernel/tracing) over one FtraceCore: the files a user writes to choose
// a tracer and its filters, and reads to see the trace. Writes that change what is traced
// register, unregister or re-filter ftrace_ops, so they patch text through the core: call them
// from the machine's patcher to make every store a scheduled event (kernel::Kernel does).
//
// Files: current_tracer, available_tracers, tracing_on, trace, buffer_size_kb,
// set_ftrace_filter, set_ftrace_notrace, set_graph_function, set_graph_notrace,
// available_filter_functions, enabled_functions, function_profile_enabled,
// trace_stat/function<cpu>, stack_trace, stack_max_size, stack_trace_filter,
// stack_tracer_enabled (also as /proc/sys/kernel/stack_tracer_enabled).
// Errors are FtraceError (a FatalError) naming the file and the value, with the kernel's errno.

#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/TraceArray.h"
#include "ftsim/model/Tracers.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ftsim::model {

// What the tracers need from the machine, provided by the integration.
struct TraceEnvironment {
  unsigned cpus = 1;
  // The context of the CPU running the current callback (cpu, pid, comm, timestamp, flags).
  std::function<TraceContext()> context;
  // The current task's stack when a traced function at `ip` is entered (the callback's pt_regs
  // stack pointer is the traced function's).
  std::function<StackSample(std::uint64_t ip)> sampleStack;
  // %ps / %pS
  SymbolName symbol;
  // ftrace_graph_func(ip, parent_ip, op, fregs) of a release whose graph tracer is an ops
  // (CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS, v6.x): graph_ops calls it for the traced function at
  // `ip`, and it does prepare_ftrace_return()'s work on the current callback's return address.
  // Empty: graph_ops.func is ftrace_stub and the patched ftrace_graph_call enters the graph
  // tracer (v4.19 and before).
  std::function<void(std::uint64_t ip)> graphFunc;
};

class TraceFs {
public:
  TraceFs(FtraceCore &core, TraceEnvironment environment, std::size_t bufferEntriesPerCpu = 16384);
  ~TraceFs();
  TraceFs(const TraceFs &) = delete;
  TraceFs &operator=(const TraceFs &) = delete;

  // `echo "$value" > file` (append: `>>`). FtraceError on a bad file or value.
  void write(std::string_view file, std::string_view value, bool append = false);
  // `cat file`
  std::string read(std::string_view file) const;

  // --- What the guest trampolines report (called from the callbacks' hypercalls) ---------------
  // The function_graph entry (prepare_ftrace_return -> function_graph_enter): `depth` is the
  // task's return-stack depth. Returns the users that want the return hooked (0: do not hook).
  unsigned graphEntry(std::uint64_t func, int depth, const TraceContext &context);
  // ftrace_return_to_handler -> ftrace_graph_return(): `users` is what graphEntry returned.
  void graphReturn(std::uint64_t func, int depth, std::uint64_t callTime, unsigned users,
                   const TraceContext &context);
  static constexpr unsigned GraphUserTracer = 1;
  static constexpr unsigned GraphUserProfiler = 2;

  // --- State, for tests and the integration ------------------------------------------------------
  RingBuffer &buffer() { return buffer_; }

private:
  [[noreturn]] void invalid(std::string_view file, std::string_view value,
                            std::string_view why) const;
  // `value` as a decimal number; invalid() when it is not one.
  unsigned long number(std::string_view file, std::string_view value) const;
  // set_ftrace_filter, set_ftrace_notrace (the global trace array) and stack_trace_filter.
  void writeFilter(std::string_view file, std::string_view value, bool append);
  void setProfiling(bool enable);    // function_profile_enabled
  void setStackTracing(bool enable); // stack_tracer_enabled
  void setTracer(std::string_view name);
  void stopTracer();
  void startTracer(const std::string &name);
  void syncGraphOps();
  void updateGraphCaller();
  void writeGraphHash(bool notrace, std::string_view value, bool append);
  std::string readGraphHash(bool notrace) const;
  bool graphAddr(std::uint64_t func, int depth, int pid);

  FtraceCore &core_;
  TraceEnvironment env_;
  RingBuffer buffer_;
  TraceArray global_; // tr->ops: set_ftrace_filter / set_ftrace_notrace, function probes
  TraceArray stack_;  // trace_ops of the stack tracer: stack_trace_filter
  // graph_ops, the one fgraph user's ops (function_graph tracer or profiler); it shares the
  // global filter (func_hash = &global_ops.local_hash), mirrored here after every write.
  FtraceOps graphOps_;
  std::string currentTracer_ = "nop";
  bool profileEnabled_ = false;
  bool stackEnabled_ = false;
  bool graphCallerEnabled_ = false;
  FunctionProfiler profiler_;
  StackTracer stackTracer_;
  FtraceHash graphHash_;             // set_graph_function (ftrace_graph_hash)
  FtraceHash graphNotraceHash_;      // set_graph_notrace
  std::map<int, int> graphBitDepth_; // per pid: TRACE_GRAPH_BIT and its depth
};

} // namespace ftsim::model
