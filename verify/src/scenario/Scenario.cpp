// Scenarios: validation, descriptions and the TOML text embedded in replay files (the parser is
// ScenarioToml.cpp).

#include "ftsim/verify/scenario/Scenario.h"
#include "ftsim/verify/scenario/ProtocolFile.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SnippetEmitter.h"
#include "ftsim/model/OpsTrampolines.h"
#include "ftsim/verify/explore/Explore.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
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

TransitionBytes transitionBytes(Transition t, const arch::Bytes &nop, const arch::Bytes &callA,
                                const arch::Bytes &callB) {
  switch (t) {
  case Transition::NopToCall:
    return {nop, callA};
  case Transition::CallToNop:
    return {callA, nop};
  case Transition::CallToCall:
    return {callA, callB};
  }
  return {nop, nop};
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

namespace {

using Complaint = std::function<void(const std::string &)>;

void validateTrampoline(const Scenario &s, const Complaint &bad) {
  if (s.cpus != 2)
    bad(fmt::format("cpus = {}: a trampoline scenario runs on 2 CPUs (the patcher on CPU 0, the "
                    "tasks on CPU 1)",
                    s.cpus));
  try {
    model::parseTrampolineFree(s.trampoline.free);
  } catch (const FatalError &e) {
    bad(fmt::format("trampoline.free: {}", e.what()));
  }
}

void validateEngine(const Scenario &s, const Complaint &bad) {
  const EngineSpec &engine = s.engine;
  if (s.cpus < 2)
    bad("an engine-level scenario needs at least 2 CPUs (the patcher runs on CPU 0)");
  if (engine.workloads.empty() || engine.workloads.size() > s.cpus - 1)
    bad(fmt::format("engine.workloads: {} workloads for {} task CPUs (1-{})",
                    engine.workloads.size(), s.cpus - 1, s.cpus - 1));
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
    if (st.op != EngineOpKind::Register && st.op != EngineOpKind::Unregister && st.pattern.empty())
      bad(fmt::format("engine.steps: {} {} needs a pattern", engineOpName(st.op), st.ops));
  }
}

} // namespace

void Scenario::validate(const std::string &origin) const {
  const Complaint bad = [&](const std::string &what) { fatal("{}: {}", origin, what); };
  const arch::Arch *a = nullptr;
  try {
    a = &arch::archByName(arch);
  } catch (const FatalError &e) {
    bad(e.what());
  }
  if (!a->executable())
    bad(fmt::format("arch {} cannot be executed by the simulator (x86_64 and ppc32 can)", arch));
  try {
    arch::makeMutantProtocol(*a, protocol); // a table protocol or one of the ISA's mutants
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
    bad("no CPU runs a task (with 1 CPU, list task_cpus = [0] and set preemption = true)");
  for (unsigned c : resolvedTaskCpus())
    if (c == 0 && !preemption)
      bad("task_cpus puts a task on CPU 0, the patcher's CPU: without preemption = true it never "
          "runs while the patcher does, and there is nothing to explore");
  // An execution keeps every event it runs (the log and the decisions: at least 108 bytes each),
  // so the bound is also the memory a runaway execution may take: 10 million events, about 1 GiB
  // per worker, 25 times the engine-level scenarios' 400,000.
  if (bounds.maxEvents < 1 || bounds.maxEvents > kMaxEventsBound)
    bad(fmt::format("max_events = {} is out of range (1-{}: every event of an execution is kept "
                    "in memory)",
                    bounds.maxEvents, kMaxEventsBound));
  if (bounds.preemptions < -1)
    bad(fmt::format("preemptions = {} (use -1 for no bound)", bounds.preemptions));
  if (!expectVerdict.empty() && expectVerdict != "violation" && expectVerdict != "verified")
    bad(fmt::format("expect.verdict = '{}' (known: violation, verified)", expectVerdict));
  if (!explore.explorer.empty() && !findExplorer(explore.explorer))
    bad(fmt::format("explore.explorer = '{}' (known: {})", explore.explorer, explorerNames()));
  if (explore.runs < 1)
    bad("explore.runs must be positive");
  if (explore.pctDepth < 1 || explore.pctDepth > 20)
    bad(fmt::format("explore.pct_depth = {} is out of range (1-20)", explore.pctDepth));
  if (!explore.continuation.empty() && !continuationByName(explore.continuation))
    bad(fmt::format("explore.continuation = '{}' (known: {})", explore.continuation,
                    continuationNames()));
  if (!explore.continuation.empty() && code != CodeKind::Kernel && code != CodeKind::Trampoline)
    bad("explore.continuation belongs to kernel and trampoline scenarios (the engine-level "
        "search); a site scenario's exhaustive search is source-DPOR");
  if (code == CodeKind::Trampoline)
    validateTrampoline(*this, bad);
  if (code == CodeKind::Kernel)
    validateEngine(*this, bad);
  if (!linuxProfile.empty()) {
    std::string why;
    try {
      why = profileMismatch(*this, linuxProfile);
    } catch (const FatalError &e) {
      bad(fmt::format("linux: {}", e.what()));
    }
    if (!why.empty())
      bad(fmt::format("linux = \"{}\" but {}", linuxProfile, why));
  }
  if (moduleToc != ModuleToc::None) {
    if (code != CodeKind::Snippet)
      bad("module_toc belongs to kind = \"snippet\"");
    else if (!a->snippetEmitter() || !a->snippetEmitter()->moduleTocSite())
      bad(fmt::format("module_toc: {} has no module TOC sites to model (ppc32 has)", arch));
  }
  if (code != CodeKind::Snippet && (userEntry != UserEntry::None || nohzFull))
    bad("user_entry and nohz_full belong to kind = \"snippet\"");
  if (userEntry != UserEntry::None && preemption)
    bad("user_entry: a stay in user mode is not modelled with preemption (set preemption = false)");
  if (code == CodeKind::Linux) {
    if (a->name() != "x86_64")
      bad(fmt::format("kind linux runs Linux's x86 text_poke code: arch must be x86_64, not {}",
                      arch));
    if (kernel.empty() == kernelTree.empty())
      bad("kind linux needs exactly one of kernel (6.1 or 6.12) and kernel_tree (a directory)");
    if (sites.size() + (foreignInt3 ? 1 : 0) > 3)
      bad(fmt::format("{} sites{}: the Linux guest's task calls 3 traced functions", sites.size(),
                      foreignInt3 ? " and a foreign int3" : ""));
    if (preemption)
      bad("kind linux does not model preemption yet");
    if (batches < 1 || batches > 4)
      bad(fmt::format("batches = {}: between 1 and 4 batches back to back", batches));
  } else if (!kernel.empty() || !kernelTree.empty() || !mutant.empty() || foreignInt3 ||
             batches != 1) {
    bad("kernel, kernel_tree, mutant, foreign_int3 and batches belong to kind = \"linux\"");
  }
}

bool isFidelityWord(std::string_view word) {
  return std::find(kFidelityWords.begin(), kFidelityWords.end(), word) != kFidelityWords.end();
}

std::string_view codeKindName(CodeKind kind) {
  switch (kind) {
  case CodeKind::Snippet:
    return "snippet";
  case CodeKind::Kernel:
    return "kernel";
  case CodeKind::Trampoline:
    return "trampoline";
  case CodeKind::Linux:
    return "linux";
  }
  return "?";
}

std::string_view trampolineVariantName(TrampolineVariant v) {
  switch (v) {
  case TrampolineVariant::TrampFreePreempted:
    return "tramp-free-preempted";
  case TrampolineVariant::OpsUafNoSync:
    return "ops-uaf-no-sync";
  case TrampolineVariant::IdleTrampFree:
    return "idle-tramp-free";
  case TrampolineVariant::IrqTrampFree:
    return "irq-tramp-free";
  }
  return "?";
}

std::string Scenario::explorer() const {
  if (!explore.explorer.empty())
    return explore.explorer;
  switch (code) {
  case CodeKind::Kernel:
    return "random";
  case CodeKind::Trampoline:
    return "rr-bounded";
  case CodeKind::Snippet:
  case CodeKind::Linux:
    break;
  }
  return "exhaustive";
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
  if (code == CodeKind::Trampoline)
    return fmt::format("{} {} trampoline {}{}, free {}{}, {} CPUs, store {}, fetch {}, {}", arch,
                       protocol, trampolineVariantName(trampoline.variant),
                       image.empty() ? "" : " on " + image, trampoline.free,
                       trampoline.syncWhenUnchanged ? "" : " (no sync when no code changes)", cpus,
                       sim::storeModelName(store), fetch->name(),
                       preemption ? "preemption" : "no preemption");
  if (code == CodeKind::Linux) {
    std::string siteList;
    for (std::size_t i = 0; i < sites.size(); ++i)
      siteList += (i ? ", " : "") + std::string(transitionLabel(sites[i]));
    return fmt::format("x86_64 Linux {}{} text_poke_queue/text_poke_finish, {} CPU{}, {} site{} "
                       "({}{}){}{}, store {}, fetch {}",
                       kernel.empty() ? kernelTree : kernel,
                       mutant.empty() ? "" : " (mutant " + mutant + ")", cpus, cpus == 1 ? "" : "s",
                       sites.size(), sites.size() == 1 ? "" : "s", siteList,
                       descending ? ", queued descending" : "",
                       foreignInt3 ? ", plus a foreign int3 (kprobe-like)" : "",
                       batches > 1 ? fmt::format(", {} batches back to back", batches) : "",
                       sim::storeModelName(store), fetch->name());
  }
  if (code == CodeKind::Kernel) {
    std::string wl;
    for (std::size_t i = 0; i < engine.workloads.size(); ++i)
      wl += fmt::format("{}{}@cpu{}", i ? ", " : "", engine.workloads[i], i + 1);
    return fmt::format(
        "{} {} kernel{}, {} CPUs, workloads {}, {} ops, {} steps, store {}, "
        "fetch {}{}{}{}{}",
        arch, protocol, image.empty() ? "" : " " + image, cpus, wl, engine.ops.size(),
        engine.steps.size(), sim::storeModelName(store), fetch->name(),
        engine.opsTrampolines ? ", ops trampolines" : "",
        engine.pre59338f754a55 ? ", pre-59338f754a55 update order" : "",
        engine.pre405e1d834807 ? ", pre-405e1d834807 function_trace_op" : "",
        engine.functionTraceOpWait ? ", grace periods after function_trace_op (hypothesis)" : "");
  }
  std::string siteList;
  for (std::size_t i = 0; i < sites.size(); ++i)
    siteList += (i ? ", " : "") + std::string(transitionLabel(sites[i]));
  const char *user = userEntry == UserEntry::SyncFirst   ? ", user mode (entry syncs first)"
                     : userEntry == UserEntry::SiteFirst ? ", user mode (entry runs site0 first)"
                                                         : "";
  const char *toc = moduleToc == ModuleToc::Nop    ? "; module TOC sites, disabled as nop"
                    : moduleToc == ModuleToc::Skip ? "; module TOC sites, disabled as b +8"
                                                   : "";
  return fmt::format("{} {}, {} CPU{}, {} site{} ({}{}{}) at offset {}, store {}, fetch {}, {}{}{}",
                     arch, protocol, cpus, cpus == 1 ? "" : "s", sites.size(),
                     sites.size() == 1 ? "" : "s", siteList, toc,
                     descending ? ", queued descending" : "", siteOffset,
                     sim::storeModelName(store), fetch->name(),
                     preemption ? fmt::format("preemption ({} tasks per CPU)", tasksPerCpu)
                                : std::string("no preemption"),
                     user, nohzFull ? ", NOHZ_FULL sync deferral" : "");
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
  if (!fidelity.empty())
    out += fmt::format("fidelity = {}\n", tomlString(fidelity));
  if (!published.empty())
    out += fmt::format("published = {}\n", tomlString(published));
  if (!linuxProfile.empty())
    out += fmt::format("linux = {}\n", tomlString(linuxProfile));
  out += fmt::format("arch = \"{}\"\nprotocol = \"{}\"\ncpus = {}\n", arch, protocol, cpus);
  out += fmt::format("store = \"{}\"\nfetch = \"{}\"\npreemption = {}\n",
                     sim::storeModelName(store), fetch->name(), preemption);
  if (nohzFull)
    out += "nohz_full = true\n";
  out += fmt::format("\n[code]\nkind = \"{}\"\nsite_offset = {}\ncalls = {}\ntasks_per_cpu = {}\n",
                     codeKindName(code), siteOffset, calls, tasksPerCpu);
  if (!taskCpus.empty())
    out += fmt::format("task_cpus = [{}]\n", cpuList);
  if (code != CodeKind::Snippet && !image.empty())
    out += fmt::format("image = {}\n", tomlString(image));
  if (!kernel.empty())
    out += fmt::format("kernel = {}\n", tomlString(kernel));
  if (!kernelTree.empty())
    out += fmt::format("kernel_tree = {}\n", tomlString(kernelTree));
  if (!mutant.empty())
    out += fmt::format("mutant = {}\n", tomlString(mutant));
  if (foreignInt3)
    out += "foreign_int3 = true\n";
  if (batches != 1)
    out += fmt::format("batches = {}\n", batches);
  if (moduleToc != ModuleToc::None)
    out += fmt::format("module_toc = \"{}\"\n", moduleToc == ModuleToc::Nop ? "nop" : "skip");
  if (userEntry != UserEntry::None)
    out += fmt::format("user_entry = \"{}\"\n",
                       userEntry == UserEntry::SyncFirst ? "sync-first" : "site-first");
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
                       "pre_59338f754a55 = {}\npre_405e1d834807 = {}\n",
                       wl, engine.seed, engine.opsTrampolines, engine.pre59338f754a55,
                       engine.pre405e1d834807);
    if (engine.functionTraceOpWait) // only when set: older replay files keep their text
      out += "function_trace_op_wait = true\n";
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
  if (code == CodeKind::Trampoline) {
    out += fmt::format("\n[trampoline]\nvariant = \"{}\"\nfree = {}\nsync_when_unchanged = {}\n",
                       trampolineVariantName(trampoline.variant), tomlString(trampoline.free),
                       trampoline.syncWhenUnchanged);
    if (trampoline.sleepUntilCall)
      out += fmt::format("sleep_until_call = {}\n", *trampoline.sleepUntilCall);
  }
  out += "\n[explore]\n";
  if (!explore.explorer.empty())
    out += fmt::format("explorer = {}\n", tomlString(explore.explorer));
  out += fmt::format("runs = {}\nseed = {}\npct_depth = {}\n", explore.runs, explore.seed,
                     explore.pctDepth);
  if (!explore.continuation.empty())
    out += fmt::format("continuation = {}\n", tomlString(explore.continuation));
  if (!expectVerdict.empty() || !expectOracle.empty()) {
    out += "\n[expect]\n";
    if (!expectVerdict.empty())
      out += fmt::format("verdict = {}\n", tomlString(expectVerdict));
    if (!expectOracle.empty())
      out += fmt::format("oracle = {}\n", tomlString(expectOracle));
  }
  if (protocolProgram)
    out += "\n[protocol_program]\n" + protocolFileText(*protocolProgram);
  return out;
}

} // namespace ftsim::verify
