#include "ftsim/model/TraceFs.h"

#include "ftsim/arch/OneLine.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>

namespace ftsim::model {
namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// The value as an error message quotes it: trimmed, on one line whatever was written.
std::string shown(std::string_view value) { return oneLine(trimmed(value)); }

// kstrtoul_from_user(..., 10, ...) of a boolean-ish file: 0 or 1 (tracing_on, ...).
std::optional<unsigned long> parseNumber(std::string_view text) {
  text = trimmed(text);
  if (text.empty())
    return std::nullopt;
  unsigned long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + static_cast<unsigned long>(c - '0');
  }
  return value;
}

constexpr std::string_view kStatPrefix = "trace_stat/function";

} // namespace

TraceFs::TraceFs(FtraceCore &core, TraceEnvironment environment, std::size_t bufferEntriesPerCpu)
    : core_(core), env_(std::move(environment)), buffer_(env_.cpus, bufferEntriesPerCpu),
      global_(core, "global"), stack_(core, "stack"),
      graphOps_("graph_ops", {},
                OpsFlag::Initialized |
                    (env_.graphFunc ? 0u : OpsFlag::Stub)), // FTRACE_OPS_GRAPH_STUB
      profiler_(env_.cpus) {
  if (!env_.context || !env_.symbol)
    FTSIM_PANIC("TraceFs needs a context and a symbol callback");
  // function_trace_call() (kernel/trace/trace_functions.c)
  global_.ops().func = [this](std::uint64_t ip, std::uint64_t parentIp, FtraceOps &,
                              arch::GuestContext *) {
    if (!global_.tracingOn())
      return;
    TraceRecord record;
    record.kind = TraceRecordKind::Function;
    record.context = env_.context();
    record.ip = ip;
    record.parentIp = parentIp;
    buffer_.write(record);
  };
  if (env_.graphFunc) // graph_ops.func = ftrace_graph_func (kernel/trace/fgraph.c)
    graphOps_.func = [this](std::uint64_t ip, std::uint64_t, FtraceOps &, arch::GuestContext *) {
      env_.graphFunc(ip);
    };
  else // graph_ops.func = ftrace_stub: the work is done by ftrace_graph_caller.
    graphOps_.func = [](std::uint64_t, std::uint64_t, FtraceOps &, arch::GuestContext *) {};
  // stack_trace_call() (kernel/trace/trace_stack.c)
  stack_.ops().func = [this](std::uint64_t ip, std::uint64_t, FtraceOps &, arch::GuestContext *) {
    if (env_.sampleStack)
      stackTracer_.check(ip, env_.sampleStack(ip));
  };
  // The :stacktrace probe: __trace_stack() into the ring buffer.
  global_.actions().stackTrace = [this](std::uint64_t ip) {
    TraceRecord record;
    record.kind = TraceRecordKind::Stack;
    record.context = env_.context();
    record.ip = ip;
    if (env_.sampleStack)
      for (const auto &frame : env_.sampleStack(ip).frames)
        record.stack.push_back(frame.returnAddress);
    buffer_.write(record);
  };
}

TraceFs::~TraceFs() = default;

void TraceFs::invalid(std::string_view file, std::string_view value, std::string_view why) const {
  throw FtraceError(EINVAL,
                    fmt::format("tracefs: echo '{}' > {}: {} (-EINVAL)", shown(value), file, why));
}

// --- tracers -------------------------------------------------------------------------------------

void TraceFs::stopTracer() {
  if (currentTracer_ == "function") {
    core_.unregisterFunction(global_.ops()); // function_trace_reset -> tracing_stop_function_trace
  } else if (currentTracer_ == "function_graph") {
    currentTracer_ = "nop";
    updateGraphCaller(); // graph_trace_reset -> unregister_ftrace_graph
  }
  currentTracer_ = "nop";
}

void TraceFs::startTracer(const std::string &name) {
  buffer_.reset(); // tracer_init() -> tracing_reset_online_cpus()
  currentTracer_ = name;
  if (name == "function")
    core_.registerFunction(global_.ops()); // function_trace_init -> tracing_start_function_trace
  else if (name == "function_graph")
    updateGraphCaller(); // graph_trace_init -> register_ftrace_graph
}

// tracing_set_tracer()
void TraceFs::setTracer(std::string_view name) {
  if (name != "nop" && name != "function" && name != "function_graph")
    invalid("current_tracer", name, "no such tracer (available: function_graph function nop)");
  if (name == currentTracer_)
    return;
  if (name == "function_graph" && profileEnabled_)
    throw FtraceError(EBUSY, "tracefs: echo function_graph > current_tracer: the function "
                             "profiler holds the function graph hook (-EBUSY)");
  stopTracer();
  startTracer(std::string(name));
}

// graph_ops follows the global filter (func_hash = &global_ops.local_hash in fgraph.c).
void TraceFs::syncGraphOps() {
  const FtraceOpsHash &global = global_.ops().funcHash;
  if (!(graphOps_.funcHash.filter == global.filter))
    core_.replaceHash(graphOps_, true, global.filter);
  if (!(graphOps_.funcHash.notrace == global.notrace))
    core_.replaceHash(graphOps_, false, global.notrace);
}

// register_ftrace_graph / unregister_ftrace_graph for the single fgraph user: ftrace_startup(
// &graph_ops, FTRACE_START_FUNC_RET) patches the sites first, then ftrace_graph_call (which a
// release whose graph tracer is an ops does not have: setGraphCaller finds no site).
void TraceFs::updateGraphCaller() {
  const bool wanted = currentTracer_ == "function_graph" || profileEnabled_;
  if (wanted == graphCallerEnabled_)
    return;
  if (wanted) {
    syncGraphOps();
    core_.registerFunction(graphOps_);
    core_.setGraphCaller(true);
  } else {
    core_.unregisterFunction(graphOps_);
    core_.setGraphCaller(false);
  }
  graphCallerEnabled_ = wanted;
}

// --- set_graph_function

void TraceFs::writeGraphHash(bool notrace, std::string_view value, bool append) {
  FtraceHash &target = notrace ? graphNotraceHash_ : graphHash_;
  FtraceHash hash = append ? target : FtraceHash{};
  std::size_t pos = 0;
  const std::string_view file = notrace ? "set_graph_notrace" : "set_graph_function";
  while (pos < value.size()) {
    while (pos < value.size() && std::isspace(static_cast<unsigned char>(value[pos])))
      ++pos;
    std::size_t end = pos;
    while (end < value.size() && !std::isspace(static_cast<unsigned char>(value[end])))
      ++end;
    if (end == pos)
      break;
    // ftrace_graph_set_hash(): a pattern that matches nothing is -EINVAL.
    const std::string_view pattern = value.substr(pos, end - pos);
    if (!core_.matchRecords(hash, pattern, std::nullopt))
      invalid(file, pattern, "matches no traceable function");
    pos = end;
  }
  target = std::move(hash);
}

std::string TraceFs::readGraphHash(bool notrace) const {
  const FtraceHash &hash = notrace ? graphNotraceHash_ : graphHash_;
  if (hash.empty())
    return notrace ? "#### no functions disabled ####\n" : "#### all functions enabled ####\n";
  std::string out;
  core_.records().forEach([&](const DynFtrace &rec) {
    if (hash.contains(rec.ip))
      out += core_.recordName(rec) + "\n";
  });
  return out;
}

// --- files

unsigned long TraceFs::number(std::string_view file, std::string_view value) const {
  const auto n = parseNumber(value);
  if (!n)
    invalid(file, value, "not a number");
  return *n;
}

void TraceFs::writeFilter(std::string_view file, std::string_view value, bool append) {
  const FilterFileKind kind =
      file == "set_ftrace_notrace" ? FilterFileKind::Notrace : FilterFileKind::Filter;
  TraceArray &array = file == "stack_trace_filter" ? stack_ : global_;
  // The global filter also decides the graph ops' hash, whether or not the write succeeded.
  const bool syncGraph = &array == &global_ && graphCallerEnabled_;
  try {
    array.write(kind, value, append);
  } catch (const FtraceError &error) {
    if (syncGraph)
      syncGraphOps();
    throw FtraceError(error.errnoValue(), fmt::format("{}: {}", file, error.what()));
  }
  if (syncGraph)
    syncGraphOps();
}

void TraceFs::setProfiling(bool enable) {
  if (enable == profileEnabled_)
    return;
  if (enable && currentTracer_ == "function_graph")
    throw FtraceError(EBUSY, "tracefs: echo 1 > function_profile_enabled: the function_graph "
                             "tracer holds the function graph hook (-EBUSY)");
  if (enable)
    profiler_.reset(); // ftrace_profile_init() resets the per-CPU stats
  profileEnabled_ = enable;
  updateGraphCaller();
}

// stack_trace_sysctl(): register_ftrace_function(&trace_ops) / unregister
void TraceFs::setStackTracing(bool enable) {
  if (enable == stackEnabled_)
    return;
  if (enable)
    core_.registerFunction(stack_.ops());
  else
    core_.unregisterFunction(stack_.ops());
  stackEnabled_ = enable;
}

void TraceFs::write(std::string_view file, std::string_view value, bool append) {
  if (file == "current_tracer")
    return setTracer(trimmed(value));
  if (file == "set_ftrace_filter" || file == "set_ftrace_notrace" || file == "stack_trace_filter")
    return writeFilter(file, value, append);
  if (file == "set_graph_function" || file == "set_graph_notrace")
    return writeGraphHash(file == "set_graph_notrace", value, append);
  if (file == "trace") {
    if (!append)
      buffer_.reset(); // O_TRUNC: tracing_reset_online_cpus()
    return;
  }
  if (file == "tracing_on")
    return global_.setTracingOn(number(file, value) !=
                                0); // rb_simple_write(): tracer_tracing_on/off
  if (file == "buffer_size_kb") {
    const auto kb = parseNumber(value);
    if (!kb || *kb == 0)
      invalid(file, value, "not a positive number");
    // A function event takes 32 bytes of ring buffer (header, ip, parent_ip).
    buffer_.resize(*kb * 1024 / 32);
    return;
  }
  if (file == "function_profile_enabled")
    return setProfiling(number(file, value) != 0);
  if (file == "stack_tracer_enabled" || file == "/proc/sys/kernel/stack_tracer_enabled")
    return setStackTracing(number(file, value) != 0);
  if (file == "stack_max_size")
    return stackTracer_.setMaxSize(number(file, value));
  if (file == "available_tracers" || file == "available_filter_functions" ||
      file == "enabled_functions" || file == "stack_trace" || file.starts_with(kStatPrefix))
    throw FtraceError(EACCES, fmt::format("tracefs: echo '{}' > {}: read-only file (-EACCES)",
                                          shown(value), file));
  throw FtraceError(ENOENT, fmt::format("tracefs: {}: no such file (-ENOENT)", file));
}

std::string TraceFs::read(std::string_view file) const {
  if (file == "current_tracer")
    return currentTracer_ + "\n";
  if (file == "available_tracers")
    return "function_graph function nop\n";
  if (file == "set_ftrace_filter")
    return global_.read(FilterFileKind::Filter);
  if (file == "set_ftrace_notrace")
    return global_.read(FilterFileKind::Notrace);
  if (file == "stack_trace_filter")
    return stack_.read(FilterFileKind::Filter);
  if (file == "set_graph_function")
    return readGraphHash(false);
  if (file == "set_graph_notrace")
    return readGraphHash(true);
  if (file == "available_filter_functions")
    return core_.availableFilterFunctions();
  if (file == "enabled_functions")
    return core_.enabledFunctions();
  if (file == "tracing_on")
    return global_.tracingOn() ? "1\n" : "0\n";
  if (file == "buffer_size_kb")
    return fmt::format("{}\n", buffer_.capacity() * 32 / 1024);
  if (file == "function_profile_enabled")
    return profileEnabled_ ? "1\n" : "0\n";
  if (file == "stack_tracer_enabled" || file == "/proc/sys/kernel/stack_tracer_enabled")
    return stackEnabled_ ? "1\n" : "0\n";
  if (file == "stack_max_size")
    return fmt::format("{}\n", stackTracer_.maxSize());
  if (file == "stack_trace")
    return stackTracer_.show(stackEnabled_, env_.symbol);
  if (file == "trace")
    return currentTracer_ == "function_graph"
               ? formatGraphTrace(buffer_, env_.symbol)
               : formatFunctionTrace(buffer_, currentTracer_, env_.symbol);
  if (file.starts_with(kStatPrefix)) {
    const auto cpu = parseNumber(file.substr(kStatPrefix.size()));
    if (!cpu || *cpu >= env_.cpus)
      throw FtraceError(ENOENT, fmt::format("tracefs: {}: no such file (-ENOENT)", file));
    return profiler_.show(static_cast<unsigned>(*cpu), env_.symbol);
  }
  throw FtraceError(ENOENT, fmt::format("tracefs: {}: no such file (-ENOENT)", file));
}

// --- function_graph hooks ---------------------------------------------------------------------

// ftrace_graph_addr(): with set_graph_function, trace the listed functions and everything they
// call (TRACE_GRAPH_BIT with its depth), nothing else.
bool TraceFs::graphAddr(std::uint64_t func, int depth, int pid) {
  if (graphHash_.empty())
    return true;
  if (auto it = graphBitDepth_.find(pid); it != graphBitDepth_.end() && depth > it->second)
    return true;
  if (graphHash_.contains(func)) {
    graphBitDepth_.emplace(pid, depth);
    return true;
  }
  return false;
}

unsigned TraceFs::graphEntry(std::uint64_t func, int depth, const TraceContext &context) {
  unsigned users = 0;
  if (profileEnabled_) {
    profiler_.hit(context.cpu, func); // profile_graph_entry() -> function_profile_call()
    users |= GraphUserProfiler;
  }
  // trace_graph_entry()
  if (currentTracer_ == "function_graph" && !graphNotraceHash_.contains(func) &&
      graphAddr(func, depth, context.pid)) {
    users |= GraphUserTracer;
    if (global_.tracingOn()) {
      TraceRecord record;
      record.kind = TraceRecordKind::GraphEntry;
      record.context = context;
      record.ip = func;
      record.depth = depth;
      buffer_.write(record);
    }
  }
  return users;
}

void TraceFs::graphReturn(std::uint64_t func, int depth, std::uint64_t callTime, unsigned users,
                          const TraceContext &context) {
  if (users & GraphUserProfiler) // profile_graph_return(), graph_time on
    profiler_.time(context.cpu, func, context.timestampNs - callTime);
  if (users & GraphUserTracer) {
    // trace_graph_return() -> ftrace_graph_addr_finish()
    if (auto it = graphBitDepth_.find(context.pid);
        it != graphBitDepth_.end() && it->second == depth)
      graphBitDepth_.erase(it);
    if (global_.tracingOn()) {
      TraceRecord record;
      record.kind = TraceRecordKind::GraphReturn;
      record.context = context;
      record.ip = func;
      record.depth = depth;
      record.callTime = callTime;
      record.returnTime = context.timestampNs;
      buffer_.write(record);
    }
  }
}

} // namespace ftsim::model
