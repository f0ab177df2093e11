#pragma once
// The narrow interface between the patching engine (model/ and the arch patch protocols) and the
// machine it patches (sim::Machine implements it). Declared here, in the lowest layer, so that
// model/ never includes sim/ or Unicorn.
//
// Who calls it: the engine, running as "the patcher" on one CPU (default CPU 0), which runs no
// guest code while it patches. Every call that changes what another CPU can observe is one or more
// scheduled events: each atomic store of writeText (split by the store model), each IPI delivery
// of syncCores, each publication of shared engine state. Between two events the Scheduler may run
// any other CPU, so the engine must never assume more atomicity than the store model gives.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace ftsim::arch {

// The registers and memory of one guest CPU, as seen from a host handler (trap handler,
// hypercall). Generic accessors cover what the engine needs; arch code may use reg() with its
// Unicorn register ids.
class GuestContext {
public:
  virtual ~GuestContext() = default;
  virtual unsigned cpu() const = 0;
  virtual int task() const = 0; // task id, -1 when idle
  virtual std::uint64_t pc() const = 0;
  virtual void setPc(std::uint64_t pc) = 0;
  virtual std::uint64_t sp() const = 0;
  virtual void setSp(std::uint64_t sp) = 0;
  // Register by Unicorn id (arch code only).
  virtual std::uint64_t reg(int ucRegId) const = 0;
  virtual void setReg(int ucRegId, std::uint64_t value) = 0;
  // Data memory (stacks, guest data). false: unmapped (a guest fault for the caller to report).
  virtual bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const = 0;
  virtual bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) = 0;
};

// What a trap handler decided.
enum class TrapVerdict {
  Handled, // the handler emulated something and set the context's pc: resume there
  NotMine, // not a trap this handler owns: the machine records an unexpected-trap guest fault
  Entered, // the handler set the context up to run guest handler code (an exception entry):
           // resume at the pc it set, without serialising (the exception return will)
  Died,    // guest handler code ran and declined the trap, so the kernel dies: the handler set
           // the context's pc to the trapping instruction; the machine records a guest fault there
};

// A host handler for a trap (x86 int3, powerpc tw) at `trapAddress` (the address of the trap
// instruction itself, not the pc past it).
using TrapHandler = std::function<TrapVerdict(GuestContext &, std::uint64_t trapAddress)>;

// A host callback reached by a guest hypercall stub (a trap at a registered address followed by a
// return). The callback may read and modify registers (e.g. regs->ip or the return address).
using Hypercall = std::function<void(GuestContext &)>;

class MachinePort {
public:
  virtual ~MachinePort() = default;

  // --- Text
  // Read text as the patcher sees it (the canonical memory). false: not mapped (read fault).
  virtual bool readText(std::uint64_t addr, std::span<std::uint8_t> out) = 0;
  // Write text. The store model splits it into atomic stores, each one scheduled event; the fetch
  // model decides when each CPU's instruction view sees them. false: not writable text (write
  // fault), nothing written.
  virtual bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) = 0;
  // text_poke_sync() = on_each_cpu(do_sync_core): an IPI to every other CPU, each taken at an
  // instruction boundary (one event per CPU) and serialising that CPU's instruction fetch; returns
  // once all have taken it.
  virtual void syncCores() = 0;

  // --- Executable memory for trampolines
  // Returns the address of `size` bytes of fresh executable memory, or 0 when exhausted.
  // `nearAddress`: allocate within branch reach of it when the ISA needs that (0: anywhere).
  virtual std::uint64_t allocText(std::size_t size, std::uint64_t nearAddress) = 0;
  // Free it: the bytes are poisoned and watched; a CPU fetching from or returning into them is the
  // trampoline-lifetime violation.
  virtual void freeText(std::uint64_t addr, std::size_t size) = 0;

  // --- Waiting for other CPUs and tasks
  // synchronize_rcu_tasks(): returns once every task has passed a quiescent state (voluntary
  // schedule, user mode, idle) since the call. Preemption is not a quiescent state.
  virtual void synchronizeRcuTasks() = 0;
  // schedule_on_each_cpu(): returns once every CPU has run a work item in task context, i.e.
  // every CPU has scheduled once. Safe for freeing trampolines only without preemption.
  virtual void scheduleOnEachCpu() = 0;

  // --- Shared engine state
  // A write of engine state that guest-side handlers read (the text_poke_bp vector, a pointer to an
  // ops), made visible as one event, so that the Scheduler can put a handler's read on either side
  // of it. `what` names it in the event log.
  virtual void publish(std::string_view what, const std::function<void()> &write) = 0;

  // --- Handlers
  // Installed by the arch patch protocol (e.g. the x86 int3 handler, poke_int3_handler).
  virtual void setTrapHandler(TrapHandler handler) = 0;
  // Bind a host callback to a guest stub address (the stub is a trap followed by a return).
  virtual void setHypercall(std::uint64_t stubAddress, Hypercall callback) = 0;
};

} // namespace ftsim::arch
