#include "ftsim/model/FtraceCore.h"

#include "ftsim/model/Glob.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>

namespace ftsim::model {
namespace {

const char *errnoName(int value) {
  switch (value) {
  case EINVAL:
    return "EINVAL";
  case EBUSY:
    return "EBUSY";
  case ENODEV:
    return "ENODEV";
  case ENOENT:
    return "ENOENT";
  case ENOMEM:
    return "ENOMEM";
  default:
    return "error";
  }
}

} // namespace

std::string BootReport::allocationLine() const {
  if (noFunctions)
    return "ftrace: No functions to be traced?";
  return fmt::format("ftrace: allocating {} entries in {} pages", entries, pages);
}

FtraceCore::FtraceCore(FtraceConfig config) : config_(std::move(config)) {
  if (!config_.patcher || !config_.port)
    FTSIM_PANIC("FtraceCore needs an ArchPatcher and a MachinePort");
  // Without CONFIG_DYNAMIC_FTRACE_WITH_REGS, FTRACE_REGS_ADDR is FTRACE_ADDR
  // (include/linux/ftrace.h).
  if (!config_.withRegs)
    config_.addresses.ftraceRegsCaller = config_.addresses.ftraceCaller;
}

void FtraceCore::fail(int errnoValue, const std::string &message) const {
  throw FtraceError(errnoValue, fmt::format("{} (-{})", message, errnoName(errnoValue)));
}

void FtraceCore::warn(std::string message) { warnings_.push_back(std::move(message)); }

// ftrace_kill(): stop everything, never touch the text again.
void FtraceCore::kill() {
  disabled_ = true;
  ftraceEnabled_ = false;
  traceFunction_ = TraceFunction{};
}

RecordLayout FtraceCore::layout() const {
  return RecordLayout{config_.patcher->arch().wordSize(), config_.patcher->archPrivateSize()};
}

std::optional<SymbolInfo> FtraceCore::symbolize(std::uint64_t addr) const {
  if (!config_.symbolizer)
    return std::nullopt;
  return config_.symbolizer(addr);
}

std::optional<SymbolInfo> FtraceCore::recordSymbol(const DynFtrace &rec) const {
  std::optional<SymbolInfo> symbol = symbolize(rec.ip);
  // lookup_ip(): with FTRACE_MCOUNT_MAX_OFFSET, a site far from its symbol's start belongs to a
  // weak function the linker discarded.
  if (symbol && maxMcountOffset_ && rec.ip - symbol->start > *maxMcountOffset_)
    return std::nullopt;
  return symbol;
}

std::string FtraceCore::recordName(const DynFtrace &rec) const {
  // print_rec()
  if (std::optional<SymbolInfo> symbol = recordSymbol(rec)) {
    if (symbol->module.empty())
      return symbol->name;
    return fmt::format("{} [{}]", symbol->name, symbol->module);
  }
  if (maxMcountOffset_) {
    std::optional<SymbolInfo> raw = symbolize(rec.ip);
    return fmt::format("__ftrace_invalid_address___{}", raw ? rec.ip - raw->start : 0);
  }
  return fmt::format("{:#x}", rec.ip); // %ps of an unknown address
}

bool FtraceCore::moduleExists(std::string_view module) const {
  bool found = false;
  records_.forEach([&](const DynFtrace &rec) {
    if (!found) {
      std::optional<SymbolInfo> symbol = symbolize(rec.ip);
      found = symbol && symbol->module == module;
    }
  });
  return found;
}

DynFtrace *FtraceCore::lookupRecord(std::uint64_t ip) {
  return records_.find(ip, config_.patcher->arch().siteSize());
}

// --- Boot ----------------------------------------------------------------------------------------

// ftrace_allocate_pages() / ftrace_allocate_records(): fill as much as possible with no empty
// pages: each group takes the largest power of two of pages not exceeding what is left.
void FtraceCore::allocatePages(std::size_t count, std::vector<FtracePage> &out) const {
  const RecordLayout recordLayout = layout();
  const std::size_t perPage = recordLayout.entriesPerPage();
  while (count) {
    const std::size_t pages = (count + perPage - 1) / perPage;
    const unsigned order = static_cast<unsigned>(std::bit_width(pages) - 1); // fls(pages) - 1
    std::size_t capacity = (kFtracePageSize << order) / recordLayout.entrySize();
    FtracePage page;
    page.order = order;
    page.records.reserve(std::min(capacity, count));
    out.push_back(std::move(page));
    count -= std::min(capacity, count);
  }
}

BootReport FtraceCore::boot(const BootOptions &options) {
  if (booted_)
    fail(EBUSY, "ftrace: the records are already initialised");
  booted_ = true;
  maxMcountOffset_ = options.maxMcountOffset;
  BootReport report;

  // ftrace_init(): copy the table (the kernel frees __mcount_loc afterwards) and sort it.
  std::vector<std::uint64_t> locs(options.mcountLocs.begin(), options.mcountLocs.end());
  if (locs.empty()) {
    report.noFunctions = true;
    disabled_ = true; // ftrace_init: "goto failed" -> ftrace_disabled = 1
    return report;
  }
  const RecordLayout recordLayout = layout();
  const std::size_t perPage = recordLayout.entriesPerPage();
  const std::size_t count = locs.size();
  std::size_t pages = (count + perPage - 1) / perPage;
  std::sort(locs.begin(), locs.end());

  std::vector<FtracePage> groups;
  allocatePages(count, groups);

  std::size_t skipped = 0;
  std::size_t current = 0;
  for (std::uint64_t addr : locs) {
    // Linkers pad between objects' __mcount_loc sections; weak functions get zeroed or moved out
    // of the kernel text by KASLR: skip those.
    if (!addr || (options.isKernelText && !options.isKernelText(addr))) {
      ++skipped;
      continue;
    }
    FtracePage *page = &groups[current];
    const std::size_t endOffset = (page->records.size() + 1) * recordLayout.entrySize();
    if (endOffset > (kFtracePageSize << page->order)) {
      if (current + 1 >= groups.size())
        FTSIM_PANIC("ftrace_process_locs: not enough pages allocated for {} records", count);
      page = &groups[++current];
    }
    page->records.push_back(DynFtrace{addr, 0, NoArchFtrace{}});
  }

  // Groups left unused because entries were skipped are freed, and the page count corrected.
  if (current + 1 < groups.size()) {
    const std::size_t pgRemaining =
        (perPage << groups[current].order) - groups[current].records.size();
    if (skipped < pgRemaining) {
      warn("Extra allocated pages for ftrace");
    } else {
      std::size_t remaining = 0;
      for (std::size_t i = current + 1; i < groups.size(); ++i)
        remaining += std::size_t{1} << groups[i].order;
      pages -= remaining;
      const std::size_t skip = (skipped - pgRemaining + perPage - 1) / perPage;
      if (skip != remaining)
        warn(fmt::format("Extra allocated pages for ftrace: {} with {} skipped", remaining,
                         skipped));
    }
    groups.resize(current + 1);
  }
  records_.pages() = std::move(groups);

  // ftrace_update_code(): convert every mcount call into a nop.
  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      if (disabled_)
        break;
      rec.flags = 0;
      rec.arch = config_.patcher->initialArchPrivate(rec, symbolize(rec.ip));
      PatchOutcome outcome = config_.patcher->initNop(rec, config_.addresses.mcount);
      if (!outcome.ok()) {
        // ftrace_nop_initialize(): report and stop converting this page group. The report kills
        // ftrace (FTRACE_WARN_ON_ONCE), so in Linux nothing after it is converted either.
        ftraceBug(outcome.status, BugType::Init, rec, outcome.expected, options.stopAtFirstBug);
        if (options.stopAtFirstBug)
          break;
        rec.flags |= RecordFlag::Disabled;
        continue;
      }
      ++report.converted;
    }
  }

  // ftrace_check_work_func() -> test_for_valid_rec(): disable records of discarded weak functions.
  if (maxMcountOffset_)
    records_.forEach([&](DynFtrace &rec) {
      if (!recordSymbol(rec))
        rec.flags |= RecordFlag::Disabled;
    });

  report.entries = count - skipped;
  report.pages = pages;
  report.groups = records_.pages().size();
  report.skipped = skipped;
  report.bugs = bugs_;
  return report;
}

// --- ftrace_bug
// ------------------------------------------------------------------------------------

void FtraceCore::ftraceBug(PatchStatus failure, BugType type, const DynFtrace &rec,
                           const arch::Bytes &expected, bool killAfter) {
  FtraceBugReport report;
  report.failure = failure;
  report.bugType = type;
  report.ip = rec.ip;
  report.wordSize = config_.patcher->arch().wordSize();
  report.symbol = symbolize(rec.ip);
  arch::Bytes actual(config_.patcher->arch().siteSize());
  if (config_.port->readText(rec.ip, actual))
    report.actual = actual;
  if (failure == PatchStatus::Mismatch)
    report.expected = expected;
  report.recordFlags = rec.flags;
  if (rec.has(RecordFlag::TrampEn)) {
    bool any = false;
    for (FtraceOps *op : opsList_)
      if (op->trampoline && op->funcHash.containsIp(rec.ip)) {
        report.trampolines +=
            fmt::format("\ttramp: {} ({})",
                        formatSymbolOffset(symbolize(op->trampoline), op->trampoline), op->name);
        any = true;
      }
    if (!any)
      report.trampolines = "\ttramp: ERROR!";
  }
  bugs_.push_back(report);
  report.expectedTramp = addrCurr(rec);
  bugs_.back().expectedTramp = report.expectedTramp;
  if (killAfter)
    kill();
}

// --- Trampoline lookups ------------------------------------------------------------------------

FtraceOps *FtraceCore::findTrampOpsAny(const DynFtrace &rec) const {
  for (FtraceOps *op : opsList_)
    if (op->trampoline && op->funcHash.containsIp(rec.ip))
      return op;
  return nullptr;
}

FtraceOps *FtraceCore::findTrampOpsAnyOther(const DynFtrace &rec, const FtraceOps *exclude) const {
  for (FtraceOps *op : opsList_)
    if (op != exclude && op->trampoline && op->funcHash.containsIp(rec.ip))
      return op;
  return nullptr;
}

// ftrace_find_tramp_ops_curr(): the ops whose trampoline the site calls now. An ops being removed
// or modified is matched on its old hash; one being added has not attached yet.
FtraceOps *FtraceCore::findTrampOpsCurr(const DynFtrace &rec) const {
  if (removedOps_ && removedOps_->oldHash.containsIp(rec.ip))
    return removedOps_;
  for (FtraceOps *op : opsList_) {
    if (!op->trampoline || op->has(OpsFlag::Adding))
      continue;
    if (op->has(OpsFlag::Modifying) && op->oldHash.containsIp(rec.ip))
      return op;
    if (!op->has(OpsFlag::Modifying) && op->funcHash.containsIp(rec.ip))
      return op;
  }
  return nullptr;
}

FtraceOps *FtraceCore::findTrampOpsNew(const DynFtrace &rec) const {
  for (FtraceOps *op : opsList_)
    if (op->funcHash.containsIp(rec.ip))
      return op;
  return nullptr;
}

// Trampolines take precedence over regs (ftrace_get_addr_new).
std::uint64_t FtraceCore::addrNew(const DynFtrace &rec) {
  if (rec.has(RecordFlag::Tramp)) {
    FtraceOps *ops = findTrampOpsNew(rec);
    if (!ops || !ops->trampoline) {
      warn(fmt::format("Bad trampoline accounting at: {:#x} ({}) ({:x})", rec.ip,
                       formatSymbolOffset(symbolize(rec.ip), rec.ip), rec.flags));
      kill();
      return config_.addresses.ftraceCaller;
    }
    return ops->trampoline;
  }
  return rec.has(RecordFlag::Regs) ? config_.addresses.ftraceRegsCaller
                                   : config_.addresses.ftraceCaller;
}

// The _EN flags say what the site calls now (ftrace_get_addr_curr).
std::uint64_t FtraceCore::addrCurr(const DynFtrace &rec) {
  if (rec.has(RecordFlag::TrampEn)) {
    FtraceOps *ops = findTrampOpsCurr(rec);
    if (!ops) {
      warn(fmt::format("Bad trampoline accounting at: {:#x} ({})", rec.ip,
                       formatSymbolOffset(symbolize(rec.ip), rec.ip)));
      kill();
      return config_.addresses.ftraceCaller;
    }
    return ops->trampoline;
  }
  return rec.has(RecordFlag::RegsEn) ? config_.addresses.ftraceRegsCaller
                                     : config_.addresses.ftraceCaller;
}

arch::Bytes FtraceCore::expectedSiteBytes(const DynFtrace &rec) {
  if (rec.has(RecordFlag::Enabled))
    return config_.patcher->callBytes(rec, addrCurr(rec));
  return config_.patcher->nopBytes(rec);
}

// --- Ops list ----------------------------------------------------------------------------------

void FtraceCore::addOps(FtraceOps &ops) {
  // add_ftrace_ops(): ops->next is set before the list head points to it; one publication.
  std::vector<FtraceOps *> list = opsList_;
  list.insert(list.begin(), &ops);
  config_.port->publish("ftrace_ops_list", [&] { opsList_ = list; });
}

bool FtraceCore::removeOps(FtraceOps &ops) {
  auto it = std::find(opsList_.begin(), opsList_.end(), &ops);
  if (it == opsList_.end())
    return false;
  std::vector<FtraceOps *> list = opsList_;
  list.erase(list.begin() + (it - opsList_.begin()));
  config_.port->publish("ftrace_ops_list", [&] { opsList_ = list; });
  return true;
}

// ftrace_ops_get_func(): an ops that does not protect itself from recursion, or needs RCU, is
// called through ftrace_ops_assist_func.
TraceFunction FtraceCore::opsGetListFunc(FtraceOps &ops) const {
  // ftrace_ops_get_list_func(): a dynamic or RCU ops always goes through the list function, which
  // disables preemption around the call (seed slides, "Dynamic ftrace_ops").
  if (ops.has(OpsFlag::Dynamic) || ops.has(OpsFlag::Rcu))
    return {TraceFunction::Kind::ListFunc, nullptr};
  if (ops.has(OpsFlag::Recursion))
    return {TraceFunction::Kind::AssistFunc, &ops};
  return {TraceFunction::Kind::OpsFunc, &ops};
}

// update_ftrace_function()
void FtraceCore::updateFtraceFunction() {
  TraceFunction func;
  setFunctionTraceOp_ = opsList_.empty() ? &listEnd_ : opsList_.front();
  if (opsList_.empty()) {
    func = TraceFunction{};
  } else if (opsList_.size() == 1) {
    // One ops: the trampoline may call it directly.
    func = opsGetListFunc(*opsList_.front());
  } else {
    setFunctionTraceOp_ = &listEnd_;
    func = {TraceFunction::Kind::ListFunc, nullptr};
  }
  if (traceFunction_ == func)
    return;
  // With dynamic ftrace the new function takes effect when ftrace_modify_all_code() patches
  // ftrace_call; function_trace_op is published there first.
  traceFunction_ = func;
}

void FtraceCore::registerFunction(FtraceOps &ops) { startup(ops, 0); }
void FtraceCore::unregisterFunction(FtraceOps &ops) { shutdown(ops, 0); }

// ftrace_startup()
void FtraceCore::startup(FtraceOps &ops, unsigned command) {
  if (disabled_)
    fail(ENODEV, fmt::format("ftrace is dead: cannot register {}", ops.name));

  // __register_ftrace_function()
  if (ops.has(OpsFlag::Deleted))
    fail(EINVAL, fmt::format("ftrace_ops {} was deleted", ops.name));
  if (ops.has(OpsFlag::Enabled))
    fail(EBUSY, fmt::format("ftrace_ops {} is already registered", ops.name));
  if (!config_.withRegs) {
    if (ops.has(OpsFlag::SaveRegs) && !ops.has(OpsFlag::SaveRegsIfSupported))
      fail(EINVAL, fmt::format("ftrace_ops {} needs SAVE_REGS, which {} does not support", ops.name,
                               config_.patcher->arch().name()));
    if (ops.has(OpsFlag::SaveRegsIfSupported))
      ops.flags |= OpsFlag::SaveRegs;
  }
  if (!ftraceEnabled_ && ops.has(OpsFlag::Permanent))
    fail(EBUSY, fmt::format("ftrace_ops {} is PERMANENT but ftrace_enabled is 0", ops.name));
  ops.flags |= OpsFlag::Initialized;
  addOps(ops);
  ops.savedFunc = ops.func;
  // ftrace_update_trampoline(): before the records are counted, so that a record this ops alone
  // traces gets FTRACE_FL_TRAMP.
  if (config_.trampolines)
    config_.trampolines->updateTrampoline(ops);
  if (ftraceEnabled_)
    updateFtraceFunction();

  ++startUp_;
  ops.flags |= OpsFlag::Enabled | OpsFlag::Adding;

  const std::optional<FtraceHash> filter =
      ops.funcHash.filter.empty() ? std::nullopt : std::optional<FtraceHash>(ops.funcHash.filter);
  if (int ret = hashUpdateIpModify(ops, FtraceHash{}, filter); ret < 0) {
    // Roll back the registration.
    removeOps(ops);
    if (ftraceEnabled_)
      updateFtraceFunction();
    ops.func = ops.savedFunc;
    --startUp_;
    ops.flags &= ~(OpsFlag::Enabled | OpsFlag::Adding);
    fail(-ret, fmt::format("ftrace_ops {}: IPMODIFY conflict", ops.name));
  }

  if (hashRecUpdate(ops, true))
    command |= UpdateCalls;

  // ftrace_startup_enable()
  if (!(savedFtraceFunc_ == traceFunction_)) {
    savedFtraceFunc_ = traceFunction_;
    command |= UpdateTraceFunc;
  }
  if (command && ftraceEnabled_)
    runUpdateCode(command);

  if (disabled_) {
    removeOps(ops);
    fail(ENODEV, fmt::format("ftrace died while registering {}", ops.name));
  }
  ops.flags &= ~OpsFlag::Adding;
}

// ftrace_shutdown()
void FtraceCore::shutdown(FtraceOps &ops, unsigned command) {
  if (disabled_)
    fail(ENODEV, fmt::format("ftrace is dead: cannot unregister {}", ops.name));
  if (!ops.has(OpsFlag::Enabled))
    fail(EBUSY, fmt::format("ftrace_ops {} is not registered", ops.name));
  if (!removeOps(ops))
    fail(EINVAL, fmt::format("ftrace_ops {} is not on the ops list", ops.name));
  if (ftraceEnabled_)
    updateFtraceFunction();
  ops.func = ops.savedFunc;

  --startUp_;
  // Disabling IPMODIFY never fails.
  const std::optional<FtraceHash> filter =
      ops.funcHash.filter.empty() ? std::nullopt : std::optional<FtraceHash>(ops.funcHash.filter);
  hashUpdateIpModify(ops, filter, FtraceHash{});

  if (hashRecUpdate(ops, false))
    command |= UpdateCalls;
  ops.flags &= ~OpsFlag::Enabled;

  if (!(savedFtraceFunc_ == traceFunction_)) {
    savedFtraceFunc_ = traceFunction_;
    command |= UpdateTraceFunc;
  }

  // Before 0e792b89e680: "If these are dynamic or per_cpu ops, they still need their data freed.
  // Since, function tracing is not currently active, we can just free them without synchronizing
  // all CPUs." — but the list function may still be walking the ops.
  if ((!command || !ftraceEnabled_) && !config_.freePolicy.syncWhenUnchanged) {
    if (ops.has(OpsFlag::Dynamic))
      freeTrampoline(ops);
    return;
  }

  if (command && ftraceEnabled_) {
    // The trampoline logic looks the removed ops up by its old hashes.
    ops.flags |= OpsFlag::Removing;
    removedOps_ = &ops;
    ops.oldHash = ops.funcHash;
    runUpdateCode(command);

    // With no ops left, every record must be back to its history flags.
    if (opsList_.empty() && !disabled_) {
      bool leftover = false;
      records_.forEach([&](const DynFtrace &rec) {
        if (rec.flags & ~RecordFlag::NoClear) {
          warn(fmt::format("  {} flags:{:x}", formatSymbolOffset(symbolize(rec.ip), rec.ip),
                           rec.flags));
          leftover = true;
        }
      });
      if (leftover)
        kill(); // FTRACE_WARN_ON_ONCE
    }
    ops.oldHash = FtraceOpsHash{};
    removedOps_ = nullptr;
    ops.flags &= ~OpsFlag::Removing;
  }

  // A dynamic ops may be freed by its owner as soon as this returns: every CPU must be out of the
  // list function (synchronize_rcu_tasks_rude) and every task out of any trampoline that called it
  // (synchronize_rcu_tasks; preemption is not a quiescent state). Done even when no code changed:
  // 0e792b89e680 "ftrace: Fix use-after-free for dynamic ftrace_ops". The history of this wait is
  // FtraceConfig::freePolicy (OpsTrampolines.h):
  //
  //   CPU 0 (unregister)                    CPU 1, task T
  //                                         call dynamic_trampoline; save regs ... <preempted>
  //   sites: call tramp -> nop (+ syncs)
  //   schedule_on_each_cpu()                (CPU 1 runs another task: it "scheduled")
  //   free(tramp)                           ... T resumes inside the freed trampoline
  //
  // Only synchronize_rcu_tasks() waits for T itself to leave (a voluntary switch, user, idle).
  if (ops.has(OpsFlag::Dynamic)) {
    if (config_.freePolicy.free != TrampolineFree::Immediate)
      config_.port->scheduleOnEachCpu();
    if (config_.freePolicy.free == TrampolineFree::RcuTasks)
      config_.port->synchronizeRcuTasks();
    freeTrampoline(ops);
  }
}

// ftrace_trampoline_free() -> arch_ftrace_trampoline_free(): only what ftrace allocated.
void FtraceCore::freeTrampoline(FtraceOps &ops) {
  if (ops.has(OpsFlag::AllocTramp) && ops.trampoline) {
    config_.port->freeText(ops.trampoline, ops.trampolineSize);
    ops.trampoline = 0;
    ops.trampolineSize = 0;
  }
}

void FtraceCore::setFtraceEnabled(bool enabled) {
  // ftrace_enable_sysctl()
  if (enabled == ftraceEnabled_ || disabled_)
    return;
  if (enabled) {
    ftraceEnabled_ = true;
    if (!opsList_.empty())
      updateFtraceFunction();
    if (startUp_) {
      unsigned command = UpdateCalls;
      if (!(savedFtraceFunc_ == traceFunction_)) {
        savedFtraceFunc_ = traceFunction_;
        command |= UpdateTraceFunc;
      }
      runUpdateCode(command);
    }
    return;
  }
  for (FtraceOps *op : opsList_)
    if (op->has(OpsFlag::Permanent))
      fail(EBUSY, fmt::format("ftrace_ops {} is PERMANENT", op->name));
  ftraceEnabled_ = false;
  traceFunction_ = TraceFunction{};
  if (startUp_)
    runUpdateCode(DisableCalls);
}

// --- Reference counting ----------------------------------------------------------------------

bool FtraceCore::opsTest(const FtraceOps &ops, std::uint64_t ip, bool hasRegs) const {
  // A handler that wants regs must not be called without them (the small race while an ops is
  // being added: the site may still call ftrace_caller).
  if (config_.withRegs && !hasRegs && ops.has(OpsFlag::SaveRegs))
    return false;
  return ops.funcHash.containsIp(ip);
}

bool FtraceCore::testRecOpsNeedsRegs(const DynFtrace &rec) const {
  for (FtraceOps *op : opsList_)
    if (opsTest(*op, rec.ip, true) && op->has(OpsFlag::SaveRegs))
      return true;
  return false;
}

// __ftrace_hash_rec_update(): add (inc) or remove the ops from the count of every record it
// traces, maintaining the wanted flags. Returns whether any call site needs updating.
bool FtraceCore::hashRecUpdate(FtraceOps &ops, bool inc) {
  if (!ops.has(OpsFlag::Enabled))
    return false;
  const FtraceHash &hash = ops.funcHash.filter;
  const FtraceHash &notrace = ops.funcHash.notrace;
  const bool all = hash.empty();
  bool update = false;
  std::size_t count = 0;

  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      if (skipRecord(rec))
        continue;
      bool match;
      if (all)
        match = !notrace.contains(rec.ip); // only the filter hash affects all records
      else
        match = hash.contains(rec.ip) && !notrace.contains(rec.ip);
      if (!match)
        continue;

      if (inc) {
        ++rec.flags;
        if (rec.count() == RecordFlag::RefMax) {
          warn(fmt::format("ftrace: record {:#x} reference count overflow", rec.ip));
          kill();
          return false;
        }
        if (ops.has(OpsFlag::Direct))
          rec.flags |= RecordFlag::Direct;
        // A single callback with its own trampoline can be called directly; a second one sends
        // the site back to the shared trampoline.
        if (rec.count() == 1 && ops.trampoline)
          rec.flags |= RecordFlag::Tramp;
        else
          rec.flags &= ~RecordFlag::Tramp;
        // If any ops wants regs for this function, all get them.
        if (ops.has(OpsFlag::SaveRegs))
          rec.flags |= RecordFlag::Regs;
      } else {
        if (rec.count() == 0) {
          warn(fmt::format("ftrace: record {:#x} reference count underflow", rec.ip));
          kill();
          return false;
        }
        --rec.flags;
        if (ops.has(OpsFlag::Direct))
          rec.flags &= ~RecordFlag::Direct;
        // Removing a regs ops: keep REGS only if another ops still wants regs here.
        if (rec.count() > 0 && rec.has(RecordFlag::Regs) && ops.has(OpsFlag::SaveRegs) &&
            !testRecOpsNeedsRegs(rec))
          rec.flags &= ~RecordFlag::Regs;
        // Back to one user: it may use its own trampoline again.
        if (rec.count() == 1 && findTrampOpsAnyOther(rec, &ops))
          rec.flags |= RecordFlag::Tramp;
        else
          rec.flags &= ~RecordFlag::Tramp;
      }

      // A single ops whose func can be called directly may be called via the call-site ops.
      if (config_.withCallOps && rec.count() == 1 &&
          !(ops.flags & (OpsFlag::Recursion | OpsFlag::Rcu)))
        rec.flags |= RecordFlag::CallOps;
      else
        rec.flags &= ~RecordFlag::CallOps;

      ++count;
      update |= testRecord(rec, true) != UpdateAction::Ignore;
      if (!all && count == hash.count())
        return update;
    }
  }
  return update;
}

// __ftrace_hash_update_ipmodify(): at most one IPMODIFY ops per function. nullopt stands for the
// kernel's NULL hash ("all functions"), which IPMODIFY may not use.
int FtraceCore::hashUpdateIpModify(FtraceOps &ops, const std::optional<FtraceHash> &oldHash,
                                   const std::optional<FtraceHash> &newHash) {
  if (!ops.has(OpsFlag::Enabled))
    return 0;
  const bool isIpModify = ops.has(OpsFlag::IpModify);
  const bool isDirect = ops.has(OpsFlag::Direct);
  if (!isIpModify && !isDirect)
    return 0;
  if (!newHash || !oldHash)
    return -EINVAL;

  DynFtrace *end = nullptr;
  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      if (rec.has(RecordFlag::Disabled))
        continue;
      const bool inOld = oldHash->contains(rec.ip);
      const bool inNew = newHash->contains(rec.ip);
      if (inOld == inNew)
        continue;
      if (inNew) {
        if (rec.has(RecordFlag::IpModify)) {
          // Two IPMODIFY ops on one function; a direct ops could share through ops_func, which
          // the model does not have.
          end = &rec;
          goto rollback;
        }
        if (isIpModify)
          rec.flags |= RecordFlag::IpModify;
      } else if (isIpModify) {
        rec.flags &= ~RecordFlag::IpModify;
      }
    }
  }
  return 0;

rollback:
  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      if (rec.has(RecordFlag::Disabled))
        continue;
      if (&rec == end)
        return -EBUSY;
      const bool inOld = oldHash->contains(rec.ip);
      const bool inNew = newHash->contains(rec.ip);
      if (inOld == inNew)
        continue;
      if (inNew)
        rec.flags &= ~RecordFlag::IpModify;
      else
        rec.flags |= RecordFlag::IpModify;
    }
  }
  return -EBUSY;
}

// --- Filters -----------------------------------------------------------------------------------

bool FtraceCore::matchRecords(FtraceHash &hash, std::string_view func,
                              std::optional<std::string_view> module) const {
  const FilterGlob funcGlob = parseFilterRegex(func);
  std::optional<FilterGlob> modGlob;
  if (module)
    modGlob = parseFilterRegex(*module);
  const bool excludeMod = modGlob && modGlob->negate;
  const bool clearFilter = funcGlob.negate;

  auto enterRecord = [&](const DynFtrace &rec) {
    if (clearFilter)
      hash.remove(rec.ip);
    else
      hash.add(rec.ip);
  };

  if (funcGlob.type == MatchType::Index) {
    // add_rec_by_index(): 1-based position in available_filter_functions.
    std::optional<unsigned long> index = parseUnsigned(funcGlob.search);
    if (!index || *index == 0)
      return false;
    const DynFtrace *rec = const_cast<RecordTable &>(records_).at(*index - 1);
    if (!rec)
      return false;
    enterRecord(*rec);
    return true;
  }

  bool found = false;
  records_.forEach([&](const DynFtrace &rec) {
    if (rec.has(RecordFlag::Disabled))
      return;
    std::optional<SymbolInfo> symbol = recordSymbol(rec);
    if (!symbol)
      return;
    // ftrace_match_record()
    if (modGlob) {
      const bool hasModule = !symbol->module.empty();
      const bool modMatches = hasModule && ftraceMatch(symbol->module, *modGlob);
      if (modGlob->search.empty()) {
        // Blank module: all module functions, or with '!' all core functions.
        if (excludeMod == hasModule)
          return;
      } else if (modMatches == excludeMod) {
        return;
      }
      if (funcGlob.search.empty()) { // blank function: everything in the module
        enterRecord(rec);
        found = true;
        return;
      }
    }
    if (ftraceMatch(symbol->name, funcGlob)) {
      enterRecord(rec);
      found = true;
    }
  });
  return found;
}

void FtraceCore::setHash(FtraceOps &ops, std::string_view pattern, bool reset, bool filter) {
  // ftrace_set_regex(): "func" or "func:mod:module"
  std::string_view func = pattern;
  std::optional<std::string_view> module;
  if (std::size_t colon = pattern.find(':'); colon != std::string_view::npos) {
    func = pattern.substr(0, colon);
    std::string_view rest = pattern.substr(colon + 1);
    std::size_t next = rest.find(':');
    if (rest.substr(0, next) != "mod" || next == std::string_view::npos)
      fail(EINVAL, fmt::format("'{}': only the :mod: command is allowed here", pattern));
    module = rest.substr(next + 1);
  }
  FtraceHash hash = reset ? FtraceHash{} : (filter ? ops.funcHash.filter : ops.funcHash.notrace);
  if (!matchRecords(hash, func, module))
    fail(EINVAL, fmt::format("'{}' matches no traceable function", pattern));
  replaceHash(ops, filter, std::move(hash));
}

void FtraceCore::setFilter(FtraceOps &ops, std::string_view pattern, bool reset) {
  setHash(ops, pattern, reset, true);
}

void FtraceCore::setNotrace(FtraceOps &ops, std::string_view pattern, bool reset) {
  setHash(ops, pattern, reset, false);
}

void FtraceCore::setFilterIps(FtraceOps &ops, std::span<const std::uint64_t> ips, bool remove,
                              bool reset) {
  FtraceHash hash = reset ? FtraceHash{} : ops.funcHash.filter;
  for (std::uint64_t requested : ips) {
    // ftrace_location(): the site itself, or a function's start mapped to its site.
    const DynFtrace *rec = lookupRecord(requested);
    if (!rec)
      if (std::optional<SymbolInfo> symbol = symbolize(requested);
          symbol && symbol->start == requested)
        records_.forEach([&](const DynFtrace &candidate) {
          if (!rec && candidate.ip >= symbol->start && candidate.ip < symbol->start + symbol->size)
            rec = &candidate;
        });
    if (!rec)
      fail(EINVAL, fmt::format("{:#x} is not an ftrace location", requested));
    if (remove) {
      if (!hash.contains(rec->ip))
        fail(ENOENT, fmt::format("{:#x} is not in the filter of {}", rec->ip, ops.name));
      hash.remove(rec->ip);
    } else {
      hash.add(rec->ip);
    }
  }
  replaceHash(ops, true, std::move(hash));
}

// ftrace_hash_move_and_update_ops() -> ftrace_hash_move() + ftrace_ops_update_code()
void FtraceCore::replaceHash(FtraceOps &ops, bool filter, FtraceHash hash) {
  if (ops.has(OpsFlag::IpModify) && !filter)
    fail(EINVAL, fmt::format("IPMODIFY ops {} cannot have a notrace hash", ops.name));
  const FtraceOpsHash oldHash = ops.funcHash;
  if (filter) {
    const std::optional<FtraceHash> oldFilter =
        oldHash.filter.empty() ? std::nullopt : std::optional<FtraceHash>(oldHash.filter);
    const std::optional<FtraceHash> newFilter =
        hash.empty() ? std::nullopt : std::optional<FtraceHash>(hash);
    if (int ret = hashUpdateIpModify(ops, oldFilter, newFilter); ret < 0)
      fail(-ret, fmt::format("ftrace_ops {}: IPMODIFY conflict", ops.name));
  }
  // Remove the current set, update the hash, add them back.
  hashRecUpdate(ops, false);
  config_.port->publish(filter ? "ftrace_ops.filter_hash" : "ftrace_ops.notrace_hash", [&] {
    (filter ? ops.funcHash.filter : ops.funcHash.notrace) = std::move(hash);
  });
  hashRecUpdate(ops, true);
  if (ftraceEnabled_ && ops.has(OpsFlag::Enabled))
    runModifyCode(ops, UpdateCalls, oldHash);
}

// --- Update engine -----------------------------------------------------------------------------

// ftrace_run_update_code(): x86 and powerpc both patch without stop_machine.
void FtraceCore::runUpdateCode(unsigned command) {
  config_.patcher->prepare();
  modifyAllCode(command);
  config_.patcher->postProcess();
}

void FtraceCore::runModifyCode(FtraceOps &ops, unsigned command, const FtraceOpsHash &oldHash) {
  ops.flags |= OpsFlag::Modifying;
  ops.oldHash = oldHash;
  runUpdateCode(command);
  ops.oldHash = FtraceOpsHash{};
  ops.flags &= ~OpsFlag::Modifying;
}

bool FtraceCore::updateFtraceFunc(const TraceFunction &function) {
  // update_ftrace_func(): avoid patching when nothing changed.
  if (function == patchedFunction_)
    return true;
  patchedFunction_ = function;
  return config_.patcher->updateFtraceFunc(function).ok();
}

// ftrace_modify_all_code()
void FtraceCore::modifyAllCode(unsigned command) {
  const bool update = command & UpdateTraceFunc;
  if (pre59338f754a55_) {
    // Before 59338f754a55: sites first, then ftrace_call. A site that starts calling
    // ftrace_caller while ftrace_call still calls a single ops directly runs that ops for a
    // function outside its filter.
    if (command & UpdateCalls)
      replaceCode(true);
    else if (command & DisableCalls)
      replaceCode(false);
    if (disabled_ || !update)
      return;
    if (traceFunction_.kind != TraceFunction::Kind::ListFunc) {
      config_.port->publish("function_trace_op", [&] { functionTraceOp_ = setFunctionTraceOp_; });
      config_.port->syncCores();
    }
    if (!updateFtraceFunc(traceFunction_))
      kill();
    return;
  }
  // If ftrace_caller calls an ops directly, that ops must only see the functions it expects.
  // Switch to the list function first, which checks every ops' hashes, then move the call sites,
  // and only then switch to the final function (59338f754a55 "ftrace: Fix a slight race in
  // modifying what function callback gets traced").
  //
  //   CPU 0 (patcher)                       CPU 1
  //   ftrace_call -> list_func
  //   patch sites for the new ops           enters a newly patched site
  //                                         list_func tests hashes: only the right ops runs
  //   function_trace_op = ops; sync
  //   ftrace_call -> ops->func
  if (update && !updateFtraceFunc({TraceFunction::Kind::ListFunc, nullptr})) {
    kill();
    return;
  }
  if (command & UpdateCalls)
    replaceCode(true);
  else if (command & DisableCalls)
    replaceCode(false);
  if (disabled_)
    return;
  if (update && traceFunction_.kind != TraceFunction::Kind::ListFunc) {
    config_.port->publish("function_trace_op", [&] { functionTraceOp_ = setFunctionTraceOp_; });
    config_.port->syncCores(); // smp_call_function(ftrace_sync_ipi): every CPU sees the op
    if (!updateFtraceFunc(traceFunction_))
      kill();
  }
}

// ftrace_replace_code(): verify every site first (arch/x86/kernel/ftrace.c), then hand each
// record's action to the arch, then complete the batch.
void FtraceCore::replaceCode(bool enable) {
  if (disabled_)
    return;
  ArchPatcher &patcher = *config_.patcher;
  const unsigned siteSize = patcher.arch().siteSize();

  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      DynFtrace probe = rec;
      const CheckResult check = checkRecord(probe, enable, false);
      arch::Bytes old;
      switch (check.action) {
      case UpdateAction::Ignore:
        continue;
      case UpdateAction::MakeCall:
        old = patcher.nopBytes(rec);
        break;
      case UpdateAction::ModifyCall:
      case UpdateAction::MakeNop:
        old = patcher.callBytes(rec, addrCurr(rec));
        break;
      }
      if (disabled_)
        return;
      // ftrace_verify_code()
      arch::Bytes current(siteSize);
      if (!config_.port->readText(rec.ip, current)) {
        ftraceBug(PatchStatus::ReadFault, check.bugType, rec, old);
        return;
      }
      if (current != old) {
        ftraceBug(PatchStatus::Mismatch, check.bugType, rec, old);
        return;
      }
    }
  }

  patcher.beginBatch();
  bool failed = false;
  for (auto &page : records_.pages()) {
    for (auto &rec : page.records) {
      DynFtrace probe = rec;
      const UpdateAction action = checkRecord(probe, enable, false).action;
      if (action == UpdateAction::Ignore)
        continue;
      // Addresses are taken before ftrace_update_record() changes the _EN flags.
      const std::uint64_t newAddr = action == UpdateAction::MakeNop ? 0 : addrNew(rec);
      const std::uint64_t oldAddr = action == UpdateAction::MakeCall ? 0 : addrCurr(rec);
      if (disabled_) {
        failed = true;
        break;
      }
      const CheckResult check = checkRecord(rec, enable, true);
      PatchOutcome outcome;
      switch (check.action) {
      case UpdateAction::Ignore:
        continue;
      case UpdateAction::MakeCall:
        outcome = patcher.makeCall(rec, newAddr);
        break;
      case UpdateAction::MakeNop:
        outcome = patcher.makeNop(rec, oldAddr);
        break;
      case UpdateAction::ModifyCall:
        outcome = patcher.modifyCall(rec, oldAddr, newAddr);
        break;
      }
      if (!outcome.ok()) {
        ftraceBug(outcome.status, check.bugType, rec, outcome.expected);
        failed = true;
        break;
      }
    }
    if (failed)
      break;
  }
  patcher.finishBatch();
}

// --- The list function -------------------------------------------------------------------------

// trace_test_and_set_recursion(): one bit per context level per task, plus a transition bit that
// tolerates one level of recursion while the context (irq entry) is not yet accounted for.
int FtraceCore::testAndSetRecursion(const ExecutionContext &context) {
  constexpr int transitionBit = 4;
  const std::int64_t key = context.task >= 0 ? context.task : -1 - std::int64_t{context.cpu};
  std::uint32_t &val = recursion_[key];
  int bit = 0;
  switch (context.level) {
  case ContextLevel::Nmi:
    bit = 0;
    break;
  case ContextLevel::Irq:
    bit = 1;
    break;
  case ContextLevel::Softirq:
    bit = 2;
    break;
  case ContextLevel::Normal:
    bit = 3;
    break;
  }
  if (val & (1u << bit)) {
    bit = transitionBit;
    if (val & (1u << bit))
      return -1;
  }
  val |= 1u << bit;
  return bit;
}

void FtraceCore::clearRecursion(const ExecutionContext &context, int bit) {
  const std::int64_t key = context.task >= 0 ? context.task : -1 - std::int64_t{context.cpu};
  recursion_[key] &= ~(1u << bit);
}

void FtraceCore::listFunc(CallSite &site) {
  // The list is read once, as an RCU reader would; a callback may (un)register ops.
  const std::vector<FtraceOps *> list = opsList_;
  listFunc(site, list);
}

void FtraceCore::listFunc(CallSite &site, const std::vector<FtraceOps *> &list) {
  const int bit = testAndSetRecursion(site.context);
  if (bit < 0) {
    ++recursionsBlocked_;
    return;
  }
  for (FtraceOps *op : list) {
    if (op->has(OpsFlag::Stub))
      continue;
    if (opsTest(*op, site.ip, site.regs != nullptr)) {
      if (!op->func) {
        warn(fmt::format("op={} has no func", op->name));
        kill();
        break;
      }
      op->func(site.ip, site.parentIp, *op, site.regs);
    }
  }
  clearRecursion(site.context, bit);
}

void FtraceCore::assistFunc(FtraceOps &ops, CallSite &site) {
  const int bit = testAndSetRecursion(site.context);
  if (bit < 0) {
    ++recursionsBlocked_;
    return;
  }
  if (ops.func)
    ops.func(site.ip, site.parentIp, ops, site.regs);
  clearRecursion(site.context, bit);
}

void FtraceCore::invoke(const TraceFunction &function, CallSite &site) {
  switch (function.kind) {
  case TraceFunction::Kind::Stub:
    return;
  case TraceFunction::Kind::ListFunc:
    listFunc(site);
    return;
  case TraceFunction::Kind::OpsFunc:
    // The trampoline passes function_trace_op, whatever it is at this instant.
    if (function.ops && function.ops->func)
      function.ops->func(site.ip, site.parentIp, *functionTraceOp_, site.regs);
    return;
  case TraceFunction::Kind::AssistFunc:
    if (function.ops)
      assistFunc(*function.ops, site);
    return;
  }
}

// --- Listings ------------------------------------------------------------------------------------

std::string FtraceCore::availableFilterFunctions() const {
  std::string out;
  records_.forEach([&](const DynFtrace &rec) { out += recordName(rec) + "\n"; });
  return out;
}

std::string FtraceCore::enabledFunctions() const {
  std::string out;
  records_.forEach([&](const DynFtrace &rec) {
    if (!rec.has(RecordFlag::Enabled))
      return;
    out += recordName(rec);
    out += fmt::format(
        " ({}){}{}{}{}{}", rec.count(), rec.has(RecordFlag::Regs) ? " R" : "  ",
        rec.has(RecordFlag::IpModify) ? " I" : "  ", rec.has(RecordFlag::Direct) ? " D" : "  ",
        rec.has(RecordFlag::CallOps) ? " O" : "  ", rec.has(RecordFlag::Modified) ? " M " : "   ");
    if (rec.has(RecordFlag::TrampEn)) {
      bool any = false;
      for (FtraceOps *op : opsList_)
        if (op->trampoline && op->funcHash.containsIp(rec.ip)) {
          out +=
              fmt::format("\ttramp: {} ({})",
                          formatSymbolOffset(symbolize(op->trampoline), op->trampoline), op->name);
          any = true;
        }
      if (!any)
        out += "\ttramp: ERROR!";
    }
    out += "\n";
  });
  return out;
}

} // namespace ftsim::model
