#pragma once
// Kernel profiles: which Linux a run's engine behaviour corresponds to. One registry
// (linuxProfiles(), newest first; the default is the newest). A profile names its release, the
// commits that decide each behaviour ftsim models as a choice, and those choices: the x86 and
// powerpc patch protocols, the update order of ftrace_modify_all_code(), when function_trace_op
// is set (405e1d834807), per-ops trampolines and
// when a dynamic ops' trampoline is freed; and the release's own code no scenario chooses
// (ReleaseCode: record flags and ftrace_check_record(), the function_graph entry in the
// trampolines, powerpc's boot-time nops, the call-site flavours it builds). Each historical variant
// of a published scenario is the profile of a version that had the bug.
//
// stillMixed() says what is one listing whatever the profile: code whose layout differs between
// releases but whose behaviour the checks can see does not.

#include "ftsim/model/OpsTrampolines.h"
#include "ftsim/model/RecordRules.h"

#include <string>
#include <string_view>
#include <vector>

namespace ftsim::model {

struct LinuxCommit {
  std::string_view sha;     // 12 hex digits
  std::string_view subject; // its subject line, or what it did when the subject is not quoted
  bool present;             // in this profile's release
};

// What of a release's own code a kernel built from it runs, which no scenario chooses: its record
// flags and ftrace_check_record(), how function_graph enters, its powerpc ftrace_init_nop() and
// which call-site flavours it builds with.
struct ReleaseCode {
  const RecordRules *records = &RecordRules::v6_12();
  // CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS (x86-64 and ppc32 in v6.1 and v6.12, neither in v4.19):
  // function_graph is an ftrace_ops whose callback ftrace_graph_func() rewrites the return
  // address through ftrace_regs, and the trampolines return straight after ftrace_call; false:
  // ftrace_enable_ftrace_graph_caller() patches the ftrace_graph_call jump in their epilogue.
  // It also decides x86-64's call sites: v6.x builds with -mfentry only (562e14f72292 removed the
  // mcount entry from ftrace_64.S), so mcount images run as v4.19 or v3.13.
  bool graphViaOps = true;
  // powerpc ftrace_init_nop() (v6.6): checks `mflr r0; stw r0,4(r1)` before a -pg site and takes
  // -fpatchable-function-entry sites; before, boot's ftrace_make_nop() checks the `bl` alone and
  // ppc32 has -pg sites only.
  bool ppc32InitNop = true;
};

struct LinuxProfile {
  std::string_view name;    // "6.12": what --linux takes
  std::string_view release; // "v6.12 (2024)"
  std::string_view summary;
  std::vector<LinuxCommit> commits;
  // Behaviour.
  std::string_view x86Protocol;   // arch::protocolsFor(x86_64): "int3" or "int3-skip"
  std::string_view ppc32Protocol; // "patch-instruction" or "patch-instruction-ipi"
  bool pre59338f754a55 = false;   // the sites moved before ftrace_call goes to the list function
  bool pre405e1d834807 = false;   // function_trace_op set before ftrace_call is switched
  bool opsTrampolines = true;     // f3bea49115b2: per-ops trampolines on x86
  TrampolineFreePolicy free;      // when ftrace_shutdown() frees a dynamic ops' trampoline
  ReleaseCode code;               // the release's own code beyond those choices
};

// Newest first; front() is the default.
const std::vector<LinuxProfile> &linuxProfiles();
const LinuxProfile &defaultLinuxProfile();
// FatalError naming `name` and the known profiles when `name` is none of them.
const LinuxProfile &linuxProfileByName(std::string_view name);
// The patch protocol of `profile` on ISA `arch` ("x86_64", "ppc32").
std::string_view profileProtocol(const LinuxProfile &profile, std::string_view arch);
// The newest profile whose behaviour includes protocol `protocol` of `arch`, or nullptr (a mutant
// or model hypothesis no release had).
const LinuxProfile *profileOfProtocol(std::string_view arch, std::string_view protocol);
// "6.12 (v6.12 (2024): ...; commits: 0e792b89e680 ..., ...)", one line.
std::string describeProfile(const LinuxProfile &profile);
// What of the engine is one version whatever the profile (see the header comment).
std::string_view stillMixed();

} // namespace ftsim::model
