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

// --- ftrace_bug

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
  report.rules = config_.records;
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
