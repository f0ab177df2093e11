// The relevance slice of an execution for one violation (Slice.h).

#include "ftsim/verify/replay/Slice.h"

#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ftsim::verify {
namespace {

// A site's name without the offset inside it ("site1+3" -> "site1", "decay_load+0x1/0x29" ->
// "decay_load"), so every byte of a site names the same site.
std::string siteKey(const Harness &h, std::uint64_t addr) {
  std::string s = h.siteOf(addr);
  return s.substr(0, s.find('+'));
}

struct Involved {
  std::set<unsigned> cpus;
  std::set<std::string> sites;
  unsigned observer = 0;
  std::uint64_t event = 0; // the violation's
};

Involved involvedIn(const Harness &h, const sim::Machine &m, const Violation &v) {
  Involved in;
  in.event = v.event;
  in.cpus.insert(v.cpus.begin(), v.cpus.end());
  in.cpus.erase(m.config().patcherCpu); // its patcher events are kept by kind
  const auto &events = m.events();
  const auto at = std::find_if(events.begin(), events.end(),
                               [&](const sim::EventRecord &e) { return e.index == v.event; });
  in.observer = !v.cpus.empty() ? v.cpus.front() : at != events.end() ? at->cpu : 0;
  in.cpus.insert(in.observer);
  auto addSite = [&](std::uint64_t addr) {
    if (std::string key = siteKey(h, addr); !key.empty())
      in.sites.insert(key);
  };
  if (v.pc)
    addSite(v.pc);
  if (!v.site.empty())
    in.sites.insert(v.site.substr(0, v.site.find('+')));
  if (at != events.end()) {
    if (at->fetchSize)
      addSite(at->fetchAddr);
    addSite(at->pc);
  }
  // A violation of no site of its own (a task's wrong result): every site its CPUs fetched from.
  if (in.sites.empty())
    for (const sim::EventRecord &e : events)
      if (e.index <= v.event && e.fetchSize && in.cpus.count(e.cpu) && !isPatcherEvent(m, e))
        addSite(e.fetchAddr);
  return in;
}

bool relevant(const Harness &h, const sim::Machine &m, const Involved &in,
              const sim::EventRecord &e) {
  if (isPatcherEvent(m, e))
    return e.kind != sim::EventKind::Store || in.sites.count(siteKey(h, e.storeAddr));
  if (!in.cpus.count(e.cpu))
    return false;
  if (e.index > in.event) // after it: how each involved task ended
    return e.outcome == sim::StepOutcome::Fault || e.outcome == sim::StepOutcome::Exit;
  if (e.kind == sim::EventKind::Ipi || e.kind == sim::EventKind::Preempt ||
      e.kind == sim::EventKind::Irq)
    return true;
  if (e.fetchSize && in.sites.count(siteKey(h, e.fetchAddr)))
    return true;
  if (e.outcome != sim::StepOutcome::None && e.outcome != sim::StepOutcome::WatchedStop &&
      e.outcome != sim::StepOutcome::Hypercall)
    return true;
  return !h.annotate(e).empty();
}

std::string elidedLine(std::uint64_t count, const std::set<unsigned> &cpus) {
  std::string who;
  for (unsigned c : cpus)
    who += fmt::format("{}cpu{}", who.empty() ? "" : ", ", c);
  return fmt::format("… {} event{} of {} elided (no involved site, store or sync)", count,
                     count == 1 ? "" : "s", who.empty() ? "the patcher" : who);
}

} // namespace

bool isPatcherEvent(const sim::Machine &m, const sim::EventRecord &e) {
  const bool kind = e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish ||
                    e.kind == sim::EventKind::Alloc || e.kind == sim::EventKind::Free;
  return kind && e.task < 0 && e.cpu == m.config().patcherCpu;
}

std::vector<std::string> relevantTrail(const Harness &h, const sim::Machine &m, const Violation &v,
                                       std::uint64_t upTo) {
  Involved in = involvedIn(h, m, v);
  const auto &events = m.events();
  // The observer's last kSliceLastSteps events up to the violation; the sites they fetched from
  // are involved too.
  std::set<std::uint64_t> last;
  for (auto it = events.rbegin(); it != events.rend() && last.size() < kSliceLastSteps; ++it)
    if (it->index <= v.event && it->cpu == in.observer && !isPatcherEvent(m, *it)) {
      last.insert(it->index);
      if (std::string key = it->fetchSize ? siteKey(h, it->fetchAddr) : ""; !key.empty())
        in.sites.insert(key);
    }
  std::vector<std::string> out;
  std::uint64_t elided = 0;
  std::set<unsigned> elidedCpus;
  auto flush = [&] {
    if (elided)
      out.push_back(elidedLine(elided, elidedCpus));
    elided = 0;
    elidedCpus.clear();
  };
  for (const sim::EventRecord &e : events) {
    if (e.index > upTo)
      break;
    if (e.index != v.event && !last.count(e.index) && !relevant(h, m, in, e)) {
      ++elided;
      if (!isPatcherEvent(m, e))
        elidedCpus.insert(e.cpu);
      continue;
    }
    flush();
    std::string line = describeEvent(h, m, e);
    if (e.index == v.event) {
      line += fmt::format("  <- {}", v.oracle);
      if (std::string stale = staleBytesText(h, m, v); !stale.empty())
        line += "; " + stale;
    }
    out.push_back(std::move(line));
  }
  flush();
  return out;
}

} // namespace ftsim::verify
