// Scenario files: TOML (toml++), validated key by key so that a broken file is one line naming the
// file and the problem.

#include "ProtocolTable.h"
#include "TomlReader.h"
#include "ftsim/arch/InputFile.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/OneLine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>

namespace ftsim::verify {

namespace {

template <typename F> auto named(const std::string &origin, const char *key, F parse) {
  try {
    return parse();
  } catch (const FatalError &e) {
    fatal("{}: {}: {}", origin, key, e.what());
  }
}

std::vector<std::string> stringArray(const toml::node *n, const std::string &origin,
                                     const char *key) {
  std::vector<std::string> out;
  if (!n)
    return out;
  const toml::array *arr = n->as_array();
  if (!arr)
    fatal("{}: '{}' must be an array of strings", origin, key);
  for (const toml::node &e : *arr) {
    if (!e.is_string())
      fatal("{}: '{}' must be an array of strings", origin, key);
    out.push_back(*e.value<std::string>());
  }
  return out;
}

const toml::array *tableArray(const toml::table &t, const char *key, const std::string &origin) {
  const toml::node *n = t.get(key);
  if (!n)
    return nullptr;
  const toml::array *arr = n->as_array();
  if (!arr || !arr->is_array_of_tables())
    fatal("{}: 'engine.{}' must be an array of tables ([[engine.{}]])", origin, key, key);
  return arr;
}

void parseEngine(const toml::table &table, const std::string &origin, Scenario &s) {
  EngineSpec &e = s.engine;
  TableReader r(table, origin, "engine.",
                {"workloads", "seed", "ops_trampolines", "pre_59338f754a55", "pre_405e1d834807",
                 "function_trace_op_wait", "explore", "runs", "seed_schedule", "pct_depth", "ops",
                 "steps"});
  if (table.get("workloads"))
    e.workloads = stringArray(table.get("workloads"), origin, "engine.workloads");
  if (auto v = r.integer("seed"))
    e.seed = static_cast<std::uint64_t>(*v);
  if (auto v = r.boolean("ops_trampolines"))
    e.opsTrampolines = *v;
  if (auto v = r.boolean("pre_59338f754a55"))
    e.pre59338f754a55 = *v;
  if (auto v = r.boolean("pre_405e1d834807"))
    e.pre405e1d834807 = *v;
  if (auto v = r.boolean("function_trace_op_wait"))
    e.functionTraceOpWait = *v;
  if (auto v = r.string("explore"))
    s.explore.explorer = *v;
  if (auto v = r.integer("runs")) {
    if (*v < 1)
      fatal("{}: engine.runs must be positive", origin);
    s.explore.runs = static_cast<std::uint64_t>(*v);
  }
  if (auto v = r.integer("seed_schedule"))
    s.explore.seed = static_cast<std::uint64_t>(*v);
  if (auto v = r.count("pct_depth", 1, 20))
    s.explore.pctDepth = *v;
  if (const toml::array *ops = tableArray(table, "ops", origin))
    for (const toml::node &n : *ops) {
      const toml::table &t = *n.as_table();
      TableReader o(t, origin, "engine.ops.", {"name", "filter", "flags", "livepatch", "boot"});
      EngineOpsSpec spec;
      if (auto v = o.string("name"))
        spec.name = *v;
      if (auto v = o.string("filter"))
        spec.filter = *v;
      for (const std::string &f : stringArray(t.get("flags"), origin, "engine.ops.flags")) {
        if (f == "dynamic")
          spec.dynamic = true;
        else if (f == "save-regs")
          spec.saveRegs = true;
        else if (f == "recursion")
          spec.recursion = true;
        else
          fatal("{}: engine.ops.flags: '{}' (known: dynamic, save-regs, recursion)", origin, f);
      }
      if (auto v = o.string("livepatch"))
        spec.livepatch = *v;
      if (auto v = o.boolean("boot"))
        spec.boot = *v;
      e.ops.push_back(std::move(spec));
    }
  if (const toml::array *steps = tableArray(table, "steps", origin))
    for (const toml::node &n : *steps) {
      TableReader o(*n.as_table(), origin, "engine.steps.", {"op", "ops", "pattern", "tracer"});
      EngineStep st;
      auto op = o.string("op");
      if (!op)
        fatal("{}: an [[engine.steps]] entry has no 'op'", origin);
      bool known = false;
      for (EngineOpKind k :
           {EngineOpKind::Register, EngineOpKind::Unregister, EngineOpKind::SetFilter,
            EngineOpKind::AppendFilter, EngineOpKind::RemoveFilter, EngineOpKind::Tracer})
        if (engineOpName(k) == *op) {
          st.op = k;
          known = true;
        }
      if (!known)
        fatal("{}: engine.steps.op = '{}' (known: register, unregister, set-filter, "
              "append-filter, remove-filter, tracer)",
              origin, *op);
      if (auto v = o.string("ops"))
        st.ops = *v;
      if (auto v = o.string("pattern"))
        st.pattern = *v;
      if (auto v = o.string("tracer"))
        st.tracer = *v;
      e.steps.push_back(std::move(st));
    }
}

void parseExplore(const toml::table &table, const std::string &origin, ExploreSpec &e) {
  TableReader r(table, origin, "explore.",
                {"explorer", "runs", "seed", "pct_depth", "continuation"});
  if (auto v = r.string("explorer"))
    e.explorer = *v;
  if (auto v = r.integer("runs")) {
    if (*v < 1)
      fatal("{}: explore.runs must be positive", origin);
    e.runs = static_cast<std::uint64_t>(*v);
  }
  if (auto v = r.integer("seed")) {
    if (*v < 0)
      fatal("{}: explore.seed must not be negative", origin);
    e.seed = static_cast<std::uint64_t>(*v);
  }
  if (auto v = r.count("pct_depth", 1, 20))
    e.pctDepth = *v;
  if (auto v = r.string("continuation"))
    e.continuation = *v;
}

void parseTrampoline(const toml::table &table, const std::string &origin, TrampolineSpec &t) {
  TableReader r(table, origin, "trampoline.",
                {"variant", "free", "sync_when_unchanged", "sleep_until_call"});
  if (auto v = r.string("variant")) {
    if (*v == "tramp-free-preempted")
      t.variant = TrampolineVariant::TrampFreePreempted;
    else if (*v == "ops-uaf-no-sync")
      t.variant = TrampolineVariant::OpsUafNoSync;
    else if (*v == "idle-tramp-free")
      t.variant = TrampolineVariant::IdleTrampFree;
    else if (*v == "irq-tramp-free")
      t.variant = TrampolineVariant::IrqTrampFree;
    else
      fatal("{}: trampoline.variant = '{}' (known: tramp-free-preempted, ops-uaf-no-sync, "
            "idle-tramp-free, irq-tramp-free)",
            origin, *v);
  }
  if (auto v = r.string("free"))
    t.free = *v;
  if (auto v = r.boolean("sync_when_unchanged"))
    t.syncWhenUnchanged = *v;
  if (auto v = r.boolean("sleep_until_call"))
    t.sleepUntilCall = *v;
}

// The value of [code] key `key` named by `word`, one of `names`; else one line naming the choices.
template <typename E>
E codeWord(const std::string &origin, std::string_view key, const std::string &word,
           std::initializer_list<std::pair<std::string_view, E>> names) {
  std::string known;
  for (const auto &[name, value] : names) {
    if (name == word)
      return value;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  fatal("{}: code.{} = '{}' (known: {})", origin, key, word, known);
}

void parseCode(const toml::table &code, const std::string &origin, Scenario &s) {
  TableReader c(code, origin, "code.",
                {"kind", "site_offset", "calls", "tasks_per_cpu", "task_cpus", "image", "functions",
                 "kernel", "kernel_tree", "mutant", "foreign_int3", "batches", "user_entry",
                 "module_toc"});
  if (auto v = c.string("kind"))
    s.code = codeWord<CodeKind>(origin, "kind", *v,
                                {{"snippet", CodeKind::Snippet},
                                 {"kernel", CodeKind::Kernel},
                                 {"trampoline", CodeKind::Trampoline},
                                 {"linux", CodeKind::Linux}});
  if (auto v = c.string("user_entry"))
    s.userEntry = codeWord<Scenario::UserEntry>(origin, "user_entry", *v,
                                                {{"none", Scenario::UserEntry::None},
                                                 {"sync-first", Scenario::UserEntry::SyncFirst},
                                                 {"site-first", Scenario::UserEntry::SiteFirst}});
  if (auto v = c.string("module_toc"))
    s.moduleToc = codeWord<Scenario::ModuleToc>(
        origin, "module_toc", *v,
        {{"nop", Scenario::ModuleToc::Nop}, {"skip", Scenario::ModuleToc::Skip}});
  if (auto v = c.count("site_offset", 0, 63))
    s.siteOffset = *v;
  if (auto v = c.count("calls", 1, 64))
    s.calls = *v;
  if (auto v = c.count("tasks_per_cpu", 1, 4))
    s.tasksPerCpu = *v;
  if (const toml::node *n = code.get("task_cpus")) {
    const toml::array *arr = n->as_array();
    if (!arr)
      fatal("{}: 'code.task_cpus' must be an array of CPU numbers", origin);
    if (arr->empty())
      fatal("{}: 'code.task_cpus' is empty (leave it out to run a task on every CPU but the "
            "patcher's)",
            origin);
    for (const toml::node &e : *arr) {
      if (!e.is_integer() || *e.value<std::int64_t>() < 0 || *e.value<std::int64_t>() > 7)
        fatal("{}: 'code.task_cpus' must hold CPU numbers 0-7", origin);
      s.taskCpus.push_back(static_cast<unsigned>(*e.value<std::int64_t>()));
    }
  }
  if (code.get("image") && s.code == CodeKind::Snippet)
    fatal("{}: code.image belongs to kind = \"kernel\" or \"trampoline\"", origin);
  if (code.get("functions"))
    fatal("{}: code.functions is not supported (an engine-level scenario names its functions "
          "in [[engine.ops]] filters)",
          origin);
  if (auto v = c.string("image"))
    s.image = *v;
  if (auto v = c.string("kernel"))
    s.kernel = *v;
  if (auto v = c.string("kernel_tree"))
    s.kernelTree = *v;
  if (auto v = c.string("mutant"))
    s.mutant = *v;
  if (auto v = c.boolean("foreign_int3"))
    s.foreignInt3 = *v;
  if (auto v = c.count("batches", 1, 4))
    s.batches = static_cast<unsigned>(*v);
}

void parseSites(const toml::node &n, const std::string &origin, Scenario &s) {
  const toml::array *arr = n.as_array();
  if (!arr || !arr->is_array_of_tables())
    fatal("{}: 'sites' must be an array of tables ([[sites]])", origin);
  s.sites.clear();
  for (const toml::node &e : *arr) {
    TableReader site(*e.as_table(), origin, "sites.", {"transition"});
    auto t = site.string("transition");
    if (!t)
      fatal("{}: a [[sites]] entry has no 'transition'", origin);
    s.sites.push_back(named(origin, "sites.transition", [&] { return parseTransition(*t); }));
  }
}

void parsePatch(const toml::table &patch, const std::string &origin, Scenario &s) {
  TableReader p(patch, origin, "patch.", {"order"});
  if (auto v = p.string("order")) {
    if (*v != "ascending" && *v != "descending")
      fatal("{}: patch.order = '{}' (known: ascending, descending)", origin, *v);
    s.descending = *v == "descending";
  }
}

void parseBounds(const toml::table &bounds, const std::string &origin, ScenarioBounds &out) {
  TableReader b(bounds, origin, "bounds.", {"max_events", "preemptions", "max_executions"});
  if (auto v = b.integer("max_events")) {
    if (*v < 1)
      fatal("{}: bounds.max_events must be positive", origin);
    out.maxEvents = static_cast<std::uint64_t>(*v);
  }
  if (auto v = b.integer("preemptions")) {
    if (*v < -1 || *v > 1000)
      fatal("{}: bounds.preemptions = {} (use -1 for none, or 0-1000)", origin, *v);
    out.preemptions = static_cast<int>(*v);
  }
  if (auto v = b.integer("max_executions")) {
    if (*v < 1)
      fatal("{}: bounds.max_executions must be positive", origin);
    out.maxExecutions = static_cast<std::uint64_t>(*v);
  }
}

Scenario parseScenarioText(const std::string &text, const std::string &origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error &e) {
    fatal("{}:{}: {}", origin, e.source().begin.line, e.description());
  }
  TableReader top(
      root, origin, "",
      {"name",  "source", "fidelity", "published",  "linux",      "arch",    "protocol",
       "cpus",  "store",  "fetch",    "preemption", "nohz_full",  "code",    "sites",
       "patch", "bounds", "expect",   "engine",     "trampoline", "explore", "protocol_program"});
  Scenario s;
  s.name = std::filesystem::path(origin).stem().string();
  if (auto v = top.string("name"))
    s.name = *v;
  if (auto v = top.string("source"))
    s.source = *v;
  if (auto v = top.string("fidelity")) {
    if (!isFidelityWord(*v))
      fatal("{}: fidelity '{}' is not one of {}", origin, *v, fmt::join(kFidelityWords, ", "));
    s.fidelity = *v;
  }
  if (auto v = top.string("published")) {
    if (v->empty() ||
        v->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
      fatal("{}: published '{}' is not a page name (lower-case letters, digits and '-')", origin,
            *v);
    s.published = *v;
  }
  if (auto v = top.string("linux"))
    s.linuxProfile = *v;
  auto arch = top.string("arch");
  if (!arch)
    fatal("{}: missing 'arch' (x86_64 or ppc32)", origin);
  s.arch = *arch;
  auto protocol = top.string("protocol");
  if (const toml::table *program = top.table("protocol_program")) {
    // A protocol as data (README.md, "Protocols as files"), registered for this process.
    s.protocolProgram = parseProtocolTable(*program, origin, "protocol_program.");
    try {
      arch::registerFileProtocol(*s.protocolProgram);
    } catch (const FatalError &e) {
      fatal("{}: protocol_program: {}", origin, e.what());
    }
    if (protocol && *protocol != s.protocolProgram->name)
      fatal("{}: protocol '{}' is not the [protocol_program]'s ('{}')", origin, *protocol,
            s.protocolProgram->name);
    if (s.protocolProgram->arch != s.arch)
      fatal("{}: the [protocol_program] is for {}, the scenario for {}", origin,
            s.protocolProgram->arch, s.arch);
    protocol = s.protocolProgram->name;
  }
  if (!protocol)
    fatal("{}: missing 'protocol' (see ftsim protocols)", origin);
  s.protocol = *protocol;
  if (auto v = top.count("cpus", 1, 8))
    s.cpus = *v;
  if (auto v = top.string("store"))
    s.store = named(origin, "store", [&] { return sim::parseStoreModel(*v); });
  if (auto v = top.string("fetch"))
    s.fetch = named(origin, "fetch", [&] { return &sim::fetchModelByName(*v); });
  if (auto v = top.boolean("preemption"))
    s.preemption = *v;
  if (auto v = top.boolean("nohz_full"))
    s.nohzFull = *v;
  if (const toml::table *code = top.table("code"))
    parseCode(*code, origin, s);
  if (const toml::node *n = root.get("sites"))
    parseSites(*n, origin, s);
  if (const toml::table *patch = top.table("patch"))
    parsePatch(*patch, origin, s);
  if (const toml::table *bounds = top.table("bounds"))
    parseBounds(*bounds, origin, s.bounds);
  if (const toml::table *expect = top.table("expect")) {
    TableReader e(*expect, origin, "expect.", {"verdict", "oracle"});
    if (auto v = e.string("verdict"))
      s.expectVerdict = *v;
    if (auto v = e.string("oracle"))
      s.expectOracle = *v;
  }
  if (root.get("engine") && s.code != CodeKind::Kernel)
    fatal("{}: an [engine] table belongs to code kind = \"kernel\"", origin);
  if (root.get("trampoline") && s.code != CodeKind::Trampoline)
    fatal("{}: a [trampoline] table belongs to code kind = \"trampoline\"", origin);
  if (s.code == CodeKind::Kernel)
    s.explore.runs = 40; // the default for kernel scenarios (each execution boots a kernel)
  if (const toml::table *engine = top.table("engine"))
    parseEngine(*engine, origin, s);
  if (const toml::table *trampoline = top.table("trampoline"))
    parseTrampoline(*trampoline, origin, s.trampoline);
  if (const toml::table *explore = top.table("explore"))
    parseExplore(*explore, origin, s.explore);
  s.validate(origin);
  return s;
}

} // namespace

Scenario parseScenario(const std::string &text, const std::string &origin) {
  return withOneLineErrors([&] { return parseScenarioText(text, origin); });
}

Scenario loadScenarioFile(const std::string &path) {
  return parseScenario(readInputFile(path, "scenario file", kMaxScenarioFileBytes), path);
}

} // namespace ftsim::verify
