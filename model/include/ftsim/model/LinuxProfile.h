#pragma once
// Kernel profiles: which Linux a run's engine behaviour corresponds to. One registry
// (linuxProfiles(), newest first; the default is the newest). A profile names its release, the
// commits that decide each behaviour ftsim models as a choice, and those choices: the x86 and
// powerpc patch protocols, the update order of ftrace_modify_all_code(), when function_trace_op
// is set (405e1d834807), per-ops trampolines and
// when a dynamic ops' trampoline is freed. Each historical variant of a published scenario is the
// profile of a version that had the bug (bugVariantProfile()).
//
// What a profile does not (yet) decide is said by stillMixed(): parts of the engine that are one
// version whatever the profile (the record flag layout and ftrace_check_record follow >= 6.5:
// CALL_OPS, TOUCHED; the trampolines follow 5.x ftrace_64.S; the ppc32 ftrace_init_nop follows
// 6.6).

#include "ftsim/model/OpsTrampolines.h"

#include <string>
#include <string_view>
#include <vector>

namespace ftsim::model {

struct LinuxCommit {
  std::string_view sha;     // 12 hex digits
  std::string_view subject; // its subject line, or what it did when the subject is not quoted
  bool present;             // in this profile's release
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
