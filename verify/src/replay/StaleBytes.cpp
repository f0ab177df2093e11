// Which bytes a CPU fetched stale, and since when (Slice.h), computed from the event log alone:
// the text the patcher had written by the fetch is the last store to each byte; the CPU's view was
// canonical at its last serialising event; a byte it read that differs from canonical is stale
// since the store, after that serialisation, that overwrote the value it read.

#include "ftsim/verify/replay/Slice.h"

#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace ftsim::verify {
namespace {

bool serialises(const sim::EventRecord &e) {
  return e.kind == sim::EventKind::Ipi || e.kind == sim::EventKind::Preempt ||
         e.outcome == sim::StepOutcome::Serialised || e.outcome == sim::StepOutcome::TrapHandled ||
         e.outcome == sim::StepOutcome::IrqReturn;
}

// The byte a store wrote at `addr`, if it covers it (and its bytes hold it).
std::optional<std::uint8_t> storedByte(const sim::EventRecord &e, std::uint64_t addr) {
  if (e.kind != sim::EventKind::Store || addr < e.storeAddr || addr >= e.storeAddr + e.byteCount)
    return std::nullopt;
  return e.bytes[addr - e.storeAddr];
}

} // namespace

std::string staleBytesText(const Harness &h, const sim::Machine &m, const Violation &v) {
  const auto &events = m.events();
  const auto at = std::lower_bound(
      events.begin(), events.end(), v.event,
      [](const sim::EventRecord &e, std::uint64_t index) { return e.index < index; });
  if (at == events.end() || at->index != v.event || !at->fetchSize)
    return {};
  const sim::EventRecord &fetch = *at;
  // The CPU's last serialisation before the fetch (none: the start of the log).
  std::optional<std::uint64_t> serialised;
  for (auto it = events.begin(); it != at; ++it)
    if (it->cpu == fetch.cpu && !isPatcherEvent(m, *it) && serialises(*it))
      serialised = it->index;
  std::string parts;
  for (unsigned i = 0; i < fetch.byteCount; ++i) {
    const std::uint64_t addr = fetch.fetchAddr + i;
    const std::uint8_t read = fetch.bytes[i];
    // The stores to this byte since the serialisation, in order, and the canonical value.
    std::vector<std::pair<std::uint64_t, std::uint8_t>> since;
    std::optional<std::uint8_t> canonical;
    for (auto it = events.begin(); it != at; ++it) {
      const std::optional<std::uint8_t> b = storedByte(*it, addr);
      if (!b)
        continue;
      canonical = *b;
      if (!serialised || it->index > *serialised)
        since.emplace_back(it->index, *b);
    }
    if (!canonical || *canonical == read || since.empty())
      continue;
    // The value read was current after the last store that wrote it (or at the serialisation);
    // it went stale at the next store that changed it.
    std::size_t from = 0;
    for (std::size_t k = 0; k < since.size(); ++k)
      if (since[k].second == read)
        from = k + 1;
    while (from < since.size() && since[from].second == read)
      ++from;
    if (from == since.size())
      continue;
    parts += fmt::format("{}{} read {:02x}, stale since #{} (the patcher stored {:02x})",
                         parts.empty() ? "" : "; ", h.symbol(addr), read, since[from].first,
                         since[from].second);
  }
  if (parts.empty())
    return {};
  const std::string when =
      serialised ? fmt::format("last serialised at #{}", *serialised) : "not serialised yet";
  return fmt::format("stale bytes (cpu{} {}): {}", fetch.cpu, when, parts);
}

} // namespace ftsim::verify
