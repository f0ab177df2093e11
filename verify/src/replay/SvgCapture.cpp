// The replays behind an SVG picture (SvgCapture.h): once as recorded, to find the violation, its
// trail and the sites it touches; then one event at a time, reading every CPU's view of those
// sites after each trail event.

#include "SvgCapture.h"

#include "../explore/ExploreShared.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Timeline.h"

#include <algorithm>
#include <optional>
#include <set>

namespace ftsim::verify {
namespace {

// The run of bytes around `addr` that the harness names as a site (at most 16, a watched site's
// limit), or nothing when `addr` is in none.
std::optional<SvgSite> siteAround(const Harness &h, std::uint64_t addr) {
  if (h.siteOf(addr).empty())
    return std::nullopt;
  std::uint64_t first = addr, end = addr + 1;
  while (addr - first < 15 && !h.siteOf(first - 1).empty())
    --first;
  while (end - first < 16 && !h.siteOf(end).empty())
    ++end;
  return SvgSite{first, static_cast<std::uint32_t>(end - first), h.siteOf(first)};
}

// The sites the trail's stores and fetches touch, the violation's first, then in trail order.
std::vector<SvgSite> sitesOf(const Harness &h, const std::vector<sim::EventRecord> &trail,
                             const Violation &v, std::size_t &notDrawn) {
  std::vector<SvgSite> out;
  auto add = [&](std::uint64_t addr) {
    const std::optional<SvgSite> s = siteAround(h, addr);
    if (!s ||
        std::any_of(out.begin(), out.end(), [&](const SvgSite &o) { return o.addr == s->addr; }))
      return;
    out.push_back(*s);
  };
  if (v.bytes.size())
    add(v.pc);
  for (const sim::EventRecord &e : trail) {
    if (e.fetchSize)
      add(e.fetchAddr);
    for (std::uint32_t i = 0; e.kind == sim::EventKind::Store && i < e.storeSize; ++i)
      add(e.storeAddr + i);
  }
  notDrawn = out.size() > kSvgMaxSites ? out.size() - kSvgMaxSites : 0;
  out.resize(std::min(out.size(), kSvgMaxSites));
  return out;
}

} // namespace

SvgCapture captureForSvg(Harness &harness, const Counterexample &cex, const std::string &origin) {
  SvgCapture out;
  ReplayedExecution first;
  try {
    first = replayChoices(harness, cex.choices, {}, cex.continues);
  } catch (const FatalError &e) {
    fatal("{}: does not replay: {}", origin, e.what());
  }
  if (cex.logHash && first.logHash != cex.logHash)
    fatal("{}: does not reproduce byte for byte: event log hash {:#018x}, the counterexample "
          "says {:#018x}",
          origin, first.logHash, cex.logHash);
  if (first.violations.empty())
    fatal("{}: the execution shows no violation: nothing to draw", origin);
  out.violation = first.violations.front();
  const sim::Machine &m1 = harness.machine();
  const std::span<const sim::EventRecord> log = m1.events();
  std::vector<std::uint64_t> trail = trailEvents(harness, m1, out.violation.event);
  if (trail.size() > kSvgMaxColumns) {
    out.trailNotDrawn = trail.size() - kSvgMaxColumns;
    trail.erase(trail.begin(), trail.begin() + static_cast<std::ptrdiff_t>(out.trailNotDrawn));
  }
  std::vector<sim::EventRecord> trailRecords;
  for (const std::uint64_t i : trail)
    trailRecords.push_back(log[i]);
  out.sites = sitesOf(harness, trailRecords, out.violation, out.sitesNotDrawn);
  out.eventsUpToViolation = out.violation.event + 1;
  out.eventsInExecution = m1.eventCount();
  out.cpus = m1.config().cpus;
  out.patcherCpu = m1.config().patcherCpu;

  // Again, one event at a time: after each, the views of the trail's events run so far.
  const std::set<std::uint64_t> wanted(trail.begin(), trail.end());
  std::uint64_t seen = 0;
  auto capture = [&](std::uint64_t index) {
    sim::Machine &m = harness.machine();
    SvgColumn c;
    c.event.index = index;
    for (const SvgSite &s : out.sites) {
      arch::Bytes memory(s.size);
      m.readText(s.addr, memory);
      c.memory.push_back(memory);
      std::vector<arch::Bytes> views;
      for (unsigned cpu = 0; cpu < out.cpus; ++cpu)
        views.push_back(m.viewBytes(cpu, s.addr, s.size));
      c.view.push_back(std::move(views));
    }
    out.columns.push_back(std::move(c));
  };
  detail::CountingReplay replay(cex.choices, cex.continues);
  harness.runExecution(replay, [&] {
    for (const std::uint64_t now = harness.machine().eventCount(); seen < now; ++seen)
      if (wanted.count(seen))
        capture(seen);
    return false;
  });
  const sim::Machine &m2 = harness.machine();
  if (fnv1a(m2.logText()) != first.logHash || out.columns.size() != trail.size())
    fatal("{}: replayed one event at a time, the execution differs from the recorded one", origin);
  for (SvgColumn &c : out.columns) {
    c.event = m2.events()[c.event.index];
    c.described = describeEvent(harness, m2, c.event);
  }
  return out;
}

} // namespace ftsim::verify
