// From `ftsim check`'s flags to a scenario and its exploration (CheckRequest.h).

#include "ftsim/verify/check/CheckRequest.h"

#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/Subtrees.h"
#include "ftsim/verify/scenario/ProtocolFile.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace ftsim::verify {
namespace {

bool trampolineShorthand(const CheckRequest &r) {
  return r.trampFree || r.trampScenario || r.noSyncUnchanged || r.preempt;
}

// The trampoline scenarios as `--tramp-free` builds them: 2 CPUs, word stores and atomic fetch
// (what the published counts were measured with), 400000 events per execution, bound 1.
Scenario trampolineScenario(const CheckRequest &r) {
  Scenario s;
  s.code = CodeKind::Trampoline;
  s.arch = r.arch.value_or(std::string(arch::defaultArch().name()));
  s.protocol = r.protocol.value_or(arch::protocolsFor(arch::archByName(s.arch)).front().name);
  s.cpus = 2;
  s.store = sim::StoreModel::Word;
  s.fetch = &sim::fetchModelByName("atomic");
  s.preemption = r.preempt;
  s.image = r.image.value_or("");
  s.bounds.maxEvents = 400000;
  s.bounds.maxExecutions = 20000;
  s.bounds.preemptions = 1;
  s.trampoline.free = r.trampFree.value_or("rcu-tasks");
  s.trampoline.syncWhenUnchanged = !r.noSyncUnchanged;
  if (r.trampScenario) {
    if (*r.trampScenario == "ops-uaf-no-sync")
      s.trampoline.variant = TrampolineVariant::OpsUafNoSync;
    else if (*r.trampScenario == "idle-tramp-free")
      s.trampoline.variant = TrampolineVariant::IdleTrampFree;
    else if (*r.trampScenario == "irq-tramp-free")
      s.trampoline.variant = TrampolineVariant::IrqTrampFree;
    else if (*r.trampScenario != "tramp-free-preempted")
      fatal("--tramp-scenario '{}' (known: tramp-free-preempted, ops-uaf-no-sync, "
            "idle-tramp-free, irq-tramp-free)",
            *r.trampScenario);
  }
  s.name = fmt::format("{}-{}-{}", s.arch, trampolineVariantName(s.trampoline.variant),
                       s.trampoline.free);
  for (const auto &[given, flag] : {std::pair{r.cpus.has_value(), "--cpus"},
                                    {r.sites.has_value(), "--sites"},
                                    {r.siteOffset.has_value(), "--site-offset"},
                                    {r.transition.has_value(), "--transition"},
                                    {r.store.has_value(), "--store"},
                                    {r.fetch.has_value(), "--fetch"},
                                    {r.preemption, "--preemption (use --preempt)"}})
    if (given)
      fatal("check: {} does not apply to the trampoline scenarios (--tramp-free)", flag);
  return s;
}

void applySiteOverrides(Scenario &s, const CheckRequest &r) {
  if (r.siteOffset)
    s.siteOffset = *r.siteOffset;
  Transition t = s.sites.front();
  if (r.transition)
    t = parseTransition(*r.transition);
  if (r.sites)
    s.sites.assign(*r.sites, t);
  else if (r.transition)
    s.sites.assign(s.sites.size(), t);
  if (r.preemption) {
    s.preemption = true;
    s.tasksPerCpu = std::max(2u, s.tasksPerCpu);
  }
}

Scenario scenarioFromFlags(const CheckRequest &r);

} // namespace

Scenario buildCheckScenario(const CheckRequest &request) {
  CheckRequest r = request;
  std::optional<arch::ProtocolProgram> program;
  if (r.protocolFile) {
    if (r.protocol)
      fatal("check: --protocol and --protocol-file exclude each other");
    if (r.kernel || r.kernelTree)
      fatal("check: --kernel/--kernel-tree run the tree's own protocol; --protocol-file does not "
            "apply");
    program = loadProtocolFile(*r.protocolFile);
    if (r.arch && *r.arch != program->arch)
      fatal("check: --arch {} but {} is a {} protocol", *r.arch, *r.protocolFile, program->arch);
    if (r.scenarioFile.empty())
      r.arch = program->arch;
    r.protocol = program->name;
  }
  Scenario s = scenarioFromFlags(r);
  if (program) {
    if (s.arch != program->arch)
      fatal("check: {} is a {} protocol; the scenario is {}", *r.protocolFile, program->arch,
            s.arch);
    s.protocolProgram = program;
  }
  return s;
}

namespace {

Scenario scenarioFromFlags(const CheckRequest &r) {
  if (trampolineShorthand(r)) {
    if (!r.scenarioFile.empty())
      fatal("check: --tramp-free/--tramp-scenario/--preempt and --scenario exclude each other");
    Scenario s = trampolineScenario(r);
    if (r.linuxProfile) {
      if (r.trampFree || r.noSyncUnchanged)
        fatal("check: --linux decides when the trampoline is freed: drop --tramp-free and "
              "--no-sync-unchanged");
      applyLinuxProfile(s, *r.linuxProfile, r.protocol);
    }
    s.validate("check");
    return s;
  }
  Scenario s;
  if ((r.mutant || r.foreignInt3 || r.batches) && !r.kernel && !r.kernelTree)
    fatal("check: --mutant, --foreign-int3 and --batches apply to --kernel and --kernel-tree");
  if (r.kernel || r.kernelTree) {
    if (!r.scenarioFile.empty() || r.protocol || r.image || r.arch)
      fatal("check: --kernel/--kernel-tree run the tree's own protocol on x86_64; --scenario, "
            "--protocol, --image and --arch do not apply");
    if (r.kernel && r.kernelTree)
      fatal("check: --kernel and --kernel-tree exclude each other");
    s.code = CodeKind::Linux;
    s.kernel = r.kernel.value_or("");
    s.kernelTree = r.kernelTree.value_or("");
    s.mutant = r.mutant.value_or("");
    s.foreignInt3 = r.foreignInt3;
    if (r.batches)
      s.batches = *r.batches;
  } else if (!r.scenarioFile.empty())
    s = loadScenarioFile(r.scenarioFile);
  else if (!r.protocol && !r.linuxProfile)
    fatal("check: give --protocol or --linux (see ftsim protocols), --scenario FILE, "
          "--kernel VERSION or "
          "--tramp-free POLICY");
  const std::string origin = r.scenarioFile.empty() ? "check" : r.scenarioFile;
  if (r.arch) {
    s.arch = *r.arch;
    // The ISA's most permissive real store model when the user named none (powerpc: words).
    if (!r.store && r.scenarioFile.empty())
      s.store = sim::defaultStoreModel(arch::archByName(s.arch));
  }
  if (r.protocol)
    s.protocol = *r.protocol;
  if (r.cpus)
    s.cpus = *r.cpus;
  if (r.store)
    s.store = sim::parseStoreModel(*r.store);
  if (r.fetch)
    s.fetch = &sim::fetchModelByName(*r.fetch);
  if (r.image) {
    if (s.code == CodeKind::Snippet)
      fatal("check: --image applies to kernel and trampoline scenarios");
    s.image = *r.image;
  }
  if (s.code == CodeKind::Linux && r.siteOffset)
    fatal("check: --site-offset does not apply to Linux scenarios (the linker places the sites)");
  if (s.code == CodeKind::Snippet || s.code == CodeKind::Linux)
    applySiteOverrides(s, r);
  else if (r.sites || r.siteOffset || r.transition || r.preemption)
    fatal("check: --sites, --site-offset, --transition and --preemption apply to site scenarios, "
          "not to {} scenarios",
          codeKindName(s.code));
  if (r.linuxProfile && s.code == CodeKind::Linux)
    fatal("check: --linux selects a profile of ftsim's engine; a Linux scenario runs the "
          "tree's own code (its version is the tree's)");
  if (r.linuxProfile)
    applyLinuxProfile(s, *r.linuxProfile, r.protocol);
  if (s.code == CodeKind::Linux && r.scenarioFile.empty())
    s.name = fmt::format("linux-{}-{}cpu", s.kernel.empty() ? "tree" : s.kernel, s.cpus);
  else if (r.scenarioFile.empty())
    s.name = fmt::format("{}-{}-{}cpu", s.arch, s.protocol, s.cpus);
  s.validate(origin);
  return s;
}

} // namespace

ExploreOptions buildExploreOptions(const Scenario &s, const CheckRequest &r) {
  ExploreOptions o = exploreOptionsFor(s);
  if (r.explorer) {
    o.explorer = explorerByName(*r.explorer).name();
    if (!explorerByName(o.explorer).exhaustive())
      o.maxExecutions = s.explore.runs;
    else
      o.maxExecutions = s.bounds.maxExecutions;
  }
  const bool exhaustive = explorerByName(o.explorer).exhaustive();
  if (exhaustive && (r.runs || r.seed || r.depth))
    fatal("check: --runs, --seed and --depth belong to pct and random search, not to {} search",
          o.explorer);
  if (!exhaustive && (r.bound || r.maxExecutions || r.naive))
    fatal("check: --bound, --max-executions and --naive belong to exhaustive search, not to {}",
          o.explorer);
  if (r.naive && o.explorer != "exhaustive")
    fatal("check: --naive belongs to the exhaustive explorer, not to {}", o.explorer);
  if (r.noStateHashing && o.explorer != "exhaustive")
    fatal("check: --no-state-hashing belongs to the exhaustive explorer, not to {}", o.explorer);
  if (r.bound) {
    if (*r.bound < -1)
      fatal("--bound {}: use -1 for none, or a bound of 0 or more", *r.bound);
    o.preemptionBound = *r.bound;
  }
  if (r.maxExecutions) {
    if (*r.maxExecutions == 0)
      fatal("--max-executions 0: the budget must be at least 1 execution");
    o.maxExecutions = *r.maxExecutions;
  }
  if (r.runs) {
    if (*r.runs == 0)
      fatal("--runs 0: at least 1 run");
    o.maxExecutions = *r.runs;
  }
  if (r.seed)
    o.seed = *r.seed;
  if (r.depth) {
    if (o.explorer != "pct")
      fatal("check: --depth belongs to pct search, not to {} search", o.explorer);
    if (*r.depth < 1 || *r.depth > 20)
      fatal("--depth {}: pct's bug depth is 1 to 20", *r.depth);
    o.pctDepth = *r.depth;
  }
  o.reduction = !r.naive;
  o.stateHashing = !r.noStateHashing;
  if (r.continuation) {
    const std::optional<Continuation> c = continuationByName(*r.continuation);
    if (!c)
      fatal("--continuation '{}': known are {}", *r.continuation, continuationNames());
    if (o.explorer != "exhaustive" ||
        (s.code != CodeKind::Kernel && s.code != CodeKind::Trampoline))
      fatal("check: --continuation belongs to the exhaustive search of kernel and trampoline "
            "scenarios, not to {} search of a {} scenario",
            o.explorer, codeKindName(s.code));
    o.continuation = *c;
  }
  if (o.explorer != "exhaustive") {
    if (r.jobs || r.subtrees)
      fatal("check: --jobs and --subtrees belong to the exhaustive explorer, not to {}",
            o.explorer);
    return o;
  }
  if (r.jobs && (*r.jobs == 0 || *r.jobs > 1024))
    fatal("--jobs {}: use 1 to 1024 worker threads", *r.jobs);
  if (r.subtrees && *r.subtrees > 1000000)
    fatal("--subtrees {}: at most 1000000", *r.subtrees);
  // Kernel and trampoline executions boot a kernel each (about 100 times a site execution) and
  // their published trees are small: the frontier's prefix runs would cost more than they save.
  o.subtrees = r.subtrees.value_or(s.code == CodeKind::Snippet ? kDefaultSubtrees : 0);
  if (o.subtrees == 0 && r.jobs && *r.jobs > 1)
    fatal("--jobs {} with {}: one tree is searched on one thread (give --subtrees N)", *r.jobs,
          r.subtrees ? "--subtrees 0" : "a kernel or trampoline scenario");
  o.jobs = o.subtrees == 0 ? 1 : r.jobs.value_or(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

std::shared_ptr<Crew> startWorkers(const Scenario &scenario, const ExploreOptions &options) {
  if (!scenario.kernel.empty() || !scenario.kernelTree.empty())
    return nullptr;
  return startWorkers(options);
}

} // namespace ftsim::verify
