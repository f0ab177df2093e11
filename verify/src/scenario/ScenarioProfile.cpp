// Kernel profiles on scenarios (Scenario.h, model/LinuxProfile.h): what a profile decides for each
// kind of scenario, and which profile a scenario's choices are.
//
//  - every kind: the patch protocol of the scenario's ISA;
//  - kernel: the update order (59338f754a55), when function_trace_op is set (405e1d834807) and
//    per-ops trampolines (f3bea49115b2: on x86_64 from v3.17, on powerpc never), which decide
//    whether a single ops' sites call its own trampoline or ftrace_caller;
//  - trampoline: when ftrace_shutdown() frees a dynamic trampoline and whether it synchronises
//    when no code changed (12cce594fa8f, 0598e4f08e3d, 0e792b89e680).

#include "ftsim/verify/scenario/Scenario.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/model/LinuxProfile.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

// Whether the release builds the scenario's built-in image: x86-64 mcount sites until v6.x's
// -mfentry-only builds, ppc32 -fpatchable-function-entry sites from v6.6's ftrace_init_nop().
std::string imageMismatch(const Scenario &s, const model::LinuxProfile &p) {
  if (s.image == "x86_64-mcount" && p.code.graphViaOps)
    return fmt::format("x86-64 mcount sites, which Linux {} does not build (-mfentry only since "
                       "562e14f72292)",
                       p.name);
  if (s.image == "ppc32-pfe" && !p.code.ppc32InitNop)
    return fmt::format("ppc32 -fpatchable-function-entry sites, which Linux {} does not take "
                       "(powerpc ftrace_init_nop(), v6.6)",
                       p.name);
  return "";
}

// Per-ops trampolines of a kernel scenario: the release's (f3bea49115b2), where Linux gives the ISA
// any (Arch::linuxOpsTrampolines).
bool releaseHasOpsTrampolines(const Scenario &s, const model::LinuxProfile &p) {
  return p.opsTrampolines && arch::archByName(s.arch).linuxOpsTrampolines();
}

std::string mismatch(const Scenario &s, const model::LinuxProfile &p) {
  const std::string_view protocol = model::profileProtocol(p, s.arch);
  if (s.protocol != protocol)
    return fmt::format("protocol {} is not Linux {}'s ({})", s.protocol, p.name, protocol);
  if (s.nohzFull)
    return fmt::format("nohz_full: Linux {} sends the sync IPI to CPUs in user mode (the deferral "
                       "is V. Schneider's series, in no release)",
                       p.name);
  if (std::string image = imageMismatch(s, p); !image.empty())
    return image;
  if (s.moduleToc != Scenario::ModuleToc::None)
    return fmt::format("module_toc: ppc64 ELFv1's module TOC sites modelled on {} (r2 as the "
                       "TOC), not Linux {}'s {} code",
                       s.arch, p.name, s.arch);
  if (s.code == CodeKind::Kernel) {
    if (s.engine.pre59338f754a55 != p.pre59338f754a55)
      return fmt::format("the update order is {} 59338f754a55, Linux {}'s {}",
                         s.engine.pre59338f754a55 ? "before" : "after", p.name,
                         p.pre59338f754a55 ? "before" : "after");
    if (s.engine.pre405e1d834807 != p.pre405e1d834807)
      return fmt::format("function_trace_op is set as {} 405e1d834807, Linux {}'s as {}",
                         s.engine.pre405e1d834807 ? "before" : "after", p.name,
                         p.pre405e1d834807 ? "before" : "after");
    if (s.engine.functionTraceOpWait)
      return fmt::format("function_trace_op_wait: Linux {} sends ftrace_sync_ipi after publishing "
                         "function_trace_op and waits for no grace period (a hypothesis)",
                         p.name);
    if (const bool has = releaseHasOpsTrampolines(s, p); s.engine.opsTrampolines != has)
      return s.engine.opsTrampolines
                 ? fmt::format("per-ops trampolines, which Linux {} does not have on {} "
                               "(f3bea49115b2)",
                               p.name, s.arch)
                 : fmt::format("no per-ops trampolines, which Linux {} has on {} (f3bea49115b2; "
                               "ops_trampolines = true)",
                               p.name, s.arch);
  }
  if (s.code == CodeKind::Trampoline) {
    if (!p.opsTrampolines)
      return fmt::format("per-ops trampolines, which Linux {} does not have (f3bea49115b2)",
                         p.name);
    const std::string_view free = model::trampolineFreeName(p.free.free);
    if (s.trampoline.free != free)
      return fmt::format("free {}, Linux {}'s is {}", s.trampoline.free, p.name, free);
    if (s.trampoline.syncWhenUnchanged != p.free.syncWhenUnchanged)
      return fmt::format("{} when no code changed, Linux {} {} (0e792b89e680)",
                         s.trampoline.syncWhenUnchanged ? "synchronises" : "no sync", p.name,
                         p.free.syncWhenUnchanged ? "synchronises" : "does not");
  }
  return "";
}

} // namespace

std::string profileMismatch(const Scenario &s, const std::string &profileName) {
  return mismatch(s, model::linuxProfileByName(profileName));
}

void applyLinuxProfile(Scenario &s, const std::string &profileName,
                       const std::optional<std::string> &explicitProtocol) {
  const model::LinuxProfile &p = model::linuxProfileByName(profileName);
  const std::string protocol(model::profileProtocol(p, s.arch));
  if (explicitProtocol && *explicitProtocol != protocol)
    fatal("--protocol {} is not Linux {}'s patch protocol on {} ({}): give one of them",
          *explicitProtocol, p.name, s.arch, protocol);
  if (std::string image = imageMismatch(s, p); !image.empty())
    fatal("--linux {}: the scenario's image has {}", p.name, image);
  s.protocol = protocol;
  if (s.code == CodeKind::Kernel) {
    const bool trampolines = releaseHasOpsTrampolines(s, p);
    if (s.engine.opsTrampolines && !trampolines)
      fatal("--linux {}: the scenario uses per-ops trampolines, which Linux {} does not have on "
            "{} (f3bea49115b2)",
            p.name, p.name, s.arch);
    if (s.engine.functionTraceOpWait)
      fatal("--linux {}: the scenario waits for grace periods after publishing function_trace_op "
            "(function_trace_op_wait), which no release does",
            p.name);
    s.engine.opsTrampolines = trampolines;
    s.engine.pre59338f754a55 = p.pre59338f754a55;
    s.engine.pre405e1d834807 = p.pre405e1d834807;
  }
  if (s.code == CodeKind::Trampoline) {
    if (!p.opsTrampolines)
      fatal("--linux {}: trampoline scenarios need per-ops trampolines, which Linux {} does not "
            "have (f3bea49115b2)",
            p.name, p.name);
    s.trampoline.free = std::string(model::trampolineFreeName(p.free.free));
    s.trampoline.syncWhenUnchanged = p.free.syncWhenUnchanged;
  }
  s.linuxProfile = std::string(p.name);
}

const model::LinuxProfile *scenarioProfile(const Scenario &s) {
  if (!s.linuxProfile.empty())
    return &model::linuxProfileByName(s.linuxProfile);
  for (const model::LinuxProfile &p : model::linuxProfiles())
    if (mismatch(s, p).empty())
      return &p;
  return nullptr;
}

model::ReleaseCode scenarioReleaseCode(const Scenario &s) {
  if (const model::LinuxProfile *p = scenarioProfile(s))
    return p->code;
  for (const model::LinuxProfile &p : model::linuxProfiles())
    if (imageMismatch(s, p).empty())
      return p.code;
  return model::defaultLinuxProfile().code;
}

std::string scenarioLinuxLabel(const Scenario &s) {
  if (s.code == CodeKind::Linux)
    return (s.kernel.empty() ? s.kernelTree : s.kernel) + " tree";
  if (!s.linuxProfile.empty())
    return s.linuxProfile;
  if (const model::LinuxProfile *p = scenarioProfile(s))
    return std::string(p->name) + " (unclaimed)";
  return "-";
}

std::string describeScenarioProfile(const Scenario &s) {
  // Kind linux runs the tree's own code: its Linux is the tree, whatever ftsim's profiles say.
  if (s.code == CodeKind::Linux)
    return fmt::format("Linux {} itself (the tree's own text_poke code{})",
                       s.kernel.empty() ? s.kernelTree : s.kernel,
                       s.mutant.empty() ? "" : ", with source mutant " + s.mutant);
  if (!s.linuxProfile.empty())
    return model::describeProfile(model::linuxProfileByName(s.linuxProfile));
  if (const model::LinuxProfile *p = scenarioProfile(s))
    return model::describeProfile(*p) + " (the newest profile with this scenario's choices)";
  return fmt::format("no Linux release: {} (ftsim protocols lists the releases)",
                     mismatch(s, model::defaultLinuxProfile()));
}

} // namespace ftsim::verify
