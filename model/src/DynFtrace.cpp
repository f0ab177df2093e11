#include "ftsim/model/DynFtrace.h"
#include "ftsim/model/FtraceOps.h"
#include "ftsim/model/Symbolizer.h"
#include "ftsim/model/TraceFunction.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace ftsim::model {

std::size_t RecordTable::size() const {
  std::size_t total = 0;
  for (const auto &page : pages_)
    total += page.records.size();
  return total;
}

std::size_t RecordTable::pageCount() const {
  std::size_t total = 0;
  for (const auto &page : pages_)
    total += std::size_t{1} << page.order;
  return total;
}

void RecordTable::forEach(const std::function<void(DynFtrace &)> &visit) {
  for (auto &page : pages_)
    for (auto &rec : page.records)
      visit(rec);
}

void RecordTable::forEach(const std::function<void(const DynFtrace &)> &visit) const {
  for (const auto &page : pages_)
    for (const auto &rec : page.records)
      visit(rec);
}

const DynFtrace *RecordTable::find(std::uint64_t addr, unsigned siteSize) const {
  // lookup_rec(): skip page groups whose range cannot hold addr, bsearch the rest.
  for (const auto &page : pages_) {
    if (page.records.empty() || addr < page.records.front().ip ||
        addr >= page.records.back().ip + siteSize)
      continue;
    auto it = std::upper_bound(page.records.begin(), page.records.end(), addr,
                               [](std::uint64_t a, const DynFtrace &rec) { return a < rec.ip; });
    if (it == page.records.begin())
      continue;
    --it;
    if (addr < it->ip + siteSize)
      return &*it;
  }
  return nullptr;
}

DynFtrace *RecordTable::find(std::uint64_t addr, unsigned siteSize) {
  return const_cast<DynFtrace *>(std::as_const(*this).find(addr, siteSize));
}

DynFtrace *RecordTable::at(std::size_t index) {
  for (auto &page : pages_) {
    if (index < page.records.size())
      return &page.records[index];
    index -= page.records.size();
  }
  return nullptr;
}

std::string formatSymbolOffset(const std::optional<SymbolInfo> &symbol, std::uint64_t addr) {
  if (!symbol)
    return fmt::format("{:#x}", addr);
  std::string text =
      fmt::format("{}+{:#x}/{:#x}", symbol->name, addr - symbol->start, symbol->size);
  if (!symbol->module.empty())
    text += fmt::format(" [{}]", symbol->module);
  return text;
}

std::string TraceFunction::describe() const {
  switch (kind) {
  case Kind::Stub:
    return "ftrace_stub";
  case Kind::ListFunc:
    return "ftrace_ops_list_func";
  case Kind::OpsFunc:
    return ops ? ops->name : "(null ops)";
  case Kind::AssistFunc:
    return "ftrace_ops_assist_func(" + (ops ? ops->name : std::string("(null ops)")) + ")";
  }
  return "?";
}

} // namespace ftsim::model
