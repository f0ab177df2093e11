#pragma once
// Machine's private state. Split in two: State is every value a Snapshot must capture (plain
// copyable data); the rest (engines, host buffers, hooks, the patcher's fiber, bindings) lives
// as long as the Machine.

#include "Fiber.h"
#include "GuestAbi.h"
#include "StaleHistory.h"

#include "ftsim/sim/Machine.h"

#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

namespace ftsim::sim {

constexpr std::uint64_t kPage = 4096;

inline std::uint64_t roundUp(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
inline std::uint64_t lineOf(std::uint64_t addr) { return addr & ~(kLineSize - 1); }

// Unicorn calls that cannot fail on a well-formed machine.
void check(uc_err err, const char *what);

// Page-aligned host memory of a known size (Memory.cpp). Freed buffers are kept per thread for
// reuse: a machine built per execution (kernel and trampoline scenarios) would otherwise fault in
// fresh zeroed pages for every region each time, since the allocator hands freed megabytes back
// to the system, and that cost more than running the execution.
struct HostDeleter {
  std::uint64_t size = 0;
  void operator()(std::uint8_t *p) const;
};
using HostBuffer = std::unique_ptr<std::uint8_t, HostDeleter>;
HostBuffer allocHost(std::uint64_t size); // contents undefined

// Per-byte flags of text.
enum TextFlag : std::uint8_t {
  kSiteByte = 1,   // inside a watched patch site
  kFreedByte = 2,  // freed trampoline memory
  kWritten = 4,    // stored into by the patcher at least once
  kSharedRead = 8, // the first byte of an instruction that reads published data (watchSharedRead)
};

struct TextRegion {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  HostBuffer canonical;
  std::vector<HostBuffer> views; // one per CPU, mapped into that CPU's engine
  // Per CPU, per line: a bit per byte of that CPU's view that a block its engine translated may
  // hold (Machine::Impl::noteTranslated; sim/README.md, "Removals Unicorn need not make"); kept
  // with the views, as the translations are.
  std::vector<std::vector<std::uint64_t>> translated;
  HostBuffer flags;                      // TextFlag per byte
  std::vector<std::uint8_t> lineWatched; // per 64-byte line: a site, written text or trampolines
  // Lines whose canonical bytes, view bytes, flags or watched mark changed since the machine last
  // matched a snapshot (Snapshot.cpp): restoring that snapshot rewrites only these. Every writer
  // of the fields above calls touch().
  std::vector<std::uint8_t> lineDirty;
  std::vector<std::uint32_t> dirtyLines;
  // What the region was mapped with (its bytes; poison after them), and the lines whose canonical
  // bytes, view bytes or flags may differ from that since: a machine that takes the region over
  // from a destroyed one (EnginePool.cpp) rewrites only these. Marked by touch() and by restores.
  std::vector<std::uint8_t> init;
  std::vector<std::uint8_t> lineChanged;
  std::vector<std::uint32_t> changedLines;
  // Lines of a taken-over region whose views may still hold the last machine's bytes
  // (Machine::Impl::settleViews).
  std::vector<std::uint32_t> pendingViews;
  bool contains(std::uint64_t a) const { return a - base < size; }
  void markChanged(std::uint64_t line) {
    if (!lineChanged[line]) {
      lineChanged[line] = 1;
      changedLines.push_back(static_cast<std::uint32_t>(line));
    }
  }
  void touch(std::uint64_t offset, std::uint64_t length) {
    if (length == 0)
      return;
    for (std::uint64_t l = offset / kLineSize; l <= (offset + length - 1) / kLineSize; ++l) {
      if (!lineDirty[l]) {
        lineDirty[l] = 1;
        dirtyLines.push_back(static_cast<std::uint32_t>(l));
      }
      markChanged(l);
    }
  }
  void clearDirty() {
    for (std::uint32_t l : dirtyLines)
      lineDirty[l] = 0;
    dirtyLines.clear();
  }
};

struct DataRegion {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  HostBuffer memory;
};

struct Site {
  std::uint64_t addr = 0;
  std::uint32_t size = 0;
  std::vector<arch::Bytes> allowed;
};

// A saved register image (a task's, or a snapshot's per engine) is a whole uc_context as
// uc_context_alloc made it: Unicorn's header, then the CPU's state. Unicorn saves into it, restores
// from it and reads its registers in place (uc_context_restore and uc_context_reg_read only read
// it), so no image is copied through a scratch context.
inline uc_context *savedContext(const std::vector<std::uint8_t> &image) {
  return reinterpret_cast<uc_context *>(const_cast<std::uint8_t *>(image.data()));
}

struct TaskRecord {
  TaskInfo info;
  std::vector<std::uint8_t> regs;  // a uc_context image while not running
  bool voluntarilyOff = true;      // off-CPU after a voluntary switch (or never run): quiescent
  std::uint64_t lastQuiescent = 0; // 1 + index of the event of its last quiescent state
  // In a timer interrupt's handler (Interrupts.cpp): the registers it interrupted, restored by
  // ftsim_hc_irq_return.
  bool inIrq = false;
  std::vector<std::uint8_t> irqRegs;
};

struct CpuState {
  std::uint64_t pc = 0;
  int current = -1;
  std::vector<int> runqueue;
  unsigned runnable = 0;
  bool ipiPending = false;
  bool inUser = false;       // between UserEnter and KernelEntry
  bool syncDeferred = false; // deferSyncInUser: a sync owed at the next KernelEntry
  bool halfFetched = false;
  // The running task's regions (Regions.cpp), read from its registers and thread area after every
  // event of this CPU: interrupts enabled (x86 EFLAGS.IF, powerpc MSR[EE]) and its preempt count.
  // No task: interrupts on, count 0.
  bool irqsOn = true;
  std::uint32_t preemptCount = 0;
  // Interrupts held off by the machine itself (setInterruptsEnabled: an exception entry that
  // runs a kernel handler with IF clear), whatever the task's registers say.
  bool irqsOff = false;
  bool takesInterrupts() const { return irqsOn && !irqsOff; }
  bool preemptible() const { return takesInterrupts() && preemptCount == 0; }
  std::uint64_t switches = 0;
  std::set<std::uint64_t> dirtyLines; // line model: view lines behind
  StaleHistory history;               // stale model: granule values since sync
  bool pending() const { return !dirtyLines.empty() || !history.empty(); }
};

struct State {
  std::vector<CpuState> cpus;
  std::vector<TaskRecord> tasks;
  std::vector<EventRecord> log; // empty unless config.keepLog
  std::uint64_t eventCount = 0; // events executed or noted, recorded or not
  std::vector<Decision> decisions;
  std::vector<Finding> findings;
  std::vector<std::string> publishNames;
  std::map<std::uint64_t, Site> sites;
  std::uint64_t storesDone = 0;
  std::uint64_t stepped = 0;
  std::uint64_t moduleNext = 0;
};

// How a CPU's engine ends its starts (Engines.cpp): by a code hook called before every instruction,
// alone (every instruction a step) or beside watched lines' checks (fast mode), or by a hook called
// before every translated block, steps ending by the trace flag (fast mode on x86: BlockRuns.cpp).
enum class EngineHooks : std::uint8_t { Steps, Instructions, Blocks };

// A translated block's instruction count as last decoded (BlockRuns.cpp); addr 1: none.
struct BlockCount {
  std::uint64_t addr = 1;
  std::uint32_t size = 0;
  std::uint32_t instructions = 0;
  // Where its last instruction always goes, a direct call or jump (GuestAbi::directTarget).
  bool hasTarget = false;
  std::uint64_t target = 0;
};

// The counts of the blocks a CPU's runs entered, in a direct-mapped table, and the lines their
// bytes lie in, as a 256-bit summary (a line's bit: its number modulo 256): a rewrite of bytes in
// lines no counted block holds (a site's, mostly) need not look through the table.
struct BlockCounts {
  std::array<BlockCount, 256> slots{};
  std::array<std::uint64_t, 4> lines{};
};

struct CpuRuntime;

// What the block hook reads on its common path, a loop (BlockRuns.cpp), in one place it reaches
// from its user pointer: the block the run may enter again without a look (addr 1: none; set only
// while the run is free and that block is clean), its instruction count, the run's budget and the
// CPU to report anything else to. It stays with the engine when a machine adopts it
// (EnginePool.cpp), and only the CPU changes.
struct BlockGate {
  std::uint64_t addr = 1;
  std::uint32_t size = 0;
  std::uint32_t instructions = 0;
  std::uint64_t budget = 0;
  CpuRuntime *cpu = nullptr;
};

// Per-CPU runtime: the engine and what its hooks report during one uc_emu_start.
struct CpuRuntime {
  Machine::Impl *machine = nullptr;
  unsigned index = 0;
  uc_engine *uc = nullptr;
  uc_context *scratch = nullptr;
  uc_context *pristine = nullptr; // the registers of the engine as opened (EnginePool.cpp)
  // The hooks every engine of its kind has (traps, faults, the code hooks: addEngineHooks), which
  // stay with the engine when a machine adopts it (EnginePool.cpp), and the watched data's.
  std::vector<uc_hook> hooks;
  std::vector<uc_hook> dataHooks;
  // The block hook (EngineHooks::Blocks) and its gate. Both stay with the engine when a machine
  // adopts it (EnginePool.cpp): Unicorn 2.0.1 calls a lone block hook directly from the blocks it
  // translated, with the user pointer it was added with, and those translations are kept.
  uc_hook blockHook = 0;
  std::unique_ptr<BlockGate> blockGate;
  std::uint64_t budget = 0;    // instructions this start may still run (onCode; a run by blocks's
                               // is its gate's while Unicorn runs)
  std::uint64_t clearLine = 1; // a line no instruction of which needs a step (onCode); 1: none
  bool freeRunning = false;
  // Where the code hook (onCode, onStep) stopped the start, before the instruction at `stopPc`:
  // the engine's pc, known without asking Unicorn for it (a register read costs about 100 host
  // instructions).
  bool stoppedByCode = false;
  std::uint64_t stopPc = 0;
  std::int64_t intno = -1;
  bool memFault = false;
  std::uint64_t memFaultAddr = 0;
  int memFaultType = 0;
  bool dataSeen = false;
  std::uint64_t dataAddr = 0;
  std::uint8_t dataSize = 0;
  bool dataWrite = false;
  std::uint64_t dataPc = 0; // the instruction that made the watched access
  // The trace flag as the machine last set it in the engine (GuestAbi::traceFlagReg); not known
  // after registers are loaded or the flags written.
  bool traceFlag = false;
  bool traceFlagKnown = false;
  // Runs by blocks (BlockRuns.cpp). A step's block entered (a second one is past the step); the
  // run stopped before a block it could not enter whole, and that block; the last block the hook
  // judged in this start (addr 1: none) and its verdict; the instruction counts of blocks.
  bool stepStarted = false;
  bool blockStop = false;
  std::uint64_t blockStart = 0, blockEnd = 0;
  BlockCount lastBlock;
  bool lastBlockClean = false;
  BlockCounts blockCounts;
  // Every block this engine's CPUs decoded, by address and bytes (BlockRuns.cpp): a count depends
  // on nothing else, so it outlives rewrites and machines, as the engine's translations do; a
  // block whose site toggles between a few states is decoded once per state. Emptied when full.
  std::unordered_map<std::string, BlockCount> decodedBlocks;
};

struct DataWatch {
  std::uint64_t addr = 0;
  std::uint32_t size = 0;
};

// The block hook of EngineHooks::Blocks engines (BlockRuns.cpp).
void onBlock(uc_engine *uc, std::uint64_t address, std::uint32_t size, void *user);

// Closes `cpu`'s engine and frees its contexts (Engines.cpp).
void closeUnicorn(CpuRuntime &cpu);

// The engines a destroyed machine left for the next machine of its thread (EnginePool.cpp), with
// the host buffers they map.
struct SpareEngines {
  const arch::Arch *arch = nullptr;
  unsigned cpus = 0;
  EngineHooks hooks = EngineHooks::Steps; // a machine adopts engines translated with its hooks
  // The machine's runtimes whole: the engines' code hooks hold pointers to them. Their data hooks
  // are still to delete.
  std::vector<CpuRuntime> engines;
  struct Text {
    std::uint64_t base = 0, size = 0;
    std::vector<HostBuffer> views; // one per CPU, mapped into that CPU's engine
    std::vector<std::vector<std::uint64_t>> translated; // TextRegion::translated
    HostBuffer canonical, flags;                        // as the last machine left them
    std::vector<std::uint8_t> init;                     // TextRegion::init
    std::vector<std::uint32_t> changedLines;            // TextRegion::changedLines
  };
  struct Data {
    std::uint64_t base = 0, size = 0;
    HostBuffer memory; // mapped into every engine
  };
  std::vector<Text> text;
  std::vector<Data> data;
  std::uint64_t machines = 0; // that used the engines
  std::uint64_t restores = 0; // since the engines were opened
  void close();               // the engines closed, the buffers freed
};

class PatcherAborted {};

struct PatcherRuntime {
  std::unique_ptr<Fiber> fiber; // made by the first startPatcher, reused by every later one
  bool alive = false;
  bool abort = false;
  std::exception_ptr error;
  PatcherState state = PatcherState::None;
  std::uint64_t storeAddr = 0;
  arch::Bytes storeBytes;
  std::string publishWhat;
  std::size_t publishNameHint = 0; // the index the last publication's name had (RunLoop.cpp)
  const std::function<void()> *publishWrite = nullptr;
  // publishWhile(): whether to publish again after this publication, and how many more at most.
  const std::function<bool()> *publishAgain = nullptr;
  std::uint64_t publishesLeft = 0;
  std::uint64_t publishDataAddr = 0; // publishAccess(): the access's footprint
  std::uint8_t publishDataSize = 0;
  bool publishDataWrite = false;
  std::uint64_t spinAddr = 0; // spinUntilChanged(): the bytes and their value at the call
  std::vector<std::uint8_t> spinValue;
  std::uint64_t graceStart = 0;
  std::vector<std::uint64_t> switchesAtStart;
};

} // namespace ftsim::sim

namespace ftsim::sim {

class CpuGuestContext;

struct Machine::Impl {
  Impl(Machine &owner, const arch::Arch &arch, MachineConfig config);
  ~Impl();

  Machine &self;
  const arch::Arch &arch;
  const GuestAbi &abi;
  const arch::Endian endian; // the guest's byte order, read once (preempt counts, every event)
  MachineConfig config;
  unsigned maxInsn = 0;
  std::size_t contextSize = 0;
  // The fetch model's answers, read once (stepKind asks at every step).
  bool splitsFetchAtLines = false;
  bool stepsOnly = false; // quantum 1 and no split fetches: every instruction is a Step
  // Fast mode steps by the trace flag (GuestAbi::traceFlagReg; MachineConfig::traceFlagSteps).
  // Not when every instruction is a step: translations are then reused from step to step, and the
  // trap after each costs more than Unicorn's count (sim/README.md, "Steps by the trace flag").
  bool traceSteps = false;
  // How far past the next instruction Unicorn leaves the pc after a trace-flag step (GuestAbi.h).
  std::uint64_t traceSkew = 0;
  EngineHooks engineHooks = EngineHooks::Steps;
  StoreReach othersReach = StoreReach::AtOnce;

  State state;
  std::vector<CpuRuntime> cpus; // sized once, or taken over with the engines: hooks point into it
  std::vector<TextRegion> text;
  std::vector<DataRegion> data;
  TextRegion *lastText = nullptr;
  // The snapshot (Snapshot::Data::id) the text matches outside its regions' dirty lines; 0: none.
  std::uint64_t textBaseline = 0;

  std::map<std::uint64_t, GuestHypercall> builtinHypercalls;
  std::map<std::uint64_t, arch::Hypercall> hypercalls;
  arch::TrapHandler trapHandler;
  std::uint64_t exitStub = 0;
  std::uint64_t irqReturnStub = 0;
  std::uint64_t timerHandler = 0; // setTimerHandler: 0 when timer interrupts run no guest code
  PatcherRuntime patcher;
  // The CPU whose event is executing (a host handler it ran may allocate or free text), -1
  // between events.
  int eventCpu = -1;
  std::vector<std::uint8_t *> threadHost; // per task: its thread area in host memory
  std::vector<DataWatch> dataWatches;     // every watchData range, hooked in every engine
  std::uint64_t restoresSinceRenewal = 0;
  std::uint64_t engineRenewals = 0;

  // The engines (Engines.cpp).
  void openEngine(CpuRuntime &cpu);
  void addEngineHooks(CpuRuntime &cpu);
  void renewEngines();
  void reopenEngines(); // registers kept, translations and hooks anew
  void hookData(CpuRuntime &cpu, const DataWatch &w);
  // The engine pool (EnginePool.cpp): the engines a destroyed machine left on this thread, taken
  // over at construction; their mappings taken over region by region; the rest unmapped before
  // the machine first runs or snapshots (dropUnadopted).
  std::unique_ptr<SpareEngines> adopted;
  bool enginesAdopted = false;
  // Some region's pendingViews are not settled yet (EnginePool.cpp).
  bool viewsPending = false;
  std::uint64_t machinesOnEngines = 0; // before this one
  bool adoptEngines();
  bool adoptText(TextRegion &r, std::span<const std::uint8_t> bytes);
  bool adoptData(DataRegion &r);
  void dropAdopted(std::uint64_t addr, std::uint64_t size);
  void dropUnadopted();
  // Every pending view line rewritten to the canonical bytes, translations removed only where the
  // bytes differ; before anything runs or reads the views (EnginePool.cpp).
  void settleViews();
  void releaseEngines();

  // Memory.
  void checkFree(std::uint64_t addr, std::uint64_t size) const;
  // A new region's canonical bytes (poison, then `bytes`) and flags; one line of them back to that.
  void initText(TextRegion &r, std::span<const std::uint8_t> bytes);
  void initLine(TextRegion &r, std::uint64_t line);
  void addTextRegion(std::uint64_t addr, std::span<const std::uint8_t> bytes,
                     std::uint64_t minSize);
  void addDataRegion(std::uint64_t addr, std::uint64_t size, std::span<const std::uint8_t> init);
  // Inline: looked up at every step, mostly in the region of the last lookup.
  TextRegion *textAt(std::uint64_t addr) {
    if (lastText && lastText->contains(addr)) [[likely]]
      return lastText;
    return findText(addr);
  }
  TextRegion *findText(std::uint64_t addr); // and remembers it in lastText
  // The host bytes of guest data [addr, addr+size) when one data region holds them all, else null.
  std::uint8_t *dataHost(std::uint64_t addr, std::uint64_t size);
  std::uint8_t *threadAreaHost(int task); // its preempt count's 4 bytes
  const TextRegion *textAt(std::uint64_t addr) const;
  TextRegion *textRange(std::uint64_t addr, std::uint64_t size);
  bool lineWatchedAt(std::uint64_t addr);
  bool needsStep(unsigned cpu, std::uint64_t pc);
  // Whether an instruction at pc would lie in a watched line (needsStep without the CPU's pending
  // stale-fetch state).
  bool watchedInstructionAt(std::uint64_t pc);
  // Whether an instruction at pc in `r` may fetch a byte the patcher stored into outside a watched
  // site (a step over it is then a shared read: the store and the fetch do not commute).
  // Inline: the lines' watched marks first, as most steps lie in unwatched lines.
  bool fetchesWrittenText(const TextRegion &r, std::uint64_t pc) const {
    const std::uint64_t off = pc - r.base;
    const std::uint64_t end = std::min<std::uint64_t>(r.size, off + maxInsn);
    if (!r.lineWatched[off / kLineSize] && !r.lineWatched[(end - 1) / kLineSize])
      return false;
    return writtenOutsideSites(r, off, end);
  }
  bool writtenOutsideSites(const TextRegion &r, std::uint64_t off, std::uint64_t end) const;
  void watchLines(std::uint64_t addr, std::uint64_t size);

  // Registers and tasks.
  // Registers as the guest has them: the trace flag the machine steps with is never in them.
  std::uint64_t readReg(unsigned cpu, int id) const;
  std::uint64_t guestValue(int id, std::uint64_t v) const {
    return id == abi.traceFlagReg ? v & ~abi.traceFlagBit : v;
  }
  void setTraceFlag(unsigned cpu, bool on);
  void writeReg(unsigned cpu, int id, std::uint64_t value);
  void saveRegs(unsigned cpu, std::vector<std::uint8_t> &out);
  void loadRegs(unsigned cpu, const std::vector<std::uint8_t> &in);
  int nextTask(unsigned cpu) const;
  // Regions (Regions.cpp).
  // Inline: read after every step.
  std::uint32_t readPreemptCount(int task) {
    const auto t = static_cast<std::size_t>(task);
    if (t < threadHost.size() && threadHost[t]) [[likely]]
      return static_cast<std::uint32_t>(
          arch::loadInteger(endian, std::span<const std::uint8_t>(threadHost[t], 4)));
    return readPreemptCountFirst(task);
  }
  std::uint32_t readPreemptCountFirst(int task); // finds the task's thread area first
  void writePreemptCount(int task, std::uint32_t count);
  void refreshRegions(unsigned cpu);
  // Only the preempt count: after a step that cannot change the interrupt flag (and did not trap
  // or fault), whose task is still the CPU's.
  void refreshPreemptCount(unsigned cpu) {
    CpuState &cs = state.cpus[cpu];
    if (cs.current >= 0)
      cs.preemptCount = readPreemptCount(cs.current);
  }
  // Marks `rec` when the CPU's interrupt flag or preempt count changed (inline: every event).
  void noteRegionChange(unsigned cpu, EventRecord &rec, bool irqsBefore,
                        std::uint32_t countBefore) {
    const CpuState &cs = state.cpus[cpu];
    if (cs.irqsOn != irqsBefore || cs.preemptCount != countBefore) [[unlikely]]
      markRegionChange(cs, rec);
  }
  static void markRegionChange(const CpuState &cs, EventRecord &rec);
  void switchTo(unsigned cpu, int next);
  void stopTask(unsigned cpu, TaskState why);
  // Interrupt context (Interrupts.cpp): false when the entry faulted (no room on the stack).
  bool enterInterrupt(unsigned cpu, EventRecord &rec);
  void returnFromInterrupt(unsigned cpu, EventRecord &rec, std::uint64_t trapAddr);

  // Instruction views and the fetch model.
  // Unicorn's translations of [lo, hi) in `cpu`'s engine, and the blocks counted there, after its
  // view changed.
  void removeTranslations(unsigned cpu, std::uint64_t lo, std::uint64_t hi);
  // Runs by blocks: the bytes of a block the hook saw, which its engine translated
  // (TextRegion::translated); size 0 (not known): every byte of text.
  void noteTranslated(unsigned cpu, std::uint64_t addr, std::uint32_t size);
  bool mayHoldTranslation(unsigned cpu, std::uint64_t lo, std::uint64_t hi);
  bool rewriteView(unsigned cpu, TextRegion &r, std::uint64_t addr, const std::uint8_t *bytes,
                   std::size_t n);
  void storeIntoView(unsigned cpu, TextRegion &r, std::uint64_t addr,
                     std::span<const std::uint8_t> bytes);
  void markLinesBehind(unsigned cpu, std::uint64_t addr, std::uint64_t size);
  void rememberGranules(unsigned cpu, const TextRegion &r, std::uint64_t addr,
                        std::span<const std::uint8_t> bytes);
  void refreshLine(unsigned cpu, std::uint64_t line);
  void serialise(unsigned cpu);
  void chooseStaleBytes(unsigned cpu, std::uint64_t pc, Scheduler &scheduler);
  void prepareFetch(unsigned cpu, std::uint64_t pc, bool secondHalf, Scheduler &scheduler);
  std::uint32_t decide(Scheduler &scheduler, const DecisionPoint &point);

  // Events.
  bool patcherHoldsCpu(unsigned cpu) const;
  // Per CPU an IPI, a step, a timer interrupt and an interrupt handler; the patcher's event.
  static constexpr std::size_t kMaxEnabled = 8 * 4 + 1;
  std::size_t enabledEvents(EventChoice *out); // `out` holds kMaxEnabled
  EventKind stepKind(unsigned cpu);
  void appendRecord(const EventRecord &rec); // counts it; records it when config.keepLog
  EventRecord beginRecord(EventKind kind, unsigned cpu);
  static void setRecordBytes(EventRecord &rec, const std::uint8_t *bytes, std::size_t n);
  void addFinding(FindingKind kind, const EventRecord &rec, std::uint64_t pc, std::uint64_t addr,
                  arch::Bytes bytes, std::string message);
  arch::Bytes fetchedBytes(unsigned cpu, std::uint64_t pc, std::size_t max) const;
  arch::Bytes firstInstruction(unsigned cpu, std::uint64_t pc) const;
  void checkWatchedFetch(unsigned cpu, EventRecord &rec, TextRegion &r, std::uint64_t pc,
                         std::uint8_t flags);
  void guestFault(unsigned cpu, EventRecord &rec, std::uint64_t pc, std::string message);
  std::string faultMessage(uc_err err, const CpuRuntime &cpu) const;
  void handleTrap(unsigned cpu, EventRecord &rec, std::uint64_t pcAfter, std::int64_t intno);
  // Both return whether the event was a plain step (RunLoop.cpp): one instruction that changed no
  // state the enabled events depend on, so that they are the same after it.
  bool execute(unsigned cpu, EventRecord &rec, std::uint64_t count, Scheduler &scheduler);
  // One instruction by the trace flag; `window`: the bytes at pc (GuestAbi's predicates).
  uc_err traceStep(unsigned cpu, std::uint64_t pc, const std::uint8_t *window);
  // Runs by blocks (BlockRuns.cpp): up to `count` instructions from pc, stopping before watched
  // text; whether a block's instructions may run unwatched; a block's instruction count and
  // where its last instruction goes, decoded once.
  uc_err runByBlocks(unsigned cpu, std::uint64_t pc, std::uint64_t count);
  bool blockClean(std::uint64_t addr, std::uint32_t size);
  const BlockCount &countBlock(unsigned cpu, std::uint64_t addr, std::uint32_t size);
  void applyStore();
  bool executeEvent(const EventChoice &choice, Scheduler &scheduler);
  // An Alloc/Free note: the patcher's when it runs, else that of the CPU whose event (a host
  // handler) made it, with its task.
  void logNote(EventKind kind, std::uint64_t addr, std::uint64_t size);
  RunResult run(Scheduler &scheduler, std::uint64_t maxEvents);

  // The patcher (Patcher.cpp).
  bool inPatcher() const;
  // Guest data bytes (not text); false when [addr, addr+out.size()) is not inside one region.
  bool readData(std::uint64_t addr, std::span<std::uint8_t> out) const;
  void startPatcher(std::function<void(arch::MachinePort &)> body);
  void resumePatcher();
  void afterPatcherRan();
  void yieldToMain();
  bool waitOver() const;
  // Whether the patcher ran (inline: after every event, mostly with no patcher).
  bool resumeWaitingPatcher() { return patcher.alive && resumeWaitingPatcherNow(); }
  bool resumeWaitingPatcherNow();
  bool publishAgain(); // RunLoop.cpp
  void abortPatcher();
  static std::string_view patcherStateName(PatcherState s);
};

class CpuGuestContext final : public arch::GuestContext {
public:
  CpuGuestContext(Machine::Impl &m, unsigned cpu) : m_(m), cpu_(cpu) {}
  unsigned cpu() const override;
  int task() const override;
  std::uint64_t pc() const override;
  void setPc(std::uint64_t pc) override;
  std::uint64_t sp() const override;
  void setSp(std::uint64_t sp) override;
  std::uint64_t reg(int ucRegId) const override;
  void setReg(int ucRegId, std::uint64_t value) override;
  bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const override;
  bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) override;

private:
  Machine::Impl &m_;
  unsigned cpu_;
};

} // namespace ftsim::sim
