#pragma once
// Events: the atoms of simulated time. The Scheduler picks one enabled event at a time; the
// machine records every executed event as an EventRecord (a plain value, so that logs compare
// byte for byte and an explorer can read each event's footprint to compute dependencies).

#include "ftsim/arch/Arch.h"

#include <cstdint>
#include <string>

namespace ftsim::sim {

enum class EventKind : std::uint8_t {
  // Schedulable events (offered to the Scheduler).
  Step,      // a CPU executes one guest instruction (completes a split fetch if one is pending)
  FetchLine, // line fetch model: the first line of an instruction that may straddle two lines
  Run,       // fast mode: a CPU runs freely up to the quantum, stopping before watched code
  Ipi,       // an IPI of syncCores() is taken by one CPU at an instruction boundary (serialises)
  Preempt,   // a timer interrupt: preempts the running task, or inside a non-preemptible region
             // returns to it (NOT a quiescent state; serialises)
  Irq,       // a timer interrupt whose handler runs guest code (Machine::setTimerHandler): the CPU
             // saves the interrupted context and enters the handler with interrupts off
  Store,     // the patcher performs one atomic store into text
  Publish,   // the patcher publishes engine state that guest-side handlers read
  // Notes: host actions recorded in the log without a scheduling decision.
  Alloc, // allocText
  Free,  // freeText (the range is poisoned and watched from now on)
};

// What an executed Step/Run led to, besides the instruction itself.
enum class StepOutcome : std::uint8_t {
  None,
  TrapHandled, // the installed TrapHandler emulated a trap (an exception return: serialises)
  Hypercall,   // a host callback bound with setHypercall ran
  Schedule,    // ftsim_hc_schedule: voluntary context switch (quiescent)
  Idle,        // ftsim_hc_idle: the task idles (quiescent)
  User,        // ftsim_hc_user: the task went to user mode and back (quiescent)
  Exit,        // ftsim_hc_exit: the task finished; detail = its result
  Serialised,  // the instruction itself serialises (cpuid, iret, isync)
  Fault,       // a guest fault: see the machine's findings
  WatchedStop, // fast mode: a Run stopped before watched code or after a watched data access
  UserEnter,   // ftsim_hc_user_enter: the task went to user mode and stays there (quiescent)
  KernelEntry, // ftsim_hc_kernel_entry: back in the kernel; detail = 1 when a deferred sync ran
  IrqReturn,   // ftsim_hc_irq_return: the interrupt handler returned; the interrupted context is
               // restored (iret / rfi: serialises); detail = the pc it resumes at
};

// One enabled event offered to the Scheduler.
struct EventChoice {
  EventKind kind;
  std::uint8_t cpu; // the CPU that performs it (the patcher's CPU for Store/Publish)
  bool operator==(const EventChoice &) const = default;
};

// One executed event. Footprints (what an explorer needs for dependencies):
//  - fetchAddr/fetchSize: the watched patch site (or freed/trampoline text) the CPU fetched from,
//    and `bytes` the site's bytes as that CPU fetched them;
//  - storeAddr/storeSize: the text bytes the patcher stored (`bytes` holds them);
//  - dataAddr/dataSize/dataWrite: an access to a watched data range (watchData());
//  - sharedRead: a host trap handler or hypercall ran, or the step executed an instruction marked
//    by Machine::watchSharedRead or one that may fetch text the patcher stored into outside a
//    watched site (each may read state the patcher publishes or writes).
// A Step that touches none of these commutes with every store and publication.
struct EventRecord {
  std::uint64_t index = 0; // position in the log
  EventKind kind = EventKind::Step;
  StepOutcome outcome = StepOutcome::None;
  std::uint8_t cpu = 0;
  std::int16_t task = -1;    // running task, -1 for none / the patcher
  std::uint64_t pc = 0;      // Step/Run/FetchLine: pc before; Ipi/Preempt: pc at the boundary
  std::uint64_t pcAfter = 0; // Step/Run: pc after
  std::uint64_t detail = 0;  // Exit: result; TrapHandled: trap address; Publish: name id;
                             // Preempt: 1 when the interrupt returned to the same task;
                             // Irq: the handler's entry; IrqReturn: the pc resumed at;
                             // Alloc/Free: size
  std::uint64_t fetchAddr = 0;
  std::uint64_t storeAddr = 0;
  std::uint64_t dataAddr = 0;
  std::uint8_t fetchSize = 0;
  std::uint8_t storeSize = 0; // up to 64 under the line store model: bytes holds the first 16
  std::uint8_t dataSize = 0;
  bool dataWrite = false;
  bool sharedRead = false;
  // Step/Run/Preempt: the CPU's preempt count or interrupt flag differs after the event (then
  // preemptCount and irqsOff are the new state): it changes which Ipi/Preempt events are enabled.
  bool regionChange = false;
  bool irqsOff = false;
  std::uint8_t preemptCount = 0; // saturated at 255
  std::uint8_t byteCount = 0;    // valid entries of `bytes`
  std::uint8_t bytes[16] = {};

  bool operator==(const EventRecord &) const = default;
};

std::string_view eventKindName(EventKind kind);
std::string_view stepOutcomeName(StepOutcome outcome);
// One log line, deterministic: "#12 step cpu1 task3 pc=0x... fetch 0x...[0f 1f 2e 00 00]".
std::string formatEvent(const EventRecord &event);

} // namespace ftsim::sim
