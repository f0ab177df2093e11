#pragma once
// struct dyn_ftrace and struct ftrace_page: one record per mcount/fentry call site, kept sorted by
// ip in groups of 4 KiB pages (kernel/trace/ftrace.c: ftrace_allocate_pages()).

#include "ftsim/model/RecordFlags.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ftsim::model {

struct DynFtrace {
  std::uint64_t ip = 0;    // address of the call site
  std::uint32_t flags = 0; // RecordFlag bits + reference count
  // struct dyn_arch_ftrace, opaque to the core: what the target's SiteHooks::recordDatum() gave
  // (powerpc: which module's long-branch stubs the site uses, `struct module *mod`; 0: the core
  // kernel, and always on x86, which keeps none). Its size in the record layout is the target's
  // dynArchFtraceSize().
  std::uint64_t arch = 0;

  std::uint32_t count() const { return recordCount(flags); }
  bool has(std::uint32_t flag) const { return (flags & flag) != 0; }
};

inline constexpr std::size_t kFtracePageSize = 4096;

// sizeof(struct dyn_ftrace) on the target: ip and flags are unsigned long, then dyn_arch_ftrace.
// x86-64: 8 + 8 + 0 = 16 (256 per page); ppc32: 4 + 4 + 4 = 12 (341 per page).
struct RecordLayout {
  unsigned wordSize = 8;
  unsigned archPrivateSize = 0;
  std::size_t entrySize() const { return 2 * std::size_t{wordSize} + archPrivateSize; }
  std::size_t entriesPerPage() const { return kFtracePageSize / entrySize(); } // ENTRIES_PER_PAGE
};

// A group of 2^order contiguous pages holding records.
struct FtracePage {
  unsigned order = 0;
  std::vector<DynFtrace> records; // pg->records[0 .. pg->index)
};

// ftrace_pages_start .. ftrace_pages: every record, in ip order, page group by page group.
class RecordTable {
public:
  std::vector<FtracePage> &pages() { return pages_; }
  const std::vector<FtracePage> &pages() const { return pages_; }

  std::size_t size() const;
  std::size_t pageCount() const; // sum of 2^order over the groups
  // do_for_each_ftrace_rec
  void forEach(const std::function<void(DynFtrace &)> &visit);
  void forEach(const std::function<void(const DynFtrace &)> &visit) const;
  // lookup_rec(ip, ip): the record whose site [ip, ip + siteSize) contains `addr`.
  DynFtrace *find(std::uint64_t addr, unsigned siteSize);
  const DynFtrace *find(std::uint64_t addr, unsigned siteSize) const;
  // The n-th record (0-based) in iteration order, as add_rec_by_index() walks the pages.
  DynFtrace *at(std::size_t index);

private:
  std::vector<FtracePage> pages_;
};

} // namespace ftsim::model
