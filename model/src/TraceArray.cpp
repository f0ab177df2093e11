#include "ftsim/model/TraceArray.h"

#include "ftsim/model/Glob.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>

namespace ftsim::model {

std::string_view toString(ProbeCommand command) {
  switch (command) {
  case ProbeCommand::TraceOn:
    return "traceon";
  case ProbeCommand::TraceOff:
    return "traceoff";
  case ProbeCommand::StackTrace:
    return "stacktrace";
  case ProbeCommand::Dump:
    return "dump";
  case ProbeCommand::CpuDump:
    return "cpudump";
  }
  return "?";
}

// struct ftrace_func_probe with its probe_ops. `counted` selects the *_count_probe_ops variant,
// whose per-function counters live in a func mapper (ftrace_count_init).
struct TraceArray::FuncProbe {
  ProbeCommand command;
  bool counted;
  FtraceOps ops;
  std::map<std::uint64_t, long> counts;
  long ref = 0;
};

namespace {

[[noreturn]] void einval(const std::string &message) {
  throw FtraceError(EINVAL, message + " (-EINVAL)");
}

std::string noMatchMessage(std::string_view pattern) {
  std::string message = fmt::format("'{}' matches no traceable function", pattern);
  if (hasUnterminatedClass(pattern))
    message += " (its '[' class is not closed, so the '[' is matched literally)";
  return message;
}

} // namespace

TraceArray::TraceArray(FtraceCore &core, std::string name)
    : core_(core), name_(std::move(name)),
      ops_(name_ + ":function", {}, OpsFlag::TraceArray | OpsFlag::Initialized) {}

TraceArray::~TraceArray() = default;

std::size_t TraceArray::probeCount() const {
  std::size_t total = 0;
  for (const auto &probe : probes_)
    total += probe->ops.funcHash.filter.count();
  return total;
}

// ftrace_regex_open + ftrace_regex_write + ftrace_regex_release
void TraceArray::write(FilterFileKind file, std::string_view text, bool append) {
  const bool enable = file == FilterFileKind::Filter;
  FtraceHash hash;
  if (append) {
    hash = enable ? ops_.funcHash.filter : ops_.funcHash.notrace;
  } else {
    (enable ? modTrace_ : modNotrace_).clear(); // O_TRUNC: clear_ftrace_mod_list()
  }

  std::optional<FtraceError> error;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // trace_get_user(): whitespace separates the patterns.
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
    std::size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])))
      ++end;
    if (end == pos)
      break;
    try {
      processRegex(hash, text.substr(pos, end - pos), enable);
    } catch (const FtraceError &bad) {
      error = bad;
      break;
    }
    pos = end;
  }
  // The release installs what the file accumulated, whatever a write returned.
  core_.replaceHash(ops_, enable, std::move(hash));
  if (error)
    throw *error;
}

// ftrace_process_regex(): "func" or "func:command[:param]"
void TraceArray::processRegex(FtraceHash &hash, std::string_view token, bool enable) {
  const std::size_t colon = token.find(':');
  if (colon == std::string_view::npos) {
    if (!core_.matchRecords(hash, token, std::nullopt))
      einval(noMatchMessage(token));
    return;
  }
  const std::string_view func = token.substr(0, colon);
  std::string_view rest = token.substr(colon + 1);
  const std::size_t next = rest.find(':');
  const std::string_view command = rest.substr(0, next);
  std::optional<std::string_view> param;
  if (next != std::string_view::npos)
    param = rest.substr(next + 1);

  if (command == "mod")
    return modCallback(hash, func, param.value_or(std::string_view()), enable);
  for (ProbeCommand probe : {ProbeCommand::TraceOn, ProbeCommand::TraceOff,
                             ProbeCommand::StackTrace, ProbeCommand::Dump, ProbeCommand::CpuDump})
    if (command == toString(probe))
      return probeCallback(func, probe, param, enable);
  einval(fmt::format("'{}': unknown command '{}' (known: mod, traceon, traceoff, stacktrace, "
                     "dump, cpudump)",
                     token, command));
}

// ftrace_mod_callback(): functions of a loaded module, or a cached filter for one not loaded.
void TraceArray::modCallback(FtraceHash &hash, std::string_view func, std::string_view module,
                             bool enable) {
  if (core_.matchRecords(hash, func, module))
    return;
  cacheMod(func, module, enable);
}

void TraceArray::cacheMod(std::string_view func, std::string_view module, bool enable) {
  std::list<ModLoad> &list = enable ? modTrace_ : modNotrace_;
  if (!func.empty() && func.front() == '!') {
    // Inverse filters are not cached; they remove cached ones.
    func.remove_prefix(1);
    bool removed = false;
    for (auto it = list.begin(); it != list.end();) {
      if (it->module == module && (func == "*" || it->func == func)) {
        it = list.erase(it);
        removed = true;
      } else {
        ++it;
      }
    }
    if (!removed)
      einval(fmt::format("'!{}:mod:{}' matches nothing", func, module));
    return;
  }
  if (core_.moduleExists(module))
    einval(fmt::format("'{}:mod:{}' matches no function of module {}", func, module, module));
  list.push_front(ModLoad{std::string(func), std::string(module)});
}

TraceArray::FuncProbe *TraceArray::findProbe(ProbeCommand command, bool counted) {
  for (auto &probe : probes_)
    if (probe->command == command && probe->counted == counted)
      return probe.get();
  return nullptr;
}

TraceArray::FuncProbe &TraceArray::probeFor(ProbeCommand command, bool counted) {
  if (FuncProbe *probe = findProbe(command, counted))
    return *probe;
  auto probe = std::make_unique<FuncProbe>();
  probe->command = command;
  probe->counted = counted;
  probe->ops.name = fmt::format("{}:{}{}", name_, toString(command), counted ? "_count" : "");
  FuncProbe *raw = probe.get();
  // function_trace_probe_call()
  probe->ops.func = [this, raw](std::uint64_t ip, std::uint64_t, FtraceOps &,
                                arch::GuestContext *) { fire(*raw, ip); };
  probe->ops.flags |= OpsFlag::Initialized;
  probes_.push_front(std::move(probe)); // list_add(): newest first
  return *raw;
}

// ftrace_trace_onoff_callback / ftrace_stacktrace_callback / ftrace_dump_callback /
// ftrace_cpudump_callback -> ftrace_trace_probe_callback
void TraceArray::probeCallback(std::string_view glob, ProbeCommand command,
                               std::optional<std::string_view> param, bool enable) {
  if (!enable)
    einval(fmt::format("'{}:{}': function probes only work in set_ftrace_filter", glob,
                       toString(command)));
  bool counted = param.has_value();
  if (command == ProbeCommand::Dump || command == ProbeCommand::CpuDump) {
    param = "1";                             // only dump once
    counted = command == ProbeCommand::Dump; // cpudump_probe_ops has no counter
  }

  if (!glob.empty() && glob.front() == '!') {
    FuncProbe *probe = findProbe(command, counted);
    if (!probe)
      throw FtraceError(ENODEV,
                        fmt::format("'{}:{}': no such probe (-ENODEV)", glob, toString(command)));
    return unregisterProbe(glob.substr(1), *probe);
  }

  long count = -1; // the callback data pointer starts as (void *)-1
  if (param && !param->empty()) {
    const std::string_view number = param->substr(0, param->find(':'));
    if (!number.empty()) {
      std::optional<unsigned long> parsed = parseUnsigned(number);
      if (!parsed)
        einval(fmt::format("'{}:{}:{}': bad count", glob, toString(command), *param));
      count = static_cast<long>(*parsed);
    }
  }
  FuncProbe &probe = probeFor(command, counted);
  try {
    registerProbe(glob, probe, count);
  } catch (...) {
    if (probe.ref == 0)
      probes_.remove_if([&](const auto &p) { return p.get() == &probe; });
    throw;
  }
}

// register_ftrace_function_probe()
void TraceArray::registerProbe(std::string_view glob, FuncProbe &probe, long initialCount) {
  if (!glob.empty() && glob.front() == '!')
    einval(fmt::format("'{}': '!' is not supported here", glob));
  const FtraceHash old = probe.ops.funcHash.filter;
  FtraceHash hash = old;
  if (!core_.matchRecords(hash, glob, std::nullopt))
    einval(noMatchMessage(glob));
  long added = 0;
  for (std::uint64_t ip : hash.ips()) {
    if (old.contains(ip))
      continue;
    if (probe.counted)
      probe.counts[ip] = initialCount; // ftrace_count_init()
    ++added;
  }
  if (!added)
    einval(fmt::format("'{}:{}': nothing new to probe", glob, toString(probe.command)));
  core_.replaceHash(probe.ops, true, std::move(hash));
  probe.ref += added;
  if (!probe.ops.has(OpsFlag::Enabled))
    core_.startup(probe.ops, 0);
}

// unregister_ftrace_function_probe_func()
void TraceArray::unregisterProbe(std::string_view glob, FuncProbe &probe) {
  std::optional<FilterGlob> funcGlob;
  if (!glob.empty() && glob != "*") {
    funcGlob = parseFilterRegex(glob);
    if (funcGlob->negate)
      einval(fmt::format("'!{}': double negation", glob));
  }
  const FtraceHash old = probe.ops.funcHash.filter;
  if (old.empty())
    einval(fmt::format("'!{}:{}': the probe has no functions", glob, toString(probe.command)));
  FtraceHash hash = old;
  std::vector<std::uint64_t> removed;
  for (std::uint64_t ip : old.ips()) {
    if (funcGlob) {
      std::optional<SymbolInfo> symbol = core_.symbolize(ip);
      if (!symbol || !ftraceMatch(symbol->name, *funcGlob))
        continue;
    }
    hash.remove(ip);
    removed.push_back(ip);
  }
  if (removed.empty())
    einval(fmt::format("'!{}:{}' matches no probed function", glob, toString(probe.command)));
  probe.ref -= static_cast<long>(removed.size());
  if (hash.empty())
    core_.shutdown(probe.ops, 0);
  core_.replaceHash(probe.ops, true, std::move(hash));
  for (std::uint64_t ip : removed)
    probe.counts.erase(ip); // ftrace_count_free()
  if (probe.ref <= 0)
    probes_.remove_if([&](const auto &p) { return p.get() == &probe; }); // release_probe()
}

// The probe_ops funcs of kernel/trace/trace_functions.c.
void TraceArray::fire(FuncProbe &probe, std::uint64_t ip) {
  probeHits_.push_back({ip, probe.command});
  long *count = nullptr;
  if (probe.counted)
    if (auto it = probe.counts.find(ip); it != probe.counts.end())
      count = &it->second;

  switch (probe.command) {
  case ProbeCommand::TraceOn:
  case ProbeCommand::TraceOff: {
    const bool on = probe.command == ProbeCommand::TraceOn;
    if (!probe.counted) { // ftrace_traceon / ftrace_traceoff
      tracingOn_ = on;
      return;
    }
    // update_traceon_count(): the count only goes down when the state actually changes.
    if (!count || *count <= 0 || on == tracingOn_)
      return;
    tracingOn_ = on;
    --*count;
    return;
  }
  case ProbeCommand::StackTrace:
    if (!probe.counted) { // ftrace_stacktrace
      if (actions_.stackTrace)
        actions_.stackTrace(ip);
      return;
    }
    // ftrace_stacktrace_count()
    if (!tracingOn_ || !count || *count == 0)
      return;
    --*count;
    if (actions_.stackTrace)
      actions_.stackTrace(ip);
    return;
  case ProbeCommand::Dump:
  case ProbeCommand::CpuDump:
    // update_count(): without a mapper (cpudump) always; else while the count lasts.
    if (count) {
      if (*count <= 0)
        return;
      --*count;
    }
    if (actions_.dump)
      actions_.dump(probe.command == ProbeCommand::Dump);
    return;
  }
}

// t_start / t_show / t_mod_show / t_probe_show
std::string TraceArray::read(FilterFileKind file) const {
  const bool filter = file == FilterFileKind::Filter;
  const FtraceHash &hash = filter ? ops_.funcHash.filter : ops_.funcHash.notrace;
  std::string out;
  if (hash.empty()) {
    out += filter ? "#### all functions enabled ####\n" : "#### no functions disabled ####\n";
  } else {
    core_.records().forEach([&](const DynFtrace &rec) {
      if (hash.contains(rec.ip))
        out += core_.recordName(rec) + "\n";
    });
  }
  for (const ModLoad &mod : filter ? modTrace_ : modNotrace_)
    out += fmt::format("{}:mod:{}\n", mod.func, mod.module);
  if (!filter)
    return out;
  // ftrace_probe_print(): "%ps:%s" then ":count=%ld" or ":unlimited". Linux walks each probe's
  // hash buckets; the model walks the probed functions in record order.
  for (const auto &probe : probes_) {
    core_.records().forEach([&](const DynFtrace &rec) {
      if (!probe->ops.funcHash.filter.contains(rec.ip))
        return;
      out += fmt::format("{}:{}", core_.recordName(rec), toString(probe->command));
      auto it = probe->counts.find(rec.ip);
      if (probe->counted && it != probe->counts.end())
        out += fmt::format(":count={}\n", it->second);
      else
        out += ":unlimited\n";
    });
  }
  return out;
}

} // namespace ftsim::model
