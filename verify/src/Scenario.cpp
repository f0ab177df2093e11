// Scenario files: TOML (toml++), validated key by key so that a broken file is one line naming the
// file and the problem.

#include "ftsim/verify/Scenario.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ftsim::verify {

std::string_view transitionLabel(Transition t) {
  switch (t) {
  case Transition::NopToCall:
    return "nop-to-call";
  case Transition::CallToNop:
    return "call-to-nop";
  case Transition::CallToCall:
    return "call-to-call";
  }
  return "?";
}

Transition parseTransition(std::string_view text) {
  for (Transition t : {Transition::NopToCall, Transition::CallToNop, Transition::CallToCall})
    if (transitionLabel(t) == text)
      return t;
  fatal("unknown transition '{}' (known: nop-to-call, call-to-nop, call-to-call)", text);
}

std::vector<unsigned> Scenario::resolvedTaskCpus() const {
  if (!taskCpus.empty())
    return taskCpus;
  std::vector<unsigned> out;
  for (unsigned c = 1; c < cpus; ++c)
    out.push_back(c);
  return out;
}

void Scenario::validate(const std::string &origin) const {
  auto bad = [&](const std::string &what) { fatal("{}: {}", origin, what); };
  const arch::Arch *a = nullptr;
  try {
    a = &arch::archByName(arch);
  } catch (const FatalError &e) {
    bad(e.what());
  }
  if (!a->executable())
    bad(fmt::format("arch {} cannot be executed by the simulator (x86_64 and ppc32 can)", arch));
  try {
    arch::makePatchProtocol(*a, protocol);
  } catch (const FatalError &e) {
    bad(e.what());
  }
  if (cpus < 1 || cpus > 8)
    bad(fmt::format("cpus = {} is out of range (1-8)", cpus));
  if (siteOffset > 63)
    bad(fmt::format("site_offset = {} is out of range (0-63)", siteOffset));
  if (siteOffset % a->insnAlignment() != 0)
    bad(fmt::format("site_offset = {} is not {}-byte aligned as {} instructions are", siteOffset,
                    a->insnAlignment(), arch));
  if (!sim::isRealStoreModel(*a, store))
    bad(fmt::format("store = {} is not a real {} machine (aligned word stores are atomic): use "
                    "word or line",
                    sim::storeModelName(store), a->family()));
  if (calls < 1 || calls > 64)
    bad(fmt::format("calls = {} is out of range (1-64)", calls));
  if (tasksPerCpu < 1 || tasksPerCpu > 4)
    bad(fmt::format("tasks_per_cpu = {} is out of range (1-4)", tasksPerCpu));
  if (sites.empty() || sites.size() > 8)
    bad(fmt::format("{} sites: a scenario patches 1-8 sites", sites.size()));
  for (unsigned c : resolvedTaskCpus())
    if (c >= cpus)
      bad(fmt::format("task_cpus names CPU {} but the machine has {} CPUs", c, cpus));
  if (resolvedTaskCpus().empty())
    bad("no CPU runs a task (with 1 CPU, list task_cpus = [0])");
  if (bounds.maxEvents < 1)
    bad("max_events must be positive");
  if (bounds.preemptions < -1)
    bad(fmt::format("preemptions = {} (use -1 for no bound)", bounds.preemptions));
  if (!expectVerdict.empty() && expectVerdict != "violation" && expectVerdict != "verified")
    bad(fmt::format("expect.verdict = '{}' (known: violation, verified)", expectVerdict));
  if (code == CodeKind::Kernel) {
    if (cpus < 2)
      bad("an engine-level scenario needs at least 2 CPUs (the patcher runs on CPU 0)");
    if (engine.workloads.empty() || engine.workloads.size() > cpus - 1)
      bad(fmt::format("engine.workloads: {} workloads for {} task CPUs (1-{})",
                      engine.workloads.size(), cpus - 1, cpus - 1));
    if (engine.explore != "random" && engine.explore != "pct")
      bad(fmt::format("engine.explore = '{}' (known: random, pct)", engine.explore));
    if (engine.runs < 1)
      bad("engine.runs must be positive");
    if (engine.pctDepth < 1 || engine.pctDepth > 20)
      bad(fmt::format("engine.pct_depth = {} is out of range (1-20)", engine.pctDepth));
    std::set<std::string> names;
    for (const EngineOpsSpec &o : engine.ops) {
      if (o.name.empty())
        bad("an [[engine.ops]] entry has no name");
      if (!names.insert(o.name).second)
        bad(fmt::format("engine.ops: '{}' is defined twice", o.name));
    }
    for (const EngineStep &st : engine.steps) {
      if (st.op == EngineOpKind::Tracer) {
        if (st.tracer != "function" && st.tracer != "nop")
          bad(fmt::format("engine.steps: tracer = '{}' (known: function, nop)", st.tracer));
        continue;
      }
      if (!names.count(st.ops))
        bad(fmt::format("engine.steps: {} names ops '{}', which [[engine.ops]] does not define",
                        engineOpName(st.op), st.ops));
      if (st.op != EngineOpKind::Register && st.op != EngineOpKind::Unregister &&
          st.pattern.empty())
        bad(fmt::format("engine.steps: {} {} needs a pattern", engineOpName(st.op), st.ops));
    }
  }
}

std::string_view engineOpName(EngineOpKind kind) {
  switch (kind) {
  case EngineOpKind::Register:
    return "register";
  case EngineOpKind::Unregister:
    return "unregister";
  case EngineOpKind::SetFilter:
    return "set-filter";
  case EngineOpKind::AppendFilter:
    return "append-filter";
  case EngineOpKind::RemoveFilter:
    return "remove-filter";
  case EngineOpKind::Tracer:
    return "tracer";
  }
  return "?";
}

std::string EngineStep::describe() const {
  if (op == EngineOpKind::Tracer)
    return fmt::format("tracer {}", tracer);
  if (pattern.empty())
    return fmt::format("{} {}", engineOpName(op), ops);
  return fmt::format("{} {} {}", engineOpName(op), ops, pattern);
}

std::string Scenario::describe() const {
  if (code == CodeKind::Kernel) {
    std::string wl;
    for (std::size_t i = 0; i < engine.workloads.size(); ++i)
      wl += fmt::format("{}{}@cpu{}", i ? ", " : "", engine.workloads[i], i + 1);
    return fmt::format("{} {} kernel{}, {} CPUs, workloads {}, {} ops, {} steps, store {}, "
                       "fetch {}{}{}",
                       arch, protocol, image.empty() ? "" : " " + image, cpus, wl,
                       engine.ops.size(), engine.steps.size(), sim::storeModelName(store),
                       sim::fetchModelName(fetch), engine.opsTrampolines ? ", ops trampolines" : "",
                       engine.pre59338f754a55 ? ", pre-59338f754a55 update order" : "");
  }
  std::string siteList;
  for (std::size_t i = 0; i < sites.size(); ++i)
    siteList += (i ? ", " : "") + std::string(transitionLabel(sites[i]));
  return fmt::format("{} {}, {} CPU{}, {} site{} ({}{}) at offset {}, store {}, fetch {}, {}", arch,
                     protocol, cpus, cpus == 1 ? "" : "s", sites.size(),
                     sites.size() == 1 ? "" : "s", siteList,
                     descending ? ", queued descending" : "", siteOffset,
                     sim::storeModelName(store), sim::fetchModelName(fetch),
                     preemption ? fmt::format("preemption ({} tasks per CPU)", tasksPerCpu)
                                : std::string("no preemption"));
}

namespace {
std::string tomlString(const std::string &text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}
} // namespace

std::string Scenario::toToml() const {
  std::string cpuList;
  for (std::size_t i = 0; i < taskCpus.size(); ++i)
    cpuList += fmt::format("{}{}", i ? ", " : "", taskCpus[i]);
  std::string out;
  out += fmt::format("name = {}\n", tomlString(name));
  if (!source.empty())
    out += fmt::format("source = {}\n", tomlString(source));
  out += fmt::format("arch = \"{}\"\nprotocol = \"{}\"\ncpus = {}\n", arch, protocol, cpus);
  out += fmt::format("store = \"{}\"\nfetch = \"{}\"\npreemption = {}\n",
                     sim::storeModelName(store), sim::fetchModelName(fetch), preemption);
  out +=
      fmt::format("\n[code]\nkind = \"{}\"\nsite_offset = {}\ncalls = {}\ntasks_per_cpu = {}\n",
                  code == CodeKind::Snippet ? "snippet" : "kernel", siteOffset, calls, tasksPerCpu);
  if (!taskCpus.empty())
    out += fmt::format("task_cpus = [{}]\n", cpuList);
  if (code == CodeKind::Kernel && !image.empty())
    out += fmt::format("image = {}\n", tomlString(image));
  for (Transition t : sites)
    out += fmt::format("\n[[sites]]\ntransition = \"{}\"\n", transitionLabel(t));
  out += fmt::format("\n[patch]\norder = \"{}\"\n", descending ? "descending" : "ascending");
  out += fmt::format("\n[bounds]\nmax_events = {}\npreemptions = {}\nmax_executions = {}\n",
                     bounds.maxEvents, bounds.preemptions, bounds.maxExecutions);
  if (code == CodeKind::Kernel) {
    std::string wl;
    for (std::size_t i = 0; i < engine.workloads.size(); ++i)
      wl += (i ? ", " : "") + tomlString(engine.workloads[i]);
    out += fmt::format("\n[engine]\nworkloads = [{}]\nseed = {}\nops_trampolines = {}\n"
                       "pre_59338f754a55 = {}\nexplore = \"{}\"\nruns = {}\nseed_schedule = {}\n"
                       "pct_depth = {}\n",
                       wl, engine.seed, engine.opsTrampolines, engine.pre59338f754a55,
                       engine.explore, engine.runs, engine.scheduleSeed, engine.pctDepth);
    for (const EngineOpsSpec &o : engine.ops) {
      std::string flags;
      auto flag = [&](bool on, const char *n) {
        if (on)
          flags += fmt::format("{}\"{}\"", flags.empty() ? "" : ", ", n);
      };
      flag(o.dynamic, "dynamic");
      flag(o.saveRegs, "save-regs");
      flag(o.recursion, "recursion");
      out += fmt::format("\n[[engine.ops]]\nname = {}\nfilter = {}\nflags = [{}]\nboot = {}\n",
                         tomlString(o.name), tomlString(o.filter), flags, o.boot);
      if (!o.livepatch.empty())
        out += fmt::format("livepatch = {}\n", tomlString(o.livepatch));
    }
    for (const EngineStep &st : engine.steps) {
      out += fmt::format("\n[[engine.steps]]\nop = \"{}\"\n", engineOpName(st.op));
      if (!st.ops.empty())
        out += fmt::format("ops = {}\n", tomlString(st.ops));
      if (!st.pattern.empty())
        out += fmt::format("pattern = {}\n", tomlString(st.pattern));
      if (!st.tracer.empty())
        out += fmt::format("tracer = {}\n", tomlString(st.tracer));
    }
  }
  if (!expectVerdict.empty() || !expectOracle.empty()) {
    out += "\n[expect]\n";
    if (!expectVerdict.empty())
      out += fmt::format("verdict = \"{}\"\n", expectVerdict);
    if (!expectOracle.empty())
      out += fmt::format("oracle = \"{}\"\n", expectOracle);
  }
  return out;
}

namespace {

// Reads one table's keys, refusing unknown ones and wrong types with the file name.
class TableReader {
public:
  TableReader(const toml::table &table, std::string origin, std::string prefix,
              std::vector<std::string> known)
      : table_(table), origin_(std::move(origin)), prefix_(std::move(prefix)),
        known_(std::move(known)) {
    for (const auto &[key, node] : table_) {
      const std::string k(key.str());
      if (std::find(known_.begin(), known_.end(), k) == known_.end()) {
        std::string list;
        for (const auto &n : known_)
          list += (list.empty() ? "" : ", ") + n;
        fatal("{}: unknown key '{}{}' (known: {})", origin_, prefix_, k, list);
      }
    }
  }

  std::optional<std::string> string(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (auto v = n->value<std::string>(); v && n->is_string())
      return *v;
    fatal("{}: '{}{}' must be a string", origin_, prefix_, key);
  }

  std::optional<std::int64_t> integer(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (n->is_integer())
      return *n->value<std::int64_t>();
    fatal("{}: '{}{}' must be an integer", origin_, prefix_, key);
  }

  std::optional<unsigned> count(const char *key, std::int64_t lo, std::int64_t hi) const {
    auto v = integer(key);
    if (!v)
      return std::nullopt;
    if (*v < lo || *v > hi)
      fatal("{}: '{}{}' = {} is out of range ({}-{})", origin_, prefix_, key, *v, lo, hi);
    return static_cast<unsigned>(*v);
  }

  std::optional<bool> boolean(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (n->is_boolean())
      return *n->value<bool>();
    fatal("{}: '{}{}' must be true or false", origin_, prefix_, key);
  }

  const toml::table *table(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return nullptr;
    if (!n->is_table())
      fatal("{}: '{}' must be a table ([{}])", origin_, key, key);
    return n->as_table();
  }

  const std::string &origin() const { return origin_; }

private:
  const toml::table &table_;
  std::string origin_;
  std::string prefix_;
  std::vector<std::string> known_;
};

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

void parseEngine(const toml::table &table, const std::string &origin, EngineSpec &e) {
  TableReader r(table, origin, "engine.",
                {"workloads", "seed", "ops_trampolines", "pre_59338f754a55", "explore", "runs",
                 "seed_schedule", "pct_depth", "ops", "steps"});
  if (table.get("workloads"))
    e.workloads = stringArray(table.get("workloads"), origin, "engine.workloads");
  if (auto v = r.integer("seed"))
    e.seed = static_cast<std::uint64_t>(*v);
  if (auto v = r.boolean("ops_trampolines"))
    e.opsTrampolines = *v;
  if (auto v = r.boolean("pre_59338f754a55"))
    e.pre59338f754a55 = *v;
  if (auto v = r.string("explore"))
    e.explore = *v;
  if (auto v = r.integer("runs")) {
    if (*v < 1)
      fatal("{}: engine.runs must be positive", origin);
    e.runs = static_cast<std::uint64_t>(*v);
  }
  if (auto v = r.integer("seed_schedule"))
    e.scheduleSeed = static_cast<std::uint64_t>(*v);
  if (auto v = r.count("pct_depth", 1, 20))
    e.pctDepth = *v;
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

} // namespace

Scenario parseScenario(const std::string &text, const std::string &origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error &e) {
    fatal("{}:{}: {}", origin, e.source().begin.line, e.description());
  }
  TableReader top(root, origin, "",
                  {"name", "source", "arch", "protocol", "cpus", "store", "fetch", "preemption",
                   "code", "sites", "patch", "bounds", "expect", "engine"});
  Scenario s;
  s.name = std::filesystem::path(origin).stem().string();
  if (auto v = top.string("name"))
    s.name = *v;
  if (auto v = top.string("source"))
    s.source = *v;
  auto arch = top.string("arch");
  if (!arch)
    fatal("{}: missing 'arch' (x86_64 or ppc32)", origin);
  s.arch = *arch;
  auto protocol = top.string("protocol");
  if (!protocol)
    fatal("{}: missing 'protocol' (see ftsim protocols)", origin);
  s.protocol = *protocol;
  if (auto v = top.count("cpus", 1, 8))
    s.cpus = *v;
  if (auto v = top.string("store"))
    s.store = named(origin, "store", [&] { return sim::parseStoreModel(*v); });
  if (auto v = top.string("fetch"))
    s.fetch = named(origin, "fetch", [&] { return sim::parseFetchModel(*v); });
  if (auto v = top.boolean("preemption"))
    s.preemption = *v;
  if (const toml::table *code = top.table("code")) {
    TableReader c(
        *code, origin, "code.",
        {"kind", "site_offset", "calls", "tasks_per_cpu", "task_cpus", "image", "functions"});
    if (auto v = c.string("kind")) {
      if (*v == "snippet")
        s.code = CodeKind::Snippet;
      else if (*v == "kernel")
        s.code = CodeKind::Kernel;
      else
        fatal("{}: code.kind = '{}' (known: snippet, kernel)", origin, *v);
    }
    if (auto v = c.count("site_offset", 0, 63))
      s.siteOffset = *v;
    if (auto v = c.count("calls", 1, 64))
      s.calls = *v;
    if (auto v = c.count("tasks_per_cpu", 1, 4))
      s.tasksPerCpu = *v;
    if (const toml::node *n = code->get("task_cpus")) {
      const toml::array *arr = n->as_array();
      if (!arr)
        fatal("{}: 'code.task_cpus' must be an array of CPU numbers", origin);
      for (const toml::node &e : *arr) {
        if (!e.is_integer() || *e.value<std::int64_t>() < 0 || *e.value<std::int64_t>() > 7)
          fatal("{}: 'code.task_cpus' must hold CPU numbers 0-7", origin);
        s.taskCpus.push_back(static_cast<unsigned>(*e.value<std::int64_t>()));
      }
    }
    if (code->get("image") || code->get("functions"))
      if (s.code != CodeKind::Kernel)
        fatal("{}: code.image and code.functions belong to kind = \"kernel\"", origin);
    if (code->get("functions"))
      fatal("{}: code.functions is not supported (an engine-level scenario names its functions "
            "in [[engine.ops]] filters)",
            origin);
    if (auto v = c.string("image"))
      s.image = *v;
  }
  if (const toml::node *n = root.get("sites")) {
    const toml::array *arr = n->as_array();
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
  if (const toml::table *patch = top.table("patch")) {
    TableReader p(*patch, origin, "patch.", {"order"});
    if (auto v = p.string("order")) {
      if (*v != "ascending" && *v != "descending")
        fatal("{}: patch.order = '{}' (known: ascending, descending)", origin, *v);
      s.descending = *v == "descending";
    }
  }
  if (const toml::table *bounds = top.table("bounds")) {
    TableReader b(*bounds, origin, "bounds.", {"max_events", "preemptions", "max_executions"});
    if (auto v = b.integer("max_events")) {
      if (*v < 1)
        fatal("{}: bounds.max_events must be positive", origin);
      s.bounds.maxEvents = static_cast<std::uint64_t>(*v);
    }
    if (auto v = b.integer("preemptions")) {
      if (*v < -1 || *v > 1000)
        fatal("{}: bounds.preemptions = {} (use -1 for none, or 0-1000)", origin, *v);
      s.bounds.preemptions = static_cast<int>(*v);
    }
    if (auto v = b.integer("max_executions")) {
      if (*v < 1)
        fatal("{}: bounds.max_executions must be positive", origin);
      s.bounds.maxExecutions = static_cast<std::uint64_t>(*v);
    }
  }
  if (const toml::table *expect = top.table("expect")) {
    TableReader e(*expect, origin, "expect.", {"verdict", "oracle"});
    if (auto v = e.string("verdict"))
      s.expectVerdict = *v;
    if (auto v = e.string("oracle"))
      s.expectOracle = *v;
  }
  if (root.get("engine") && s.code != CodeKind::Kernel)
    fatal("{}: an [engine] table belongs to code kind = \"kernel\"", origin);
  if (const toml::table *engine = top.table("engine"))
    parseEngine(*engine, origin, s.engine);
  s.validate(origin);
  return s;
}

Scenario loadScenarioFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fatal("{}: cannot open scenario file", path);
  std::stringstream text;
  text << in.rdbuf();
  return parseScenario(text.str(), path);
}

} // namespace ftsim::verify
