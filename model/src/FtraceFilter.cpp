// Filters: match_records() over the records, ftrace_set_filter / ftrace_set_notrace and
// ftrace_hash_move_and_update_ops().

#include "ftsim/model/FtraceCore.h"

#include "ftsim/model/Glob.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>

namespace ftsim::model {

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

} // namespace ftsim::model
