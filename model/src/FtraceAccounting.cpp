// Which trampoline every record calls and how many ops want it: the trampoline lookups,
// ftrace_get_addr_new / _curr, ftrace_ops_test and the per-record reference counts
// (__ftrace_hash_rec_update, __ftrace_hash_update_ipmodify).

#include "ftsim/model/FtraceCore.h"

#include <fmt/format.h>

#include <cerrno>

namespace ftsim::model {

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

// FTRACE_WARN_ON of ftrace_get_addr_new/_curr: ftrace dies and the site is given ftrace_caller.
std::uint64_t FtraceCore::badTrampolineAccounting(const std::string &message) {
  warn(message);
  kill();
  return config_.addresses.ftraceCaller;
}

std::uint64_t FtraceCore::sharedCaller(bool regs) const {
  return regs ? config_.addresses.ftraceRegsCaller : config_.addresses.ftraceCaller;
}

// Trampolines take precedence over regs (ftrace_get_addr_new).
std::uint64_t FtraceCore::addrNew(const DynFtrace &rec) {
  if (!rec.has(RecordFlag::Tramp))
    return sharedCaller(rec.has(RecordFlag::Regs));
  FtraceOps *ops = findTrampOpsNew(rec);
  if (!ops || !ops->trampoline)
    return badTrampolineAccounting(
        fmt::format("Bad trampoline accounting at: {:#x} ({}) ({:x})", rec.ip,
                    formatSymbolOffset(symbolize(rec.ip), rec.ip), rec.flags));
  return ops->trampoline;
}

// The _EN flags say what the site calls now (ftrace_get_addr_curr).
std::uint64_t FtraceCore::addrCurr(const DynFtrace &rec) {
  if (!rec.has(RecordFlag::TrampEn))
    return sharedCaller(rec.has(RecordFlag::RegsEn));
  FtraceOps *ops = findTrampOpsCurr(rec);
  if (!ops)
    return badTrampolineAccounting(fmt::format("Bad trampoline accounting at: {:#x} ({})", rec.ip,
                                               formatSymbolOffset(symbolize(rec.ip), rec.ip)));
  return ops->trampoline;
}

arch::Bytes FtraceCore::expectedSiteBytes(const DynFtrace &rec) {
  if (rec.has(RecordFlag::Enabled))
    return config_.patcher->callBytes(rec, addrCurr(rec));
  return config_.patcher->nopBytes(rec);
}

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
      if (skipRecord(rec, config_.records))
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
        if (ops.has(OpsFlag::Direct) && config_.records.has(RecordFlag::Direct))
          rec.flags |= RecordFlag::Direct;
        // A single callback with its own trampoline can be called directly; a second one sends
        // the site back to the shared trampoline.
        if (rec.count() == 1 && ops.trampoline && config_.records.has(RecordFlag::Tramp))
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
        if (rec.count() == 1 && findTrampOpsAnyOther(rec, &ops) &&
            config_.records.has(RecordFlag::Tramp))
          rec.flags |= RecordFlag::Tramp;
        else
          rec.flags &= ~RecordFlag::Tramp;
      }

      // A single ops whose func can be called directly may be called via the call-site ops.
      if (config_.withCallOps && config_.records.has(RecordFlag::CallOps) && rec.count() == 1 &&
          !(ops.flags & (OpsFlag::Recursion | OpsFlag::Rcu)))
        rec.flags |= RecordFlag::CallOps;
      else
        rec.flags &= ~RecordFlag::CallOps;

      ++count;
      update |= testRecord(rec, true, config_.records) != UpdateAction::Ignore;
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
  if (!config_.records.has(RecordFlag::IpModify)) // before v3.19 nothing records IPMODIFY
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

} // namespace ftsim::model
