#pragma once
// The tracers that sit on top of the ftrace core, ISA-neutral: the per-CPU ring buffer and the
// `trace` file of the function and function_graph tracers (kernel/trace/trace.c,
// trace_output.c, trace_functions_graph.c), the function profiler (kernel/trace/ftrace.c,
// trace_stat/function<cpu>) and the stack tracer (kernel/trace/trace_stack.c). Formats are those
// of Linux 6.6; each formatting function cites the kernel function it transcribes.
//
// The tracers never see the machine: the integration (kernel/Kernel) tells them who is running
// (TraceContext), what time it is, and what the guest stack holds (StackSample).

#include "ftsim/model/FtraceCore.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::model {

// Who produced an event (struct trace_entry: pid, flags, preempt_count) and when.
struct TraceContext {
  unsigned cpu = 0;
  int pid = 0;      // 0: the CPU's idle task
  std::string comm; // "<idle>" for pid 0
  std::uint64_t timestampNs = 0;
  bool irqsOff = false;
  bool needResched = false;
  bool hardirq = false;
  bool softirq = false;
  unsigned preemptCount = 0; // low nibble: preempt depth; high nibble: migrate-disable depth
};

enum class TraceRecordKind { Function, GraphEntry, GraphReturn, Stack };

// One ring-buffer event (TRACE_FN, TRACE_GRAPH_ENT, TRACE_GRAPH_RET, TRACE_STACK).
struct TraceRecord {
  TraceRecordKind kind = TraceRecordKind::Function;
  TraceContext context;
  std::uint64_t ip = 0;       // function (or call site) address
  std::uint64_t parentIp = 0; // Function: the caller
  int depth = 0;              // graph: ret_stack depth
  std::uint64_t callTime = 0; // GraphReturn
  std::uint64_t returnTime = 0;
  std::vector<std::uint64_t> stack; // Stack: return addresses, innermost first
};

// The per-CPU ring buffers of one trace array, in overwrite mode: when a CPU's buffer is full the
// oldest event is dropped (entries-written keeps counting).
class RingBuffer {
public:
  RingBuffer(unsigned cpus, std::size_t entriesPerCpu);
  void write(const TraceRecord &record);
  void reset();                // `echo > trace`
  std::size_t entries() const; // entries-in-buffer
  std::size_t written() const; // entries-written
  unsigned cpus() const { return static_cast<unsigned>(buffers_.size()); }
  void resize(std::size_t entriesPerCpu);
  std::size_t capacity() const { return capacity_; }
  const std::deque<TraceRecord> &cpuBuffer(unsigned cpu) const { return buffers_.at(cpu); }
  // Every event, merged across CPUs by timestamp (ties: lower CPU first), as the trace
  // iterator reads them; each with its index in its CPU's buffer.
  struct Position {
    unsigned cpu;
    std::size_t index;
  };
  std::vector<Position> merged() const;

private:
  std::vector<std::deque<TraceRecord>> buffers_;
  std::vector<std::size_t> written_;
  std::size_t capacity_;
};

// How addresses print (%ps / %pS).
using SymbolName = std::function<std::string(std::uint64_t addr, bool withOffset)>;

// --- Output formats
// `cat trace` for the function tracer and nop (trace_default_header + trace_fn_trace).
std::string formatFunctionTrace(const RingBuffer &buffer, std::string_view tracerName,
                                const SymbolName &symbol);
// `cat trace` for function_graph (print_graph_headers_flags + print_graph_function_flags) with
// the default options: CPU, overhead, duration, irqs.
std::string formatGraphTrace(const RingBuffer &buffer, const SymbolName &symbol);
// trace_print_graph_duration(): "0.070 us " padded to the duration column.
std::string graphDuration(std::uint64_t ns);
// trace_find_mark(): '$' '@' '*' '#' '!' '+' or ' '.
char overheadMark(std::uint64_t ns);

// --- Function profiler (kernel/trace/ftrace.c, CONFIG_FUNCTION_PROFILER with the graph tracer)
class FunctionProfiler {
public:
  explicit FunctionProfiler(unsigned cpus) : stats_(cpus) {}
  void reset();
  // function_profile_call(): a hit, counted at function entry.
  void hit(unsigned cpu, std::uint64_t ip);
  // profile_graph_return(): the call's duration (calltime to rettime).
  void time(unsigned cpu, std::uint64_t ip, std::uint64_t ns);
  // trace_stat/function<cpu> (function_stat_headers + function_stat_show, sorted by time).
  std::string show(unsigned cpu, const SymbolName &symbol) const;
  std::uint64_t hits(unsigned cpu, std::uint64_t ip) const;

private:
  struct Entry {
    std::uint64_t ip = 0;
    std::uint64_t counter = 0;
    std::uint64_t time = 0;
    std::uint64_t timeSquared = 0;
  };
  std::vector<std::vector<Entry>> stats_; // per CPU, in creation order (ftrace_profile pages)
  Entry &entry(unsigned cpu, std::uint64_t ip);
};

// --- Stack tracer (kernel/trace/trace_stack.c) -------------------------------------------------
// What the stack held when a traced function was entered.
struct StackSample {
  std::uint64_t depth = 0; // bytes from the stack pointer at the call to the stack top
  // Return addresses found on the stack, innermost first, with their distance to the top.
  struct Frame {
    std::uint64_t returnAddress;
    std::uint64_t bytesToTop;
  };
  std::vector<Frame> frames;
};

class StackTracer {
public:
  // check_stack(): a new maximum replaces the recorded stack.
  void check(std::uint64_t ip, const StackSample &sample);
  std::uint64_t maxSize() const { return maxSize_; }
  void setMaxSize(std::uint64_t size) { maxSize_ = size; }
  // stack_trace (t_show), stack_max_size
  std::string show(bool enabled, const SymbolName &symbol) const;
  struct Entry {
    std::uint64_t address;
    std::uint64_t index; // stack_trace_index[]: bytes from this frame to the top
  };
  const std::vector<Entry> &entries() const { return entries_; }

private:
  std::uint64_t maxSize_ = 0;
  std::vector<Entry> entries_;
};

} // namespace ftsim::model
