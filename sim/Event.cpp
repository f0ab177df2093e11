#include "ftsim/sim/Event.h"
#include "ftsim/sim/Finding.h"
#include "ftsim/sim/Task.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::sim {

std::string_view eventKindName(EventKind kind) {
  switch (kind) {
  case EventKind::Step:
    return "step";
  case EventKind::FetchLine:
    return "fetchline";
  case EventKind::Run:
    return "run";
  case EventKind::Ipi:
    return "ipi";
  case EventKind::Preempt:
    return "preempt";
  case EventKind::Irq:
    return "irq";
  case EventKind::Store:
    return "store";
  case EventKind::Publish:
    return "publish";
  case EventKind::Alloc:
    return "alloc";
  case EventKind::Free:
    return "free";
  }
  FTSIM_PANIC("bad EventKind {}", static_cast<int>(kind));
}

std::string_view stepOutcomeName(StepOutcome outcome) {
  switch (outcome) {
  case StepOutcome::None:
    return "";
  case StepOutcome::TrapHandled:
    return "trap-handled";
  case StepOutcome::Hypercall:
    return "hypercall";
  case StepOutcome::Schedule:
    return "schedule";
  case StepOutcome::Idle:
    return "idle";
  case StepOutcome::User:
    return "user";
  case StepOutcome::Exit:
    return "exit";
  case StepOutcome::Serialised:
    return "serialised";
  case StepOutcome::Fault:
    return "fault";
  case StepOutcome::WatchedStop:
    return "watched-stop";
  case StepOutcome::UserEnter:
    return "user-enter";
  case StepOutcome::KernelEntry:
    return "kernel-entry";
  case StepOutcome::IrqReturn:
    return "irq-return";
  }
  FTSIM_PANIC("bad StepOutcome {}", static_cast<int>(outcome));
}

std::string formatEvent(const EventRecord &e) {
  std::string out = fmt::format("#{} {} cpu{}", e.index, eventKindName(e.kind), e.cpu);
  if (e.task >= 0)
    out += fmt::format(" task{}", e.task);
  std::span<const std::uint8_t> bytes(e.bytes, e.byteCount);
  switch (e.kind) {
  case EventKind::Step:
  case EventKind::Run:
    out += fmt::format(" pc={:#x}->{:#x}", e.pc, e.pcAfter);
    break;
  case EventKind::FetchLine:
  case EventKind::Ipi:
    out += fmt::format(" pc={:#x}", e.pc);
    break;
  case EventKind::Preempt:
    out += fmt::format(" pc={:#x}", e.pc);
    if (e.detail)
      out += " irq-return (preempt_count > 0: same task)";
    break;
  case EventKind::Irq:
    out += fmt::format(" pc={:#x} handler={:#x}", e.pc, e.detail);
    break;
  case EventKind::Store:
    out += fmt::format(" {:#x}+{} [{}]", e.storeAddr, e.storeSize, arch::hexBytes(bytes));
    break;
  case EventKind::Publish:
    out += fmt::format(" name#{}", e.detail);
    break;
  case EventKind::Alloc:
  case EventKind::Free:
    out += fmt::format(" {:#x}+{}", e.storeAddr, e.detail);
    break;
  }
  if (e.fetchSize)
    out += fmt::format(" fetch {:#x}[{}]", e.fetchAddr, arch::hexBytes(bytes));
  if (e.dataSize)
    out += fmt::format(" data-{} {:#x}+{}", e.dataWrite ? "write" : "read", e.dataAddr, e.dataSize);
  if (e.regionChange)
    out += fmt::format(" preempt_count={} irqs={}", e.preemptCount, e.irqsOff ? "off" : "on");
  if (e.outcome != StepOutcome::None) {
    out += fmt::format(" {}", stepOutcomeName(e.outcome));
    if (e.outcome == StepOutcome::Exit || e.outcome == StepOutcome::TrapHandled ||
        e.outcome == StepOutcome::Hypercall || e.outcome == StepOutcome::IrqReturn)
      out += fmt::format("({:#x})", e.detail);
  }
  return out;
}

std::string_view findingKindName(FindingKind kind) {
  switch (kind) {
  case FindingKind::GuestFault:
    return "guest-fault";
  case FindingKind::TornFetch:
    return "torn-fetch";
  case FindingKind::TrampolineLifetime:
    return "trampoline-lifetime";
  case FindingKind::Deadlock:
    return "deadlock";
  }
  FTSIM_PANIC("bad FindingKind {}", static_cast<int>(kind));
}

std::string formatFinding(const Finding &f) {
  std::string out = fmt::format("{} at event #{} cpu{} task{} pc={:#x}: {}",
                                findingKindName(f.kind), f.event, f.cpu, f.task, f.pc, f.message);
  if (!f.bytes.empty())
    out += fmt::format(" [{}] = {}", arch::hexBytes(f.bytes), f.decoded);
  return out;
}

std::string_view taskStateName(TaskState state) {
  switch (state) {
  case TaskState::Runnable:
    return "runnable";
  case TaskState::Exited:
    return "exited";
  case TaskState::Faulted:
    return "faulted";
  }
  FTSIM_PANIC("bad TaskState {}", static_cast<int>(state));
}

} // namespace ftsim::sim
