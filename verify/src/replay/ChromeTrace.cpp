// Chrome trace-event JSON of an execution (Timeline.h).

#include "ftsim/verify/replay/Timeline.h"

#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ftsim::verify {

std::string chromeTrace(const Harness &harness, const std::vector<Violation> &violations) {
  const sim::Machine &machine = harness.machine();
  auto symbol = [&](std::uint64_t addr) { return harness.symbol(addr); };
  const unsigned cpus = machine.config().cpus;
  const unsigned patcherTid = 100;
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  auto meta = [&](unsigned tid, const std::string &name) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "ftsim machine"}}}});
  for (unsigned c = 0; c < cpus; ++c)
    meta(c, fmt::format("cpu{}", c));
  meta(patcherTid, fmt::format("patcher (cpu{})", machine.config().patcherCpu));
  for (const sim::EventRecord &e : machine.events()) {
    const bool patcher = e.kind == sim::EventKind::Store || e.kind == sim::EventKind::Publish ||
                         e.kind == sim::EventKind::Alloc || e.kind == sim::EventKind::Free;
    nlohmann::ordered_json args;
    args["event"] = e.index;
    if (e.task >= 0)
      args["task"] = e.task;
    std::string name(sim::eventKindName(e.kind));
    switch (e.kind) {
    case sim::EventKind::Store:
      name = fmt::format("store {}", symbol(e.storeAddr));
      args["addr"] = fmt::format("{:#x}", e.storeAddr);
      args["bytes"] = arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount));
      break;
    case sim::EventKind::Publish:
      name = fmt::format("publish {}", machine.publishName(e.detail));
      break;
    case sim::EventKind::Alloc:
    case sim::EventKind::Free:
      args["addr"] = fmt::format("{:#x}", e.storeAddr);
      args["size"] = e.detail;
      break;
    case sim::EventKind::Ipi:
      name = "sync IPI";
      break;
    case sim::EventKind::Preempt:
      name = "timer preemption";
      args["pc"] = symbol(e.pc);
      break;
    default:
      name = fmt::format("{} {}", sim::eventKindName(e.kind), symbol(e.pc));
      args["pc"] = fmt::format("{:#x}", e.pc);
      if (e.outcome != sim::StepOutcome::None)
        args["outcome"] = std::string(sim::stepOutcomeName(e.outcome));
      if (e.fetchSize)
        args["fetched"] = arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount));
      break;
    }
    events.push_back({{"name", name},
                      {"cat", std::string(sim::eventKindName(e.kind))},
                      {"ph", "X"},
                      {"ts", e.index},
                      {"dur", 1},
                      {"pid", 1},
                      {"tid", patcher ? patcherTid : e.cpu},
                      {"args", args}});
  }
  for (const sim::Finding &f : machine.findings())
    events.push_back({{"name", fmt::format("finding: {}", sim::findingKindName(f.kind))},
                      {"cat", "finding"},
                      {"ph", "i"},
                      {"s", "g"},
                      {"ts", f.event},
                      {"pid", 1},
                      {"tid", f.cpu},
                      {"args", {{"message", f.message}, {"decoded", f.decoded}}}});
  for (const Violation &v : violations)
    events.push_back({{"name", fmt::format("violation: {}", v.oracle)},
                      {"cat", "violation"},
                      {"ph", "i"},
                      {"s", "g"},
                      {"ts", v.event},
                      {"pid", 1},
                      {"tid", v.cpus.empty() ? 0u : v.cpus.front()},
                      {"args", {{"summary", summarizeViolation(v)}}}});
  nlohmann::ordered_json root;
  root["traceEvents"] = events;
  root["displayTimeUnit"] = "ns";
  root["otherData"] = {{"clock", "one machine event = 1 us of trace time"}};
  return root.dump(1) + "\n";
}

} // namespace ftsim::verify
