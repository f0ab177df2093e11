// Chrome trace-event JSON of an execution (Timeline.h).

#include "ftsim/verify/replay/Timeline.h"

#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Slice.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ftsim::verify {

namespace {

using Json = nlohmann::ordered_json;

constexpr unsigned kPatcherTid = 100;

// The process and one thread per CPU, and the patcher's thread.
void threadNames(Json &events, const sim::Machine &machine) {
  auto meta = [&](unsigned tid, const std::string &name) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "ftsim machine"}}}});
  for (unsigned c = 0; c < machine.config().cpus; ++c)
    meta(c, fmt::format("cpu{}", c));
  meta(kPatcherTid, fmt::format("patcher (cpu{})", machine.config().patcherCpu));
}

// A machine event's name, and its details into `args`.
std::string describeEvent(const Harness &harness, const sim::EventRecord &e, Json &args) {
  auto symbol = [&](std::uint64_t addr) { return harness.symbol(addr); };
  switch (e.kind) {
  case sim::EventKind::Store:
    args["addr"] = fmt::format("{:#x}", e.storeAddr);
    args["bytes"] = arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount));
    return fmt::format("store {}", symbol(e.storeAddr));
  case sim::EventKind::Publish:
    return fmt::format("publish {}", harness.machine().publishName(e.detail));
  case sim::EventKind::Alloc:
  case sim::EventKind::Free:
    args["addr"] = fmt::format("{:#x}", e.storeAddr);
    args["size"] = e.detail;
    return std::string(sim::eventKindName(e.kind));
  case sim::EventKind::Ipi:
    return "sync IPI";
  case sim::EventKind::Preempt:
    args["pc"] = symbol(e.pc);
    return "timer preemption";
  case sim::EventKind::Irq:
    args["pc"] = symbol(e.pc);
    return "timer interrupt (handler)";
  default:
    args["pc"] = fmt::format("{:#x}", e.pc);
    if (e.outcome != sim::StepOutcome::None)
      args["outcome"] = std::string(sim::stepOutcomeName(e.outcome));
    if (e.fetchSize)
      args["fetched"] = arch::hexBytes(arch::Bytes(e.bytes, e.bytes + e.byteCount));
    return fmt::format("{} {}", sim::eventKindName(e.kind), symbol(e.pc));
  }
}

// A machine event as a one-microsecond slice on its CPU's thread (the patcher's for its events).
Json machineEvent(const Harness &harness, const sim::EventRecord &e) {
  const bool patcher = isPatcherEvent(harness.machine(), e);
  Json args;
  args["event"] = e.index;
  if (e.task >= 0)
    args["task"] = e.task;
  const std::string name = describeEvent(harness, e, args);
  return {{"name", name},
          {"cat", std::string(sim::eventKindName(e.kind))},
          {"ph", "X"},
          {"ts", e.index},
          {"dur", 1},
          {"pid", 1},
          {"tid", patcher ? kPatcherTid : e.cpu},
          {"args", args}};
}

// A global instant event.
Json instant(std::string name, const char *category, std::uint64_t event, unsigned tid, Json args) {
  return {{"name", std::move(name)},
          {"cat", category},
          {"ph", "i"},
          {"s", "g"},
          {"ts", event},
          {"pid", 1},
          {"tid", tid},
          {"args", std::move(args)}};
}

} // namespace

std::string chromeTrace(const Harness &harness, const std::vector<Violation> &violations) {
  const sim::Machine &machine = harness.machine();
  Json events = Json::array();
  threadNames(events, machine);
  for (const sim::EventRecord &e : machine.events())
    events.push_back(machineEvent(harness, e));
  for (const sim::Finding &f : machine.findings())
    events.push_back(instant(fmt::format("finding: {}", sim::findingKindName(f.kind)), "finding",
                             f.event, f.cpu, {{"message", f.message}, {"decoded", f.decoded}}));
  for (const Violation &v : violations)
    events.push_back(instant(fmt::format("violation: {}", v.oracle), "violation", v.event,
                             v.cpus.empty() ? 0u : v.cpus.front(),
                             {{"summary", summarizeViolation(v)}}));
  Json root;
  root["traceEvents"] = events;
  root["displayTimeUnit"] = "ns";
  root["otherData"] = {{"clock", "one machine event = 1 us of trace time"}};
  return root.dump(1) + "\n";
}

} // namespace ftsim::verify
