// Text timelines and violation trails (Timeline.h), for every kind of scenario.

#include "ftsim/verify/replay/Timeline.h"

#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/replay/Slice.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

std::string outcomeText(const Harness &h, const sim::EventRecord &e) {
  const std::string_view name = sim::stepOutcomeName(e.outcome);
  switch (e.outcome) {
  case sim::StepOutcome::None:
  case sim::StepOutcome::WatchedStop:
    return {};
  case sim::StepOutcome::Exit:
    return fmt::format(" {}({:#x})", name, e.detail);
  case sim::StepOutcome::TrapHandled:
  case sim::StepOutcome::Hypercall:
    return fmt::format(" {}({})", name, h.symbol(e.detail));
  default:
    return fmt::format(" {}", name);
  }
}

} // namespace

std::string describeEvent(const Harness &h, const sim::Machine &machine,
                          const sim::EventRecord &e) {
  const std::string who = isPatcherEvent(machine, e)
                              ? fmt::format("cpu{} patcher", e.cpu)
                              : (e.task >= 0 ? fmt::format("cpu{} task{}", e.cpu, e.task)
                                             : fmt::format("cpu{}", e.cpu));
  std::string out = fmt::format("#{} {} {}", e.index, who, sim::eventKindName(e.kind));
  const std::span<const std::uint8_t> bytes(e.bytes, e.byteCount);
  switch (e.kind) {
  case sim::EventKind::Step:
  case sim::EventKind::Run:
    out += fmt::format(" {}", h.symbol(e.pc));
    if (e.kind == sim::EventKind::Run)
      out += fmt::format(" -> {}", h.symbol(e.pcAfter));
    break;
  case sim::EventKind::FetchLine:
  case sim::EventKind::Ipi:
  case sim::EventKind::Preempt:
  case sim::EventKind::Irq:
    out += fmt::format(" at {}", h.symbol(e.pc));
    break;
  case sim::EventKind::Store:
    out += fmt::format(" {} [{}]", h.symbol(e.storeAddr), arch::hexBytes(bytes));
    break;
  case sim::EventKind::Publish:
    out += fmt::format(" {}", machine.publishName(e.detail));
    break;
  case sim::EventKind::Alloc:
  case sim::EventKind::Free:
    out += fmt::format(" {:#x}+{}", e.storeAddr, e.detail);
    break;
  }
  if (e.fetchSize)
    out += fmt::format(" fetch {} [{}] = {}", h.symbol(e.fetchAddr), arch::hexBytes(bytes),
                       arch::describeBytes(h.arch(), bytes, e.fetchAddr));
  if (e.dataSize)
    out += fmt::format(" data-{} {:#x}+{}", e.dataWrite ? "write" : "read", e.dataAddr, e.dataSize);
  out += outcomeText(h, e);
  if (std::string note = h.annotate(e); !note.empty())
    out += ": " + note;
  return out;
}

std::vector<std::uint64_t> trailEvents(const Harness &h, const sim::Machine &machine,
                                       std::uint64_t upTo, const Violation *v) {
  std::vector<std::uint64_t> out;
  for (const sim::EventRecord &e : machine.events()) {
    if (e.index > upTo)
      break;
    const bool plain =
        (e.kind == sim::EventKind::Step || e.kind == sim::EventKind::Run) && !e.fetchSize &&
        !e.dataSize && !e.sharedRead &&
        (e.outcome == sim::StepOutcome::None || e.outcome == sim::StepOutcome::WatchedStop);
    const bool violating = v && e.index == v->event;
    if (!plain || e.index == upTo || violating || !h.annotate(e).empty())
      out.push_back(e.index);
  }
  return out;
}

std::vector<std::string> eventTrail(const Harness &h, const sim::Machine &machine,
                                    std::uint64_t upTo, const Violation *v) {
  std::vector<std::string> out;
  const std::span<const sim::EventRecord> events = machine.events();
  for (const std::uint64_t i : trailEvents(h, machine, upTo, v)) {
    out.push_back(describeEvent(h, machine, events[i]));
    if (v && i == v->event) {
      out.back() += fmt::format("  <- {}", v->oracle);
      if (std::string stale = staleBytesText(h, machine, *v); !stale.empty())
        out.back() += "; " + stale;
    }
  }
  return out;
}

void attachTrail(const Harness &h, Violation &v, bool full) {
  if (v.trail.empty())
    v.trail =
        full ? eventTrail(h, h.machine(), v.event, &v) : relevantTrail(h, h.machine(), v, v.event);
}

std::string timeline(const Harness &h, const Violation *v, bool full) {
  const sim::Machine &m = h.machine();
  std::string out;
  const std::vector<std::string> lines =
      full || !v ? eventTrail(h, m, lastEvent(m), v) : relevantTrail(h, m, *v, lastEvent(m));
  for (const std::string &line : lines)
    out += "  " + line + "\n";
  for (const sim::Finding &f : m.findings())
    out += "  " + sim::formatFinding(f) + "\n";
  const auto &reference = h.referenceResults();
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    out += fmt::format("  task{} {} on cpu{}: {}", t, info.name, info.cpu,
                       sim::taskStateName(info.state));
    if (info.state == sim::TaskState::Exited) {
      out += fmt::format(" with {:#x}", info.result);
      if (t < reference.size())
        out += fmt::format(" (reference: {:#x})", reference[t]);
    }
    out += "\n";
  }
  return out;
}

} // namespace ftsim::verify
