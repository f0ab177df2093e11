#pragma once
// ftsim::kernel, the system under test. The simulated kernel: a built guest image booted on a
// sim::Machine with ftrace's engine running on it. Boot loads the segments, maps the generated
// trampolines (arch::FtraceTrampolines), runs FtraceCore::boot (every site read, verified and
// turned into a nop; "ftrace: allocating N entries in M pages") and wires the arch patcher over the
// named patch protocol. From then on, engine operations (tracefs writes: tracers, filters, probes)
// run as the machine's patcher — every store, sync and publication is a scheduled event — while
// guest tasks run workloads on the other CPUs and reach the engine's callbacks through the
// trampolines' hypercall stubs. The core owns what it patches: ftrace_call's target for each
// trace function comes from its model::TraceFunctionStubs, and ftrace_graph_call is patched by
// FtraceCore::setGraphCaller through the arch patcher.
//
// What it exposes for verification: the sites and trampoline instructions that get patched (to
// watch them for torn fetches), every callback invocation (ip, parent, cpu, task, event), the
// executions of every patch site from the machine's event log (an independent count of calls),
// and the tracefs the tracers fill.

#include "ftsim/arch/Image.h"
#include "ftsim/arch/LivePatchingRule.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SiteHooks.h"
#include "ftsim/arch/Trampolines.h"
#include "ftsim/kernel/SiteTargets.h"
#include "ftsim/model/ArchPatcher.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/LinuxProfile.h"
#include "ftsim/model/TraceFs.h"
#include "ftsim/model/TraceFunctionStubs.h"
#include "ftsim/sim/Machine.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::kernel {

struct KernelConfig {
  sim::MachineConfig machine = defaultMachine();
  // arch::protocolsFor(): int3, int3-skip, ..., word, ...; empty: the image ISA's default.
  std::string protocol;
  std::size_t bufferEntriesPerCpu = 16384;
  // The simulated clock: every machine event lasts this long (a 1 GHz CPU retiring one
  // instruction per cycle when events are instruction steps; a fast-mode Run counts as one).
  std::uint64_t nsPerEvent = 1;
  // Per-ops trampolines (arch_ftrace_update_trampoline, f3bea491) when the ISA has them. Off by
  // default: every ops then goes through ftrace_caller and the list function, as before f3bea491.
  bool opsTrampolines = false;
  // When ftrace_shutdown() frees a DYNAMIC ops' trampoline (model/OpsTrampolines.h).
  model::TrampolineFreePolicy freePolicy;
  // ftrace_ops_list_func reads ftrace_ops_list and walks it one event later (the window of
  // 0e792b89e680); false: both in one event.
  bool splitListFunction = false;
  // ppc32: guest module ELFs (corpora ppc32-module/module.elf, linked at 0xb0000000, more than
  // 32 MiB from kernel text) loaded with the kernel, as the module loader would before ftrace
  // processes their __mcount_loc. A module is named by its `<name>_ftrace_tramp` symbol (the slot
  // where module_finalize_ftrace() puts mod->arch.tramp; `<name>_ftrace_tramp_regs` is
  // tramp_regs); the Kernel writes both long-branch stubs and registers them with the patcher.
  std::vector<std::string> modules;
  // Watch the patch protocol's writes once the kernel is live (after ftrace_init's boot-time
  // nops) with the ISA's live-patching rule (arch::LivePatchingRule, powerpc CMODX); its
  // findings are livePatchingFindings().
  bool livePatchingRule = false;
  // The update order before 59338f754a55 (sites first, then ftrace_call; FtraceCore).
  bool pre59338f754a55 = false;
  // function_trace_op set when the ops list changes, before ftrace_call (before 405e1d834807).
  bool pre405e1d834807 = false;
  // The release's own code: record flags and ftrace_check_record(), the graph entry, powerpc's
  // ftrace_init_nop(), the call-site flavours it builds (model/LinuxProfile.h). An image whose
  // sites the release does not build is a FatalError of the target's trampolines or site hooks.
  model::ReleaseCode release = model::defaultLinuxProfile().code;
  // An engine mutation (tests, mutation scores): wraps the arch patcher the core drives, e.g. to
  // write a call to the wrong trampoline. The exact-target oracle (SiteTargets.h) still derives
  // each site's legal states from the records, so what the mutation writes is judged.
  std::function<std::unique_ptr<model::ArchPatcher>(model::ArchPatcher &)> patcherMutation;

  static sim::MachineConfig defaultMachine() {
    sim::MachineConfig c;
    c.cpus = 4;
    return c;
  }
};

// A Linux profile's choices (model/LinuxProfile.h) on a kernel config: its patch protocol for
// `isa` (FatalError when config.protocol already names another), its update order and when a
// dynamic trampoline is freed.
void applyLinuxProfile(KernelConfig &config, std::string_view profile, std::string_view isa);

// One call of a trace function from ftrace_call / ftrace_regs_call.
struct CallbackEvent {
  std::uint64_t event = 0; // machine event index of the hypercall
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t ip = 0;
  std::uint64_t parentIp = 0;
  bool fullRegs = false;        // came through ftrace_regs_caller
  std::string function;         // TraceFunction::describe()
  std::uint64_t trampoline = 0; // the per-ops trampoline it came through (0: the shared ones)
};

// The list function walked an ops its owner had already freed (0e792b89e680): a use-after-free.
struct OpsUseAfterFree {
  std::uint64_t event = 0; // the walk
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t ip = 0;         // the traced call
  std::string ops;              // its name
  std::uint64_t readEvent = 0;  // when the walker read ftrace_ops_list
  std::uint64_t freedEvent = 0; // when the owner freed it
};

// A trace function called with an op other than its own: ftrace_call called ops A's func while
// the op the trampoline had loaded from function_trace_op was another (405e1d834807).
struct OpMismatch {
  std::uint64_t event = 0; // the callback
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t ip = 0;
  std::string function; // whose func ftrace_call called
  std::string op;       // the op it was passed
};

// A live per-ops trampoline (kallsyms: "ftrace_trampoline").
struct OpsTrampoline {
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t callSite = 0;
  std::uint64_t callbackStub = 0;
  const model::FtraceOps *ops = nullptr;
  bool saveRegs = false;
};

// A CPU executing a patch site (from the event log: a Step whose pc is the site).
struct SiteExecution {
  std::uint64_t event = 0;
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t ip = 0;
};

// A patched text location with the states it may legally hold.
struct PatchSite {
  std::uint64_t addr = 0;
  std::uint32_t size = 0;
  std::vector<arch::Bytes> states;
  std::string what; // "schedule", "ftrace_call", ...
};

class Kernel {
public:
  // FatalError for a non-executable ISA, an ISA without trampolines, a bad protocol name, or an
  // image whose boot hits ftrace_bug (the report is in the message).
  explicit Kernel(arch::Image image, KernelConfig config = {});
  ~Kernel();
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  const arch::Image &image() const { return image_; }
  sim::Machine &machine() { return *machine_; }
  const sim::Machine &machine() const { return *machine_; }
  model::FtraceCore &core() { return *core_; }
  model::TraceFs &tracefs() { return *tracefs_; }
  const arch::PatchProtocol &protocol() const { return *protocol_; }
  // For patches ftrace does not make (the slides' "another solution": a jmp over the site).
  arch::PatchProtocol &protocol() { return *protocol_; }
  const arch::TrampolineCode &trampolines() const { return trampolines_->code(); }
  const model::BootReport &bootReport() const { return boot_; }
  // The findings of the ISA's live-patching rule over the protocol's live writes (with
  // KernelConfig::livePatchingRule), one line each.
  std::vector<std::string> livePatchingFindings() const;
  arch::SiteFlavour flavour() const { return flavour_; }

  // A task running workload_<name>(seed) on `cpu` ("sched", "mm", "fs", "boot", "mixed",
  // "tight"). FatalError for an unknown workload.
  int addWorkload(std::string_view name, unsigned cpu, std::uint64_t seed);
  // The same workload as `cpu`'s idle task ("swapper/<cpu>", sim::TaskSpec::idle): an idle loop
  // that runs traced code, runs with preemption disabled, schedules through ftsim_hc_schedule, and
  // is not waited for by RCU-tasks.
  int addIdleWorkload(std::string_view name, unsigned cpu, std::uint64_t seed);
  // Run `body` as the machine's patcher (tracefs writes inside it are scheduled events).
  void patcher(std::function<void(Kernel &)> body);
  sim::RunResult run(sim::Scheduler &scheduler, std::uint64_t maxEvents = UINT64_MAX);
  // The index the next machine event will get (the simulated clock is this × nsPerEvent).
  std::uint64_t now() const;

  // Every record's site and every patched trampoline instruction, with its legal states.
  std::vector<PatchSite> patchSites() const;
  // machine().watchSite() on each of them: torn fetches become findings, and fast mode steps
  // every site execution (so siteExecutions() sees all of them).
  void watchPatchSites();

  // Every callback so far (empty when the machine keeps no log: MachineConfig::keepLog).
  const std::vector<CallbackEvent> &callbacks() const { return callbacks_; }
  // The ops' owner frees it (kfree after unregister_ftrace_function returned): from now on the
  // list function walking it is a use-after-free, reported in opsUseAfterFree().
  void freeOps(const model::FtraceOps &ops);
  const std::vector<OpsUseAfterFree> &opsUseAfterFree() const { return opsUseAfterFree_; }
  // Every call of an ops' func with another op (empty when the machine keeps no log).
  const std::vector<OpMismatch> &opMismatches() const { return opMismatches_; }
  // function_trace_op's guest address (what ftrace_caller loads into its third argument) and the
  // guest address standing for `ops` (the value function_trace_op holds when it points at it).
  std::uint64_t functionTraceOpAddress() const { return ftraceData_; }
  std::uint64_t guestOps(model::FtraceOps &ops);
  // Every ops trampoline allocated so far (freed ones too: memory is never reused).
  const std::vector<OpsTrampoline> &opsTrampolines() const { return opsTrampolines_; }
  // The per-ops trampoline a site calls now, from its bytes (0: none).
  std::uint64_t siteTarget(std::uint64_t ip);
  // Every site execution so far, from the machine's event log (empty when the machine keeps none:
  // MachineConfig::keepLog).
  std::vector<SiteExecution> siteExecutions() const;
  // A hash of the host state the CPUs' side changes (HostState.cpp): what each task's list
  // function read, each task's return stack, the freed ops, the use-after-free and op-mismatch
  // records. With the machine's stateHash() and the patcher's progress it is what the rest of an
  // execution depends on (the engine's own state changes only in the patcher).
  std::uint64_t hostStateHash() const;

  std::uint64_t symbolAddress(std::string_view name) const;          // FatalError when unknown
  std::string symbolName(std::uint64_t addr, bool withOffset) const; // %ps / %pS
  model::TraceContext contextOf(const arch::GuestContext &cpu) const;
  model::ContextLevel contextLevel(const arch::GuestContext &cpu) const;

private:
  // patchSites(), each site named (`what`) only when `named`: naming a record looks up its symbol,
  // and watchPatchSites() runs at every execution's start.
  std::vector<PatchSite> collectSites(bool named) const;
  struct ReturnFrame {
    std::uint64_t returnAddress;
    std::uint64_t func;
    std::uint64_t callTime;
    unsigned users;
    int depth;
  };

  // Boot, in order (KernelBoot.cpp).
  void placeModuleArea(std::uint64_t trampolineBase);
  void loadModules();
  void mapTrampolines(std::uint64_t base);
  void makePatcher();
  void finalizeModules();
  void makeCore();
  void bootFtrace();
  // The C functions the trampolines call and what the tracers ask of the machine (Callbacks.cpp).
  void bindHypercalls();
  void makeTraceFs();
  void recordCallback(CallbackEvent event);
  void traceCallback(arch::GuestContext &cpu, const model::TraceFunction &function,
                     const std::vector<model::FtraceOps *> *list = nullptr);
  void listWalk(arch::GuestContext &cpu);
  void setFunctionTraceOp(model::FtraceOps &op);
  void prepareReturn(arch::GuestContext &cpu);
  void graphFunc(std::uint64_t ip);
  std::uint64_t graphEnter(arch::GuestContext &cpu, std::uint64_t ip, std::uint64_t slot);
  void returnToHandler(arch::GuestContext &cpu);
  model::StackSample sampleStack(std::uint64_t ip);
  std::int64_t taskKey(const arch::GuestContext &cpu) const;
  // Per-ops trampolines (OpsTrampolines.cpp).
  void enableOpsTrampolines(model::FtraceConfig &ftrace);
  void updateOpsTrampoline(model::FtraceOps &ops);
  void opsTrampolineCallback(arch::GuestContext &cpu, model::FtraceOps &ops,
                             std::uint64_t trampoline);

  struct LoadedModule {
    std::string name;
    arch::Image image;
  };
  const LoadedModule *moduleAt(std::uint64_t addr) const;

  arch::Image image_;
  KernelConfig config_;
  std::vector<std::unique_ptr<LoadedModule>> modules_; // stable: symbolizers refer to them
  std::vector<std::uint64_t> mcountLocs_;              // kernel's and modules' __mcount_loc
  arch::SiteFlavour flavour_ = arch::SiteFlavour::Fentry;
  std::unique_ptr<sim::Machine> machine_;
  std::shared_ptr<const arch::FtraceTrampolines> trampolines_; // shared by same-request boots
  std::unique_ptr<arch::PatchProtocol> protocol_;
  std::unique_ptr<arch::SiteHooks> siteHooks_;      // the target's per-record arch code
  std::unique_ptr<arch::RuleCheckedPort> rulePort_; // the ISA's live-patching rule, if watched
  std::unique_ptr<arch::MachinePort> syncPort_;     // reports all-CPU syncs to siteTargets_
  std::unique_ptr<SiteTargets> siteTargets_;        // each record site's exact legal states
  std::unique_ptr<model::ArchPatcher> protocolPatcher_, mutatedPatcher_;
  std::unique_ptr<model::ArchPatcher> patcher_; // what the core drives: target-checked
  std::unique_ptr<model::OpsTrampolineArch> opsTrampolineArch_;
  std::unique_ptr<model::FtraceCore> core_;
  std::unique_ptr<model::TraceFs> tracefs_;
  model::BootReport boot_;
  std::unique_ptr<model::TraceFunctionStubs> stubs_; // what ftrace_call calls for each function
  std::vector<CallbackEvent> callbacks_;
  std::vector<OpsTrampoline> opsTrampolines_;
  struct ListRead {
    std::uint64_t event;
    std::vector<model::FtraceOps *> list;
  };
  // Per task: the ops lists its list functions read, innermost last (a timer interrupt's handler
  // can run the list function on top of the task's own, between its read and its walk).
  std::map<std::int64_t, std::vector<ListRead>> listReads_;
  std::map<const model::FtraceOps *, std::uint64_t> freedOps_; // -> event of the free
  std::vector<OpsUseAfterFree> opsUseAfterFree_;
  std::vector<OpMismatch> opMismatches_;
  std::uint64_t ftraceData_ = 0; // function_trace_op, then ops words
  std::map<const model::FtraceOps *, std::uint64_t> opsAddress_;
  std::map<std::uint64_t, model::FtraceOps *> opsAt_;
  std::map<std::int64_t, std::vector<ReturnFrame>> retStacks_; // per task: current->ret_stack
  bool watching_ = false; // watchPatchSites() was called: new trampolines extend the legal states
  arch::GuestContext *current_ = nullptr; // the CPU inside a callback
  std::uint64_t currentRegs_ = 0;
};

} // namespace ftsim::kernel
