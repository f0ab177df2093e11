// The kernel profiles (LinuxProfile.h). Versions are release series; a commit is marked present
// when the release has its behaviour (checked against the 6.1 and 6.12 sources for the newer
// profiles; the older ones from the commits' dates and the papers pages).

#include "ftsim/model/LinuxProfile.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::model {
namespace {

constexpr LinuxCommit k08d636b6d4fb{"08d636b6d4fb",
                                    "ftrace/x86: Have arch x86_64 use breakpoints instead of stop "
                                    "machine (v3.5; its int3 handler skips the site)",
                                    true};
LinuxCommit c59338f754a55(bool present) {
  return {"59338f754a55",
          "ftrace: Fix a slight race in modifying what function callback gets traced (2014)",
          present};
}
// Authored November 2013, first released in v3.14: v3.13 sets function_trace_op early.
LinuxCommit c405e1d834807(bool present) {
  return {"405e1d834807",
          "ftrace: Synchronize setting function_trace_op with ftrace_trace_function (v3.14)",
          present};
}
LinuxCommit cf3bea49115b2(bool present) {
  return {"f3bea49115b2", "ftrace/x86: Add dynamic allocated trampoline for ftrace_ops", present};
}
LinuxCommit c0598e4f08e3d(bool present) {
  return {"0598e4f08e3d", "synchronize_rcu_tasks() before a dynamic trampoline is freed", present};
}
LinuxCommit cc96f83856f56(bool present) {
  return {"c96f83856f56", "powerpc: ftrace_modify_all_code() without stop_machine() (v4.6)",
          present};
}
LinuxCommit c9e298e860408(bool present) {
  return {"9e298e860408",
          "ftrace/x86_64: Emulate call function while updating in breakpoint handler (2019)",
          present};
}
LinuxCommit c0e792b89e680(bool present) {
  return {"0e792b89e680", "ftrace: Fix use-after-free for dynamic ftrace_ops (2022)", present};
}

std::vector<LinuxProfile> makeProfiles() {
  std::vector<LinuxProfile> p;
  p.push_back({"6.12",
               "v6.12 (2024)",
               "text_poke_bp() batches whose int3 handler emulates the call; powerpc "
               "patch_instruction() without IPI; synchronize_rcu_tasks_rude() and "
               "synchronize_rcu_tasks() before a dynamic trampoline is freed, even when no code "
               "changed",
               {k08d636b6d4fb, c59338f754a55(true), c405e1d834807(true), cf3bea49115b2(true),
                c0598e4f08e3d(true), cc96f83856f56(true), c9e298e860408(true), c0e792b89e680(true)},
               "int3",
               "patch-instruction",
               false,
               false,
               true,
               {TrampolineFree::RcuTasks, true},
               {&RecordRules::v6_12(), true, true}});
  p.push_back(
      {"6.1",
       "v6.1 (2022)",
       "as 6.12 in every choice a scenario makes (0e792b89e680 is in 6.1: ftrace_shutdown's "
       "`out:` precedes the synchronisation); its own code differs: no CALL_OPS, TOUCHED or "
       "MODIFIED record flags, powerpc boot nops before ftrace_init_nop()",
       {k08d636b6d4fb, c59338f754a55(true), c405e1d834807(true), cf3bea49115b2(true),
        c0598e4f08e3d(true), cc96f83856f56(true), c9e298e860408(true), c0e792b89e680(true)},
       "int3",
       "patch-instruction",
       false,
       false,
       true,
       {TrampolineFree::RcuTasks, true},
       {&RecordRules::v6_1(), true, false}});
  p.push_back(
      {"4.19",
       "v4.19 (2018)",
       "ftrace's own breakpoint code, whose int3 handler skips the call; powerpc "
       "patch_instruction() without IPI; rcu-tasks before a trampoline is freed, but not "
       "when the shutdown changed no code (before 0e792b89e680)",
       {k08d636b6d4fb, c59338f754a55(true), c405e1d834807(true), cf3bea49115b2(true),
        c0598e4f08e3d(true), cc96f83856f56(true), c9e298e860408(false), c0e792b89e680(false)},
       "int3-skip",
       "patch-instruction",
       false,
       false,
       true,
       {TrampolineFree::RcuTasks, false},
       {&RecordRules::v4_19(), false, false}});
  p.push_back(
      {"3.13",
       "v3.13 (2014)",
       "ftrace's own breakpoint code (handler skips the call); the sites move before "
       "ftrace_call goes to the list function (before 59338f754a55); function_trace_op "
       "is set when the ops list changes, before ftrace_call (before 405e1d834807); no "
       "per-ops trampolines; powerpc under stop_machine() (every CPU context-synchronised)",
       {k08d636b6d4fb, c59338f754a55(false), c405e1d834807(false), cf3bea49115b2(false),
        c0598e4f08e3d(false), cc96f83856f56(false), c9e298e860408(false), c0e792b89e680(false)},
       "int3-skip",
       "patch-instruction-ipi",
       true,
       true,
       false,
       {TrampolineFree::Immediate, false},
       {&RecordRules::v3_13(), false, false}});
  return p;
}

} // namespace

const std::vector<LinuxProfile> &linuxProfiles() {
  static const std::vector<LinuxProfile> profiles = makeProfiles();
  return profiles;
}

const LinuxProfile &defaultLinuxProfile() { return linuxProfiles().front(); }

const LinuxProfile &linuxProfileByName(std::string_view name) {
  std::string known;
  for (const LinuxProfile &p : linuxProfiles()) {
    if (p.name == name)
      return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  fatal("unknown Linux profile '{}' (known: {})", name, known);
}

std::string_view profileProtocol(const LinuxProfile &profile, std::string_view arch) {
  return arch == "ppc32" ? profile.ppc32Protocol : profile.x86Protocol;
}

const LinuxProfile *profileOfProtocol(std::string_view arch, std::string_view protocol) {
  for (const LinuxProfile &p : linuxProfiles())
    if (profileProtocol(p, arch) == protocol)
      return &p;
  return nullptr;
}

std::string describeProfile(const LinuxProfile &profile) {
  std::string commits;
  for (const LinuxCommit &c : profile.commits)
    commits += fmt::format("{}{}{}", commits.empty() ? "" : ", ", c.present ? "" : "no ", c.sha);
  const ReleaseCode &code = profile.code;
  return fmt::format(
      "Linux {} ({}): {}; {}; function_graph {}; powerpc boot nops by {}; commits: {}",
      profile.name, profile.release, profile.summary, code.records->describe(),
      code.graphViaOps ? "as an ops (ftrace_graph_func), x86-64 fentry sites only"
                       : "by the patched ftrace_graph_call jump, x86-64 fentry or mcount sites",
      code.ppc32InitNop ? "ftrace_init_nop() (-pg and -fpatchable-function-entry sites)"
                        : "ftrace_make_nop() (-pg sites, the bl alone checked)",
      commits);
}

std::string_view stillMixed() {
  return "one listing whatever the profile, the same registers reaching the callbacks: the "
         "trampolines' save and restore (x86-64 ftrace_64.S, whose v3.13 ancestor in entry_64.S "
         "saved the same frame; ppc32 ftrace_entry.S of v6.6, whose v4.19 ancestor ftrace_32.S "
         "saved the same registers); ppc32 per-ops trampolines are a port of x86's, which no "
         "powerpc release has";
}

} // namespace ftsim::model
