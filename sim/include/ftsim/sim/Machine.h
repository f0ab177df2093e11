#pragma once
// The deterministic multi-core machine the patching engine runs against. See sim/README.md for
// the semantics (events, store and fetch models, tasks, quiescence, traps, fast mode).
//
// Memory. Text pages have one canonical copy (what the patcher reads and stores into) and one
// instruction view per CPU (what that CPU's Unicorn engine fetches from, mapped read+exec with
// uc_mem_map_ptr); the fetch model is the rule for when canonical bytes reach each view. Data
// pages (guest data, stacks) are one host buffer mapped read+write into every engine: data memory
// is sequentially consistent. The guest never writes text (a write is a guest fault).
//
// Driving it. Build a scenario (mapText/mapData, bindHypercall, addTask, watchSite), optionally
// startPatcher(body), then run(scheduler). The patcher body is straight-line engine code calling
// the MachinePort methods; it runs on a host thread under a strict baton (exactly one of run()
// and the body executes at any time), and each of its visible actions waits until the scheduler
// picks the corresponding event.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/MachinePort.h"
#include "ftsim/sim/Event.h"
#include "ftsim/sim/Finding.h"
#include "ftsim/sim/MachineConfig.h"
#include "ftsim/sim/Scheduler.h"
#include "ftsim/sim/Snapshot.h"
#include "ftsim/sim/Task.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ftsim::sim {

// The built-in hypercalls of the guest conventions (stubs `ftsim_hc_<name>`: a trap then a return).
enum class GuestHypercall : std::uint8_t {
  Schedule, // voluntary context switch: quiescent for RCU-tasks
  Idle,     // the task idles: quiescent, and it yields the CPU
  User,     // the task enters and leaves user mode: quiescent
  Exit,     // the task finished; its result is in rax / r3
  // A stay in user mode as two events, so that a patcher can act while the CPU is there:
  UserEnter,   // ct_user_enter(): the CPU runs user code from here on (quiescent)
  KernelEntry, // the next kernel entry (ct_user_exit()): a sync deferred meanwhile runs here
  IrqReturn,   // the end of a timer interrupt's handler: back to the interrupted context (iret)
};

// Where the patcher is.
enum class PatcherState : std::uint8_t {
  None,         // never started, or finished
  Store,        // waiting for its next atomic store to be scheduled
  Publish,      // waiting for its publication to be scheduled
  WaitIpis,     // in syncCores(), waiting for CPUs to take the IPI (its CPU spins)
  WaitRcuTasks, // in synchronizeRcuTasks() (sleeping: its CPU runs tasks)
  WaitEachCpu,  // in scheduleOnEachCpu() (sleeping: its CPU runs tasks)
  WaitSpin,     // in spinUntilChanged(), spinning on data (its CPU spins)
};

// Guest memory as the host buffers behind it (text: the canonical copy), for an engine of the
// caller's that must see the same memory (linux/'s patcher CPU).
struct HostMemory {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::uint8_t *host = nullptr;
  bool text = false;
};

struct RunResult {
  enum class Status : std::uint8_t {
    Completed,  // no event enabled: tasks done (exited or faulted), patcher finished
    Deadlock,   // the patcher waits for something no enabled event can bring (a Finding too)
    EventLimit, // maxEvents reached
  };
  Status status = Status::Completed;
  std::uint64_t events = 0; // executed by this call
};

class Machine final : public arch::MachinePort {
public:
  // FatalError when the ISA is not executable or the configuration is out of range.
  Machine(const arch::Arch &arch, MachineConfig config = {});
  ~Machine() override;
  Machine(const Machine &) = delete;
  Machine &operator=(const Machine &) = delete;

  const arch::Arch &arch() const;
  const MachineConfig &config() const;

  // --- Building a scenario (before run)
  // Text (e.g. kernel .text): `bytes` at `addr`, padded to whole pages with the ISA's poison (x86
  // ud2, powerpc 0). FatalError when not page aligned or overlapping another mapping.
  void mapText(std::uint64_t addr, std::span<const std::uint8_t> bytes);
  // Data (read+write, shared by all CPUs): `size` bytes (rounded up to pages), initialised from
  // `init` (zero past it).
  void mapData(std::uint64_t addr, std::uint64_t size, std::span<const std::uint8_t> init = {});
  // Map a loaded kernel image: executable segments as text, the others as data (a segment that
  // does not start on a page is padded down to one), and bind every `ftsim_hc_<name>` stub it
  // defines. FatalError when the image is for another ISA or two segments share a page.
  void loadImage(const arch::Image &image);
  // Bind one of the guest's built-in hypercall stubs (ftsim_hc_<name>) at `stubAddress`.
  void bindHypercall(GuestHypercall which, std::uint64_t stubAddress);
  // A task on spec.cpu starting at spec.entry(spec.arg) with a fresh stack and the Exit stub as
  // return address. Returns its id. FatalError without a bound Exit stub or when out of tasks.
  int addTask(const TaskSpec &spec);
  // Watch a patch site: every fetch at an address inside it is recorded with the bytes the CPU
  // fetched, and the site's lines become visible in every mode. With `allowedStates`, a fetch
  // that starts inside the site, or sees bytes that are none of the states and do not begin with
  // the ISA's trap, is a TornFetch finding. Watching a site again (same address and size)
  // replaces its allowed states.
  void watchSite(std::uint64_t addr, std::uint32_t size,
                 std::vector<arch::Bytes> allowedStates = {});
  // Record accesses to guest data in [addr, addr+size) as event footprints (and end fast-mode
  // runs after such an access).
  void watchData(std::uint64_t addr, std::uint32_t size);
  // The instruction at `addr` reads what the patcher publishes into guest data (pokeData inside a
  // publication): its line is watched, so the instruction is a step in every mode, and that step
  // is a shared read (EventRecord::sharedRead), a visible event ordered against every
  // publication. Cheaper than watchData, which hooks every access in every engine.
  void watchSharedRead(std::uint64_t addr);
  // Write text immediately into canonical memory and every view: boot-time patching, or
  // trampoline code written before anyone can fetch it. Not an event.
  void pokeText(std::uint64_t addr, std::span<const std::uint8_t> bytes);
  // Write guest data at once (not an event): what host code running inside an event (a
  // publication's write, a hypercall) stores into guest-visible variables. FatalError outside data.
  void pokeData(std::uint64_t addr, std::span<const std::uint8_t> bytes);

  // --- The patcher
  // Start `body` as the patcher on config().patcherCpu. It runs (host code, no events) until its
  // first visible action. Exceptions it throws are rethrown by run(). One patcher at a time.
  void startPatcher(std::function<void(arch::MachinePort &)> body);
  PatcherState patcherState() const;
  bool patcherActive() const { return patcherState() != PatcherState::None; }
  std::uint64_t storesDone() const; // atomic stores performed since construction/restore

  // --- Running
  RunResult run(Scheduler &scheduler, std::uint64_t maxEvents = UINT64_MAX);
  // The events the next decision would offer, computed afresh (in the order DecisionPoint::events
  // gives them). run() computes them after every event but a plain step, after which it offers
  // the same events again.
  std::vector<EventChoice> enabledEvents();

  // --- Observing
  std::span<const EventRecord> events() const; // empty unless MachineConfig::keepLog
  std::uint64_t eventCount() const;            // events so far, recorded or not
  std::string logText() const; // every event (formatEvent) then every finding, one per line
  std::span<const Decision> schedule() const;
  std::span<const Finding> findings() const;
  std::string_view publishName(std::uint64_t id) const; // of a Publish event's detail
  std::size_t taskCount() const;
  TaskInfo task(int id) const;
  std::uint64_t pc(unsigned cpu) const;
  std::uint64_t reg(unsigned cpu, int ucRegId) const;
  std::uint64_t steppedInstructions() const; // instructions executed by Step events
  std::uint64_t engineRenewals() const;      // times restore() renewed the engines (config)
  bool enginesAdopted() const; // its engines are a destroyed machine's (machinesPerEngine)
  // Fast-mode steps end by the ISA's trace flag (MachineConfig::traceFlagSteps, where Unicorn's
  // single-stepping passed the machine's calibration), not by a hook before every instruction.
  bool stepsByTraceFlag() const;
  // Regions (sim/README.md): whether `cpu` takes interrupts now (its task's EFLAGS.IF / MSR[EE];
  // a CPU without a task does), its task's preempt count, and whether a timer interrupt may
  // preempt it (interrupts on and preempt count 0).
  bool interruptsEnabled(unsigned cpu) const;
  std::uint32_t preemptCount(unsigned cpu) const;
  bool preemptible(unsigned cpu) const;
  // Whether `cpu` runs a timer interrupt's handler on top of its task (between an Irq event and
  // the handler's return).
  bool inInterrupt(unsigned cpu) const;
  // What `cpu` would fetch now from its instruction view (not a fetch: no event, no decision).
  arch::Bytes viewBytes(unsigned cpu, std::uint64_t addr, std::size_t size) const;

  // --- Snapshots
  // Both require no active patcher (its host stack cannot be saved). restore() rewrites views and
  // removes translated code only for the lines that differ.
  Snapshot snapshot() const;
  void restore(const Snapshot &snapshot);
  // A hash of everything the machine's future depends on (StateHash.cpp says what), so that an
  // explorer can recognise a state it reached before by another schedule. Between events only.
  std::uint64_t stateHash() const;

  // --- arch::MachinePort (the patcher's interface; see MachinePort.h)
  // Called from outside a patcher body: writeText is pokeText, syncCores serialises every CPU at
  // once, the waits return at once (boot time: nothing runs).
  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override;
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override;
  void syncCores() override;
  std::uint64_t allocText(std::size_t size, std::uint64_t nearAddress) override;
  void freeText(std::uint64_t addr, std::size_t size) override;
  void synchronizeRcuTasks() override;
  void scheduleOnEachCpu() override;
  void publish(std::string_view what, const std::function<void()> &write) override;
  // publish(what, write) while `again()` answers true after it, at most `most` times: a patcher
  // that polls one publication at a time (a sleep, the tasks running meanwhile). The events are
  // those of a loop of publish() calls; `again` is asked on the machine's side right after each
  // publication, where the patcher would have been resumed to ask it, so a poll costs no switch
  // to the patcher and back.
  void publishWhile(std::string_view what, const std::function<void()> &write,
                    const std::function<bool()> &again, std::uint64_t most);

  // --- A patcher that runs guest code of its own (linux/'s PokeCpu)
  // One event (a Publish named `what`) for an access of the patcher's to watched data, with the
  // access as its footprint, so that explorers see it conflict with other CPUs' accesses to the
  // same bytes. The access itself is made by the caller right after this returns. Outside a
  // patcher: returns at once.
  void publishAccess(std::string_view what, std::uint64_t addr, std::uint32_t size, bool write);
  // The patcher spins on data [addr, addr+size) (a cpu_relax() loop): it parks, holding its CPU,
  // until those bytes differ from what they are now. When no event can change them the run ends
  // with a Deadlock finding. Outside a patcher: returns at once.
  void spinUntilChanged(std::uint64_t addr, std::uint32_t size);
  std::vector<HostMemory> hostMemory() const;

  // --- Interrupts held off by the machine (an exception entry running a kernel handler with IF
  // clear): while set the CPU takes no IPI or timer interrupt, whatever its task's registers say
  // (interruptsEnabled() above says both); the IPI stays pending. Cleared at construction and by
  // restore() of an earlier state.
  void setInterruptsEnabled(unsigned cpu, bool enabled);
  // --- Interrupt context (sim/README.md "Interrupt context"): with a timer handler set and
  // MachineConfig::preemption, an `Irq` event may interrupt a task wherever it has interrupts on
  // (also inside a non-preemptible region): the machine saves the task's registers, enters
  // `entry` on the task's stack with interrupts off and the ftsim_hc_irq_return stub as return
  // address; the stub restores the saved registers. Configuration, not part of a snapshot; 0
  // turns it off. FatalError when `entry` is not text or the stub is not bound.
  void setTimerHandler(std::uint64_t entry);
  void setTrapHandler(arch::TrapHandler handler) override;
  void setHypercall(std::uint64_t stubAddress, arch::Hypercall callback) override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace ftsim::sim
