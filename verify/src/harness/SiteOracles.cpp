// The site harness's own oracles: trace completeness over the hits of its two trampolines, and
// the patch's completion.

#include "ftsim/verify/harness/SiteHarness.h"

#include <fmt/format.h>

#include <map>

namespace ftsim::verify {
namespace {

// A site that calls a trampoline before and after the patch (call->call) is traced for the whole
// run, so every call of its function by every task that finished must reach one of the two
// trampolines; a trampoline that is neither the old nor the new target of a site must never be
// reached from it.
class SiteTraceCompleteness final : public Oracle {
public:
  explicit SiteTraceCompleteness(const SiteHarness &harness) : harness_(harness) {}
  std::string_view name() const override { return "trace-completeness"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    const auto &sites = harness_.sites();
    std::map<std::pair<int, std::size_t>, unsigned> hits;
    for (const TraceHit &h : harness_.trace()) {
      if (h.site >= sites.size())
        continue;
      if (!expected(sites[h.site].transition, h.trampoline)) {
        Violation v = violationAt(
            "trace-completeness", h.event,
            fmt::format("task{} reached trampoline {} from site{}, which is neither its old nor "
                        "its new target",
                        h.task, h.trampoline ? 'B' : 'A', h.site));
        v.cpus = {h.cpu};
        v.task = h.task;
        v.site = fmt::format("site{}", h.site);
        out.push_back(std::move(v));
      }
      ++hits[{h.task, h.site}];
    }
    const unsigned calls = harness_.scenario().calls;
    for (std::size_t t = 0; t < x.machine.taskCount(); ++t) {
      const sim::TaskInfo info = x.machine.task(static_cast<int>(t));
      if (info.state != sim::TaskState::Exited)
        continue;
      for (std::size_t s = 0; s < sites.size(); ++s) {
        const unsigned seen = hits[{static_cast<int>(t), s}];
        if (sites[s].transition != Transition::CallToCall || seen == calls)
          continue;
        Violation v = violationAt("trace-completeness", exitEvent(x.machine, static_cast<int>(t)),
                                  fmt::format("task{} called the function of site{} {} times "
                                              "while it was traced throughout; the trace has {}",
                                              t, s, calls, seen));
        v.cpus = {info.cpu};
        v.task = static_cast<int>(t);
        v.site = fmt::format("site{}", s);
        out.push_back(std::move(v));
      }
    }
  }

private:
  static bool expected(Transition t, unsigned trampoline) {
    const bool oldTarget = t != Transition::NopToCall && trampoline == 0;
    const bool newTarget =
        t != Transition::CallToNop && trampoline == (t == Transition::CallToCall ? 1u : 0u);
    return oldTarget || newTarget;
  }
  const SiteHarness &harness_;
};

// Completion: an execution that ran to its end (the patcher finished, every task exited or
// faulted) leaves every site holding its new instruction. A protocol that never writes it (a sync
// alone, the old bytes again, a tail without its first byte) is safe for every CPU at every
// instant and does nothing; without this oracle such a protocol file was VERIFIED. An execution
// cut at max_events or deadlocked is not judged: its patcher did not finish.
class SitePatchApplied final : public Oracle {
public:
  explicit SitePatchApplied(const SiteHarness &harness) : harness_(harness) {}
  std::string_view name() const override { return "patch-applied"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    if (x.run.status != sim::RunResult::Status::Completed || x.machine.patcherActive())
      return;
    const auto &sites = harness_.sites();
    for (std::size_t s = 0; s < sites.size(); ++s) {
      const arch::Bytes now = harness_.siteBytes(s);
      if (now == sites[s].newBytes)
        continue;
      Violation v = violationAt(
          "patch-applied", lastEvent(x.machine),
          fmt::format("the patch ended with site{} holding {}, not its new instruction {} ({})", s,
                      arch::hexBytes(now), arch::hexBytes(sites[s].newBytes),
                      arch::describeBytes(harness_.arch(), sites[s].newBytes, sites[s].addr)));
      v.cpus = {x.machine.config().patcherCpu};
      v.site = fmt::format("site{}", s);
      v.bytes = now;
      v.decoded = arch::describeBytes(harness_.arch(), now, sites[s].addr);
      out.push_back(std::move(v));
    }
  }

private:
  const SiteHarness &harness_;
};

} // namespace

OracleList SiteHarness::kindOracles() const {
  return {std::make_shared<SiteTraceCompleteness>(*this),
          std::make_shared<SitePatchApplied>(*this)};
}

} // namespace ftsim::verify
