// The core's boot (ftrace_init -> ftrace_process_locs -> ftrace_update_code): records in pages,
// every site read, verified and turned into a nop.

#include "ftsim/model/FtraceCore.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>

namespace ftsim::model {

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
  // FTRACE_MCOUNT_MAX_OFFSET arrived in v6.0; an older release lists every record by its symbol.
  if (config_.records.weakFunctionCheck)
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
    page->records.push_back(DynFtrace{addr, 0, 0});
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
      rec.arch = config_.patcher->recordDatum(rec, symbolize(rec.ip));
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

} // namespace ftsim::model
