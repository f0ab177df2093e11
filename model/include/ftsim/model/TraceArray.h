#pragma once
// A trace_array's function-tracing state as tracefs shows it: the function tracer's ops, the files
// set_ftrace_filter and set_ftrace_notrace (ftrace_regex_open/write/release, t_show), cached
// ":mod:" filters for modules not loaded (cache_mod) and function probes
// (`schedule:traceoff`, kernel/trace/trace_functions.c).

#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/FtraceOps.h"

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::model {

enum class FilterFileKind { Filter, Notrace }; // set_ftrace_filter, set_ftrace_notrace

// The commands of a function probe, each with its probe_ops.
enum class ProbeCommand { TraceOn, TraceOff, StackTrace, Dump, CpuDump };
std::string_view toString(ProbeCommand command);

// What a probe does to the rest of the tracer when it fires.
struct ProbeActions {
  std::function<void(std::uint64_t ip)> stackTrace; // trace_stack()
  std::function<void(bool allCpus)> dump;           // ftrace_dump(DUMP_ALL / DUMP_ORIG)
};

class TraceArray {
public:
  // The tracer's ops is created here (tr->ops); registering it is the tracer's business.
  explicit TraceArray(FtraceCore &core, std::string name = "global");
  ~TraceArray();

  FtraceOps &ops() { return ops_; }
  FtraceCore &core() { return core_; }

  // `echo "$text" > file` (append == false, O_TRUNC) or `>> file`. Whitespace separates patterns
  // (trace_get_user); each is handled by ftrace_process_regex. On the first bad pattern the
  // patterns before it stay applied (the file is still released), and FtraceError names the bad
  // one.
  void write(FilterFileKind file, std::string_view text, bool append);
  // `cat file`
  std::string read(FilterFileKind file) const;

  // tracing_on
  bool tracingOn() const { return tracingOn_; }
  void setTracingOn(bool on) { tracingOn_ = on; }
  ProbeActions &actions() { return actions_; }

  // The probe callbacks ran this many times / changed this many things (for tests and logs).
  struct ProbeHit {
    std::uint64_t ip;
    ProbeCommand command;
  };
  const std::vector<ProbeHit> &probeHits() const { return probeHits_; }
  // Number of registered probe entries (functions with a probe), over all commands.
  std::size_t probeCount() const;

private:
  struct FuncProbe;
  struct ModLoad {
    std::string func; // empty: all functions ("*")
    std::string module;
  };

  void processRegex(FtraceHash &hash, std::string_view token, bool enable);
  void modCallback(FtraceHash &hash, std::string_view func, std::string_view module, bool enable);
  void probeCallback(std::string_view glob, ProbeCommand command,
                     std::optional<std::string_view> param, bool enable);
  void registerProbe(std::string_view glob, FuncProbe &probe, long initialCount);
  void unregisterProbe(std::string_view glob, FuncProbe &probe);
  FuncProbe &probeFor(ProbeCommand command, bool counted);
  FuncProbe *findProbe(ProbeCommand command, bool counted);
  void fire(FuncProbe &probe, std::uint64_t ip);
  void cacheMod(std::string_view func, std::string_view module, bool enable);

  FtraceCore &core_;
  std::string name_;
  FtraceOps ops_;
  bool tracingOn_ = true;
  ProbeActions actions_;
  std::list<std::unique_ptr<FuncProbe>> probes_; // tr->func_probes (list_add: newest first)
  std::list<ModLoad> modTrace_;                  // tr->mod_trace
  std::list<ModLoad> modNotrace_;                // tr->mod_notrace
  std::vector<ProbeHit> probeHits_;
};

} // namespace ftsim::model
