#pragma once
// A verification scenario: what runs on the machine (the guest code and its tasks), which sites the
// patcher rewrites and how (nop->call, call->nop, call->call, through which protocol), the memory
// models, and the exploration bounds. Scenarios are data (TOML files in corpora/scenarios/) or are
// built from `ftsim check` flags; both give the same Scenario value.
//
// Every kind of scenario is a file; each kind has one harness (Harness.h):
//  - snippet (SiteHarness.h): a hand-built kernel fragment per ISA whose functions have one patch
//    site each, tasks that call them, and two tracer trampolines (A and B) that are host
//    hypercalls recording which CPU, task and site reached them;
//  - kernel (KernelHarness.h): the built-in guest image booted through the simulated kernel, an
//    engine operation sequence run as the patcher while guest workloads run; uses `code.image`
//    and the `[engine]` table, and ignores the snippet keys (site_offset, calls, tasks_per_cpu,
//    [[sites]], [patch]);
//  - trampoline (TrampolineHarness.h): a dynamic ops' trampoline freed while tasks may be on it;
//    uses `code.image` and the `[trampoline]` table.
//
// File format (TOML; every key is optional except `arch` and `protocol`):
//
//   name = "torn-nop-to-call"          # defaults to the file's stem
//   source = "Rostedt, Ftrace Kernel Hooks slides"
//   fidelity = "teaching-strawman"    # faithful | model-hypothesis | teaching-strawman
//   published = "torn-nop-to-call"    # ftsim repro groups the variants of papers/NAME.md
//   arch = "x86_64"                    # x86_64 | ppc32
//   protocol = "direct"                # ftsim protocols
//   cpus = 2                           # 1..8, the patcher runs on CPU 0
//   store = "byte"                     # byte | word | line
//   fetch = "stale"                    # atomic | line | stale
//   preemption = false                 # offer timer preemptions (needs tasks_per_cpu >= 2)
//   [code]
//   kind = "snippet"                   # snippet | kernel
//   site_offset = 4                    # site address mod 64 (the load address is chosen for it)
//   calls = 1                          # how many times each task calls each function
//   tasks_per_cpu = 1
//   task_cpus = [1]                    # default: every CPU but the patcher's
//   module_toc = "nop"                 # module sites `bl; lwz r2,12(r1)` disabled as: nop | skip
//                                      #   (ppc32 only; see Scenario::moduleToc)
//   [[sites]]                          # one function with one patch site each, in one batch
//   transition = "nop-to-call"         # nop-to-call | call-to-nop | call-to-call
//   [patch]
//   order = "ascending"                # the order sites are queued: ascending | descending
//   [bounds]
//   max_events = 20000                 # per execution
//   preemptions = -1                   # CHESS preemption bound, -1: none
//   max_executions = 200000            # budget of an exhaustive exploration
//   [explore]                          # how `ftsim check` searches (flags override it)
//   explorer = "exhaustive"            # exhaustive | pct | random | rr-bounded (Explore.h);
//                                      #   default: exhaustive (snippet), random (kernel),
//                                      #   rr-bounded (trampoline)
//   runs = 1000                        # pct/random: executions (default 1000; kernel: 40)
//   seed = 1                           # pct/random: the explorer's seed
//   pct_depth = 3
//   continuation = "run-on"            # exhaustive on kernel and trampoline kinds: the base
//                                      #   schedule deviations are counted from: run-on (the
//                                      #   process that ran last while it can) | round-robin
//   [expect]
//   verdict = "violation"              # violation | verified (for the published-scenario tests)
//   oracle = "torn-fetch"
//
// Engine-level (kind = "kernel") additions:
//
//   [code]
//   kind = "kernel"
//   image = "x86_64-fentry"            # a built-in flavour (default: the arch's executable one)
//   [engine]
//   workloads = ["mm", "sched"]        # workload_<name>, one task each on CPU 1, 2, ...
//   seed = 5                           # the workloads' seed argument
//   ops_trampolines = false            # per-ops trampolines (f3bea491)
//   pre_59338f754a55 = false           # the engine's pre-59338f754a55 update order
//   pre_405e1d834807 = false           # function_trace_op set before ftrace_call
//   function_trace_op_wait = false     # hypothesis: grace periods (rude, then tasks) between
//                                      #   publishing function_trace_op and patching ftrace_call
//   (pre-405e1d834807) explore = "random"                 # older spellings of [explore] explorer,
//   runs, seed and runs = 40                          #   pct_depth, still read seed_schedule = 1
//   pct_depth = 3
//   [[engine.ops]]                     # the ftrace_ops the sequence names
//   name = "a"
//   filter = "schedule"                # set_ftrace_filter glob(s), comma separated; "" = all
//   flags = ["dynamic", "save-regs"]   # dynamic | save-regs | recursion
//   livepatch = "posix_cpu_timer_set_v2" # an IPMODIFY ops whose callback sets regs->ip to it
//   boot = true                        # registered before the run (not a scheduled operation)
//   [[engine.steps]]                   # the patcher's operations, in order
//   op = "register"                    # register | unregister | set-filter | append-filter |
//   ops = "b"                          #   remove-filter | tracer
//   pattern = "put_page"               # for the filter operations
//   tracer = "function"                # for op = "tracer": function | nop
//
// Trampoline (kind = "trampoline") additions (store "word" and fetch "atomic" are what the
// published counts were measured with; bounds.preemptions is the rr-bounded explorer's bound):
//
//   [code]
//   kind = "trampoline"
//   image = "x86_64-fentry"
//   [trampoline]
//   variant = "tramp-free-preempted"   # tramp-free-preempted | ops-uaf-no-sync | idle-tramp-free |
//                                      # irq-tramp-free
//   free = "rcu-tasks"                 # immediate | sched-sync | rcu-tasks | rude |
//   rcu-tasks-classic sync_when_unchanged = true         # false: before 0e792b89e680
//   sleep_until_call = true            # default: the ISA's (on for ppc32)

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/ProtocolProgram.h"
#include "ftsim/sim/FetchModel.h"
#include "ftsim/sim/Models.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::model {
struct LinuxProfile;
struct ReleaseCode;
} // namespace ftsim::model

namespace ftsim::verify {

// What a site becomes. The trampolines: A is the old call target, B the new one for call->call.
enum class Transition { NopToCall, CallToNop, CallToCall };
std::string_view transitionLabel(Transition t);    // "nop-to-call"
Transition parseTransition(std::string_view text); // FatalError naming the known ones
// A site's bytes before and after transition `t`, given its nop and its calls to the two tracers.
struct TransitionBytes {
  arch::Bytes oldBytes, newBytes;
};
TransitionBytes transitionBytes(Transition t, const arch::Bytes &nop, const arch::Bytes &callA,
                                const arch::Bytes &callB);

enum class CodeKind { Snippet, Kernel, Trampoline, Linux };
std::string_view codeKindName(CodeKind kind); // "snippet", "kernel", "trampoline", "linux"

// How faithful a published scenario is to Linux: "faithful" (Linux's mechanism and code path, as
// ftsim models them), "model-hypothesis" (a behaviour Linux did not ship, or a modelling choice the
// verdict depends on), "teaching-strawman" (a variant no release had, kept to show what a step is
// for). papers/README.md explains the words; each page says why.
inline constexpr std::array<std::string_view, 3> kFidelityWords = {"faithful", "model-hypothesis",
                                                                   "teaching-strawman"};
bool isFidelityWord(std::string_view word);

// The largest max_events a scenario may give (Scenario::validate says why).
inline constexpr std::uint64_t kMaxEventsBound = 10'000'000;

struct ScenarioBounds {
  std::uint64_t maxEvents = 20000;      // per execution; a longer execution is cut (reported)
  int preemptions = -1;                 // CHESS bound; -1: unbounded
  std::uint64_t maxExecutions = 200000; // exhaustive budget; exceeding it is reported, not silent
  bool operator==(const ScenarioBounds &) const = default;
};

// The ftrace_ops of an engine-level scenario.
struct EngineOpsSpec {
  std::string name;
  std::string filter; // comma-separated globs; empty: every function
  bool dynamic = false;
  bool saveRegs = false;
  bool recursion = false;
  std::string livepatch; // the function its callback redirects to (IPMODIFY | SAVE_REGS)
  bool boot = false;     // registered before the run
  bool operator==(const EngineOpsSpec &) const = default;
};

enum class EngineOpKind { Register, Unregister, SetFilter, AppendFilter, RemoveFilter, Tracer };
std::string_view engineOpName(EngineOpKind kind); // "register", "set-filter", ...

struct EngineStep {
  EngineOpKind op = EngineOpKind::Register;
  std::string ops;              // an EngineOpsSpec name (all but Tracer)
  std::string pattern;          // filter operations
  std::string tracer;           // Tracer: "function" or "nop"
  std::string describe() const; // "register b", "append-filter a put_page", "tracer function"
  bool operator==(const EngineStep &) const = default;
};

struct EngineSpec {
  std::vector<std::string> workloads{"sched"};
  std::uint64_t seed = 5;
  bool opsTrampolines = false;
  bool pre59338f754a55 = false;
  bool pre405e1d834807 = false;
  bool functionTraceOpWait = false; // a hypothesis (FtraceCore::setFunctionTraceOpWait)
  std::vector<EngineOpsSpec> ops;
  std::vector<EngineStep> steps;
  bool operator==(const EngineSpec &) const = default;
};

enum class TrampolineVariant { TrampFreePreempted, OpsUafNoSync, IdleTrampFree, IrqTrampFree };
std::string_view trampolineVariantName(TrampolineVariant v); // "tramp-free-preempted", ...

struct TrampolineSpec {
  TrampolineVariant variant = TrampolineVariant::TrampFreePreempted;
  std::string free = "rcu-tasks"; // model::parseTrampolineFree (OpsTrampolines.h)
  bool syncWhenUnchanged = true;
  std::optional<bool> sleepUntilCall; // nullopt: the ISA's default
  bool operator==(const TrampolineSpec &) const = default;
};

// How a scenario is searched by default (Explore.h); `ftsim check` flags override it.
struct ExploreSpec {
  std::string explorer; // "": the kind's default (exhaustive, random, rr-bounded)
  std::uint64_t runs = 1000;
  std::uint64_t seed = 1;
  unsigned pctDepth = 3;
  // The engine-level exhaustive search's base schedule (VisibleSearch.h): "" or "run-on" (the
  // process that ran last while it can), "round-robin" (the CPUs and the patcher in turn).
  std::string continuation;
  bool operator==(const ExploreSpec &) const = default;
};

struct Scenario {
  std::string name = "site";
  std::string source;    // citation for published scenarios
  std::string fidelity;  // "", or how faithful to Linux: see kFidelityWords
  std::string published; // the published scenario it reproduces (papers/NAME.md; ftsim repro)
  // The Linux profile it claims (model::LinuxProfile, TOML `linux`): "" claims none. When set,
  // validate() requires the scenario's choices to be that profile's (ScenarioProfile.cpp).
  std::string linuxProfile;
  std::string arch{::ftsim::arch::defaultArch().name()};
  std::string protocol = "int3";
  // The protocol as data when it came from a protocol file (--protocol-file, or the scenario's
  // [protocol_program] table): written into the scenario's TOML, so replay and job files carry it.
  std::optional<arch::ProtocolProgram> protocolProgram;
  unsigned cpus = 2;
  sim::StoreModel store = sim::StoreModel::Byte;
  const sim::FetchModel *fetch = &sim::fetchModelByName("stale");
  bool preemption = false;
  CodeKind code = CodeKind::Snippet;
  unsigned siteOffset = 4;
  unsigned calls = 1;
  unsigned tasksPerCpu = 1;
  std::vector<unsigned> taskCpus; // empty: every CPU except the patcher's (CPU 0)
  std::vector<Transition> sites{Transition::NopToCall};
  bool descending = false; // queue the sites in descending address order
  // Kind snippet, a stay in user mode per call round (TOML code.user_entry): none; "sync-first",
  // the kernel entry's catch-up (the deferred sync) before the traced functions; "site-first",
  // the first traced function runs on the entry path before the catch-up (mutable entry text).
  enum class UserEntry { None, SyncFirst, SiteFirst };
  UserEntry userEntry = UserEntry::None;
  // Kind snippet, TOML code.module_toc: module call sites that keep a TOC (SnippetEmitter.h,
  // ModuleTocSite; ppc64 ELFv1 modelled on ppc32 with r2 as the TOC): `bl <stub>; lwz r2,12(r1)`,
  // the stub saving the caller's r2 in that slot, the worker adding r2 to its result after every
  // call. What a disabled site holds: "nop" (before f48cb8b48b0b, the reload still runs) or
  // "skip" (`b +8` over the reload, f48cb8b48b0b).
  enum class ModuleToc { None, Nop, Skip };
  ModuleToc moduleToc = ModuleToc::None;
  // TOML nohz_full: the sync IPI to a CPU in user mode is deferred to its next kernel entry
  // (sim::MachineConfig::deferSyncInUser).
  bool nohzFull = false;
  ScenarioBounds bounds;
  std::string expectVerdict; // "", "violation" or "verified"
  std::string expectOracle;
  std::string image;         // kind kernel: a built-in flavour name or a path to a linked image
  EngineSpec engine;         // kind kernel
  std::string kernel;        // kind linux: an installed Debian tree, "6.1" or "6.12"
  std::string kernelTree;    // kind linux: a Linux tree's directory (instead of kernel)
  std::string mutant;        // kind linux: a source mutation operator applied to the tree
  bool foreignInt3 = false;  // kind linux: a kprobe-like int3 the batch does not own
  unsigned batches = 1;      // kind linux: batches back to back, each undoing the one before
  TrampolineSpec trampoline; // kind trampoline
  ExploreSpec explore;

  // explore.explorer, or the kind's default explorer.
  std::string explorer() const;
  // The CPUs that run tasks, resolved.
  std::vector<unsigned> resolvedTaskCpus() const;
  // Checks ranges and names against the registries; FatalError naming `origin` and the problem.
  void validate(const std::string &origin) const;
  // The TOML text of this scenario (parseScenario(toToml()) == *this): the form embedded in replay
  // files.
  std::string toToml() const;
  // One line for people: "x86_64 int3, 2 CPUs, 1 site (nop-to-call) at offset 4, store byte,
  // fetch stale, no preemption".
  std::string describe() const;
  bool operator==(const Scenario &) const = default;
};

// Parse a scenario from TOML text. `origin` (a file name) prefixes every error: one line, e.g.
// "corpora/scenarios/x.toml: unknown key 'cpu' (known: ...)".
Scenario parseScenario(const std::string &text, const std::string &origin);
Scenario loadScenarioFile(const std::string &path);

// Kernel profiles (model/LinuxProfile.h) on scenarios (ScenarioProfile.cpp):
// - applyLinuxProfile: the profile's choices replace the scenario's (protocol; kernel: update
//   order; trampoline: when the trampoline is freed) and linuxProfile names it. FatalError when
//   the scenario needs what the profile does not have (per-ops trampolines before f3bea49115b2),
//   or when `explicitProtocol` differs from the profile's.
// - profileMismatch: why the scenario's choices are not those of `profileName` ("" when they are).
// - describeScenarioProfile: one line for check's output: the claimed profile, else the newest
//   profile whose choices the scenario's are, else why none is (a mutant, a model hypothesis).
void applyLinuxProfile(Scenario &s, const std::string &profileName,
                       const std::optional<std::string> &explicitProtocol);
std::string profileMismatch(const Scenario &s, const std::string &profileName);
std::string describeScenarioProfile(const Scenario &s);
// The profile a scenario runs as: the one it claims, else the newest whose choices its are, else
// nullptr (no release: the engine's newest behaviour where the scenario does not choose).
const model::LinuxProfile *scenarioProfile(const Scenario &s);
// The release code a scenario's kernel runs: its profile's, else (no release has its choices, a
// mutant or a model hypothesis) the newest release's that builds its image.
model::ReleaseCode scenarioReleaseCode(const Scenario &s);
// One cell for tables: "6.12" (claimed), "6.1 tree" (kind linux: the tree itself), "4.19
// (unclaimed)" (the newest release with its choices), "-" (no release has its choices).
std::string scenarioLinuxLabel(const Scenario &s);

} // namespace ftsim::verify
