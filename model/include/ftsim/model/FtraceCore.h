#pragma once
// The ISA-neutral ftrace core (kernel/trace/ftrace.c): boot-time records, the ops list and the
// per-record reference counts, the update engine, and the list function.
//
// It talks to the machine only through arch::MachinePort (reads for verification, core syncs,
// RCU-tasks waits, publication of shared pointers) and to the ISA only through an ArchPatcher.
// Errors a user can cause (bad pattern, registering an ops twice, ...) are FtraceError, a
// FatalError carrying the errno Linux returns. Broken internal invariants are FTSIM_PANIC.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/MachinePort.h"
#include "ftsim/model/ArchPatcher.h"
#include "ftsim/model/CheckRecord.h"
#include "ftsim/model/DynFtrace.h"
#include "ftsim/model/FtraceBug.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/model/OpsTrampolines.h"
#include "ftsim/model/Symbolizer.h"
#include "ftsim/model/TraceFunction.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::model {

// A FatalError with the errno the kernel would return (EINVAL, EBUSY, ENODEV, ...).
class FtraceError : public FatalError {
public:
  FtraceError(int errnoValue, const std::string &message)
      : FatalError(message), errno_(errnoValue) {}
  int errnoValue() const { return errno_; }

private:
  int errno_;
};

// The fixed trampolines of the image (arch/x86/kernel/ftrace_64.S or its ppc32 equivalent).
struct TrampolineAddresses {
  std::uint64_t mcount = 0;           // MCOUNT_ADDR: mcount, __fentry__ or _mcount
  std::uint64_t ftraceCaller = 0;     // FTRACE_ADDR
  std::uint64_t ftraceRegsCaller = 0; // FTRACE_REGS_ADDR; == ftraceCaller without WITH_REGS
};

// ftrace_graph_call: the jump in ftrace_caller that ftrace_enable_ftrace_graph_caller() points at
// ftrace_graph_caller and ftrace_disable_ftrace_graph_caller() points back. site 0: none.
struct GraphCallSite {
  std::uint64_t site = 0;
  std::uint64_t caller = 0; // ftrace_graph_caller
  arch::Bytes off;          // what the site holds while function_graph is off (as generated)
};

struct FtraceConfig {
  ArchPatcher *patcher = nullptr;
  arch::MachinePort *port = nullptr;
  TrampolineAddresses addresses;
  Symbolizer symbolizer;
  // CONFIG_DYNAMIC_FTRACE_WITH_REGS: the arch has ftrace_regs_caller.
  bool withRegs = true;
  // The release's record flags and ftrace_check_record() (RecordRules.h; the kernel profile's).
  RecordRules records = RecordRules::v6_12();
  // CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS (arm64/riscv): records may call an ops directly.
  bool withCallOps = false;
  // arch_ftrace_update_trampoline; nullptr: the arch has no per-ops trampolines.
  OpsTrampolineArch *trampolines = nullptr;
  // When ftrace_shutdown() frees a DYNAMIC ops' trampoline (and lets its owner free the ops).
  TrampolineFreePolicy freePolicy;
  GraphCallSite graphCall;
  // Called inside the publication that sets function_trace_op (the same event), so an
  // integration can store it where its trampolines load it.
  std::function<void(FtraceOps &)> functionTraceOpChanged;
};

struct BootOptions {
  // The __mcount_loc table as linked (unsorted; zero entries are linker padding).
  std::span<const std::uint64_t> mcountLocs;
  // is_kernel_text() || is_kernel_inittext(); entries outside are skipped. Empty: all are text.
  std::function<bool(std::uint64_t)> isKernelText;
  // FTRACE_MCOUNT_MAX_OFFSET (x86 fentry: ENDBR_INSN_SIZE). A record further than this from the
  // start of its symbol belongs to a discarded weak function: it is marked DISABLED and listed as
  // __ftrace_invalid_address___<offset>. nullopt: no check (mcount flavour, powerpc).
  std::optional<std::uint64_t> maxMcountOffset;
  // Linux kills all of ftrace on the first site it cannot convert (ftrace_bug ->
  // FTRACE_WARN_ON_ONCE -> ftrace_kill). false: report every bad site, mark its record DISABLED
  // and keep going (for diagnosing an image).
  bool stopAtFirstBug = true;
};

struct BootReport {
  std::size_t entries = 0;   // records created (count - skipped)
  std::size_t pages = 0;     // 4 KiB pages used
  std::size_t groups = 0;    // page groups (one allocation each)
  std::size_t skipped = 0;   // zero or non-text mcount entries
  std::size_t converted = 0; // sites turned into nops
  bool noFunctions = false;  // an empty __mcount_loc: ftrace is disabled
  std::vector<FtraceBugReport> bugs;
  // "ftrace: allocating 24683 entries in 97 pages" (pr_info in ftrace_process_locs), or
  // "ftrace: No functions to be traced?" (ftrace_init)
  std::string allocationLine() const;
};

// Who is executing a traced function (for recursion protection).
enum class ContextLevel { Normal, Softirq, Irq, Nmi };
struct ExecutionContext {
  unsigned cpu = 0;
  int task = -1; // -1: the CPU's idle task
  ContextLevel level = ContextLevel::Normal;
};

// One traced call as the trampoline reports it.
struct CallSite {
  std::uint64_t ip = 0;               // the call site (rec->ip)
  std::uint64_t parentIp = 0;         // the traced function's return address
  arch::GuestContext *regs = nullptr; // full pt_regs (ftrace_regs_caller) or nullptr
  ExecutionContext context;
  // The op the trampoline passed (function_trace_op as it loaded it, before ftrace_call);
  // nullptr: function_trace_op at the instant of the call.
  FtraceOps *op = nullptr;
};

class FtraceCore {
public:
  explicit FtraceCore(FtraceConfig config);

  // --- Boot (ftrace_init -> ftrace_process_locs -> ftrace_update_code) -------------------------
  BootReport boot(const BootOptions &options);

  const RecordTable &records() const { return records_; }
  RecordTable &records() { return records_; }
  RecordLayout layout() const;
  DynFtrace *lookupRecord(std::uint64_t ip); // ftrace_location_range(ip, ip)
  std::optional<SymbolInfo> symbolize(std::uint64_t addr) const;
  // print_rec(): "schedule", "fn [mod]" or "__ftrace_invalid_address___<off>"
  std::string recordName(const DynFtrace &rec) const;
  // The function a record belongs to, or nullopt for an invalid (weak) record.
  std::optional<SymbolInfo> recordSymbol(const DynFtrace &rec) const;
  bool moduleExists(std::string_view module) const;

  // tracefs listings
  std::string availableFilterFunctions() const;
  std::string enabledFunctions() const; // "schedule (2) R  ..." (t_show, FTRACE_ITER_ENABLED)

  // --- ftrace_ops ---------------------------------------------------------------------------
  // register_ftrace_function(): ftrace_startup(ops, 0)
  void registerFunction(FtraceOps &ops);
  // unregister_ftrace_function(): ftrace_shutdown(ops, 0)
  void unregisterFunction(FtraceOps &ops);
  // The ops list, most recently registered first (add_ftrace_ops inserts at the head).
  const std::vector<FtraceOps *> &opsList() const { return opsList_; }

  // ftrace_set_filter / ftrace_set_notrace: one pattern (may carry ":mod:<name>").
  void setFilter(FtraceOps &ops, std::string_view pattern, bool reset);
  void setNotrace(FtraceOps &ops, std::string_view pattern, bool reset);
  // ftrace_hash_move_and_update_ops(): install a new filter (filter == true) or notrace hash,
  // re-count the records and patch the code if the ops is live.
  void replaceHash(FtraceOps &ops, bool filter, FtraceHash hash);
  // match_records(): add (or, for "!pat", remove) the records matching `func` (optionally only
  // those of modules matching `module`) to `hash`. Returns whether anything matched.
  bool matchRecords(FtraceHash &hash, std::string_view func,
                    std::optional<std::string_view> module) const;

  // Lower-level entry points used by function probes (register_ftrace_function_probe).
  void startup(FtraceOps &ops, unsigned command);
  void shutdown(FtraceOps &ops, unsigned command);

  // --- Update engine ------------------------------------------------------------------------
  // ftrace_get_addr_new / ftrace_get_addr_curr. Bad trampoline accounting kills ftrace (as the
  // kernel's FTRACE_WARN_ON does) and returns ftrace_caller.
  std::uint64_t addrNew(const DynFtrace &rec);
  std::uint64_t addrCurr(const DynFtrace &rec);
  // The bytes a record's site holds now, according to its flags.
  arch::Bytes expectedSiteBytes(const DynFtrace &rec);
  // ftrace_enable_ftrace_graph_caller / ftrace_disable_ftrace_graph_caller: point the
  // ftrace_graph_call jump (config().graphCall) at ftrace_graph_caller or back, through the arch
  // patcher. Nothing to do without a graph call site or when it already holds the wanted jump.
  void setGraphCaller(bool enable);

  // --- The function called from ftrace_call -------------------------------------------------
  const TraceFunction &traceFunction() const { return traceFunction_; } // ftrace_trace_function
  FtraceOps *functionTraceOp() const { return functionTraceOp_; }       // function_trace_op
  // What a trampoline does at its ftrace_call site: run `function` for `site`.
  void invoke(const TraceFunction &function, CallSite &site);
  void listFunc(CallSite &site); // __ftrace_ops_list_func
  // The walk of __ftrace_ops_list_func over a list read earlier (rcu_dereference of
  // ftrace_ops_list), for a list function split in a read and a walk.
  void listFunc(CallSite &site, const std::vector<FtraceOps *> &list);
  void assistFunc(FtraceOps &ops, CallSite &site); // ftrace_ops_assist_func
  // ftrace_ops_test(): does `ops` want `ip`? (hasRegs: the caller saved full pt_regs)
  bool opsTest(const FtraceOps &ops, std::uint64_t ip, bool hasRegs) const;
  // How many callbacks recursion protection suppressed.
  std::size_t recursionsBlocked() const { return recursionsBlocked_; }

  // --- State --------------------------------------------------------------------------------
  bool dead() const { return disabled_; } // ftrace_is_dead()
  const std::vector<FtraceBugReport> &bugs() const { return bugs_; }
  const std::vector<std::string> &warnings() const { return warnings_; }
  const FtraceConfig &config() const { return config_; }
  // sysctl kernel.ftrace_enabled
  void setFtraceEnabled(bool enabled);
  bool ftraceEnabled() const { return ftraceEnabled_; }
  // The engine as it was before 59338f754a55 ("ftrace: Fix a slight race in modifying what
  // function callback gets traced", 2014): ftrace_modify_all_code() patches the call sites first
  // and switches ftrace_call to the final function afterwards, without going through the list
  // function. For the list-to-single-race scenario only; false (today's order) by default.
  void setPre59338f754a55Order(bool enabled) { pre59338f754a55_ = enabled; }
  bool pre59338f754a55Order() const { return pre59338f754a55_; }
  // The engine as it was before 405e1d834807 ("ftrace: Synchronize setting function_trace_op with
  // ftrace_trace_function", v3.14): update_ftrace_function() sets function_trace_op at once,
  // before ftrace_modify_all_code() switches ftrace_call, so a CPU can load the new op and call
  // the old function with it. false (today's: set_function_trace_op published in
  // ftrace_modify_all_code(), then an IPI, then ftrace_call) by default.
  void setPre405e1d834807(bool enabled) { pre405e1d834807_ = enabled; }
  bool pre405e1d834807() const { return pre405e1d834807_; }
  // A hypothesis no release has: ftrace_modify_all_code() waits for every CPU and task to leave
  // where it may hold the old function_trace_op (synchronize_rcu_tasks_rude(), then
  // synchronize_rcu_tasks(), as ftrace_shutdown() does before freeing a trampoline) between
  // publishing the op and patching ftrace_call to a single ops' func. Against the race the IPI
  // leaves (a CPU that loaded the old op before the publication calls the new func with it).
  void setFunctionTraceOpWait(bool enabled) { functionTraceOpWait_ = enabled; }
  bool functionTraceOpWait() const { return functionTraceOpWait_; }

  // Commands of ftrace_run_update_code()
  static constexpr unsigned UpdateCalls = 1u << 0;     // FTRACE_UPDATE_CALLS
  static constexpr unsigned DisableCalls = 1u << 1;    // FTRACE_DISABLE_CALLS
  static constexpr unsigned UpdateTraceFunc = 1u << 2; // FTRACE_UPDATE_TRACE_FUNC

private:
  friend class FtraceCoreTestPeer;

  void fail(int errnoValue, const std::string &message) const;
  void ftraceBug(PatchStatus failure, BugType type, const DynFtrace &rec,
                 const arch::Bytes &expected, bool killAfter = true);
  void kill();
  void warn(std::string message);

  // ftrace_process_locs pieces
  void allocatePages(std::size_t count, std::vector<FtracePage> &out) const;

  // ops list
  void addOps(FtraceOps &ops);
  bool removeOps(FtraceOps &ops);
  void updateFtraceFunction();
  TraceFunction opsGetListFunc(FtraceOps &ops) const;

  // reference counting
  bool hashRecUpdate(FtraceOps &ops, bool inc);
  bool testRecOpsNeedsRegs(const DynFtrace &rec) const;
  int hashUpdateIpModify(FtraceOps &ops, const std::optional<FtraceHash> &oldHash,
                         const std::optional<FtraceHash> &newHash);
  FtraceOps *findTrampOpsAnyOther(const DynFtrace &rec, const FtraceOps *exclude) const;
  FtraceOps *findTrampOpsCurr(const DynFtrace &rec) const;
  FtraceOps *findTrampOpsNew(const DynFtrace &rec) const;

  // code update
  void freeTrampoline(FtraceOps &ops);
  std::uint64_t badTrampolineAccounting(const std::string &message);
  std::uint64_t sharedCaller(bool regs) const; // ftrace_regs_caller or ftrace_caller
  // ftrace_shutdown()'s parts: the code update without the ops, the check that no record kept
  // flags once no ops is left, and the wait before a dynamic ops' trampoline is freed.
  void updateCodeWithout(FtraceOps &ops, unsigned command);
  void checkRecordsCleared();
  void waitAndFreeTrampoline(FtraceOps &ops);
  void runUpdateCode(unsigned command);
  void runModifyCode(FtraceOps &ops, unsigned command, const FtraceOpsHash &oldHash);
  void modifyAllCode(unsigned command);
  bool updateFtraceFunc(const TraceFunction &function);
  void replaceCode(bool enable);
  void setHash(FtraceOps &ops, std::string_view pattern, bool reset, bool filter);

  // recursion protection (trace_test_and_set_recursion)
  int testAndSetRecursion(const ExecutionContext &context);
  void clearRecursion(const ExecutionContext &context, int bit);

  FtraceConfig config_;
  RecordTable records_;
  std::vector<FtraceOps *> opsList_;
  TraceFunction traceFunction_;   // ftrace_trace_function
  TraceFunction savedFtraceFunc_; // saved_ftrace_func (ftrace_startup_enable)
  TraceFunction patchedFunction_; // update_ftrace_func()'s save_func
  FtraceOps listEnd_{"ftrace_list_end", {}, OpsFlag::Stub}; // ftrace_list_end
  FtraceOps *functionTraceOp_ = &listEnd_;
  FtraceOps *setFunctionTraceOp_ = &listEnd_;
  FtraceOps *removedOps_ = nullptr;
  int startUp_ = 0; // ftrace_start_up
  bool ftraceEnabled_ = true;
  bool pre59338f754a55_ = false;
  bool pre405e1d834807_ = false;
  bool functionTraceOpWait_ = false;
  void publishFunctionTraceOp();
  bool disabled_ = false; // ftrace_disabled
  bool booted_ = false;
  std::optional<std::uint64_t> maxMcountOffset_;
  std::vector<FtraceBugReport> bugs_;
  std::vector<std::string> warnings_;
  std::map<std::int64_t, std::uint32_t> recursion_; // per task (or idle CPU) context bits
  std::size_t recursionsBlocked_ = 0;
};

} // namespace ftsim::model
