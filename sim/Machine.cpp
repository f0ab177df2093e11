// The machine: construction (engines, hooks) and the public interface for building a scenario
// and observing it. Memory and the fetch model are in Memory.cpp, tasks in Tasks.cpp, traps and
// findings in Traps.cpp, the event loop in RunLoop.cpp, the patcher's side (MachinePort, the
// baton) in Patcher.cpp, snapshots in Snapshot.cpp.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/UnicornEngine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ftsim::sim {

void check(uc_err err, const char *what) {
  if (err != UC_ERR_OK)
    FTSIM_PANIC("{}: {}", what, uc_strerror(err));
}

// --- Construction --------------------------------------------------------------------------------

Machine::Impl::Impl(Machine &owner, const arch::Arch &a, MachineConfig c)
    : self(owner), arch(a), abi(guestAbi(a)), endian(a.endian()), config(c) {
  if (!arch.executable())
    fatal("architecture '{}' is not executable by the simulator", arch.name());
  if (config.cpus < 1 || config.cpus > 8)
    fatal("a machine has 1 to 8 CPUs, not {}", config.cpus);
  if (config.patcherCpu >= config.cpus)
    fatal("patcher CPU {} does not exist on a {}-CPU machine", config.patcherCpu, config.cpus);
  if (config.quantum < 1)
    fatal("the fast-mode quantum must be at least 1");
  if (!config.moduleBase)
    config.moduleBase = abi.moduleBase;
  if (!config.stackBase)
    config.stackBase = abi.stackBase;
  config.moduleSize = roundUp(config.moduleSize, kPage);
  config.stackSize = roundUp(config.stackSize, kPage);
  maxInsn = arch.maxInsnSize();
  splitsFetchAtLines = config.fetchModel->splitsFetchAtLines();
  stepsOnly = config.quantum == 1 && !splitsFetchAtLines;
  if (config.quantum > 1 && config.traceFlagSteps)
    if (const auto skew = traceStepSkew(arch)) { // TraceCalibration.cpp
      traceSteps = true;
      traceSkew = *skew;
    }
  engineHooks = config.quantum == 1 ? EngineHooks::Steps
                : traceSteps        ? EngineHooks::Blocks
                                    : EngineHooks::Instructions;
  othersReach = config.fetchModel->storeReach();
  state.cpus.resize(config.cpus);
  cpus.resize(config.cpus);
  for (unsigned i = 0; i < config.cpus; ++i) {
    cpus[i].machine = this;
    cpus[i].index = i;
  }
  if (config.machinesPerEngine == 0)
    fatal("machinesPerEngine must be at least 1");
  if (config.machinesPerEngine == 1 || !adoptEngines()) // EnginePool.cpp
    for (CpuRuntime &cpu : cpus)
      openEngine(cpu); // Engines.cpp
  contextSize = uc_context_size(cpus[0].uc);
  // Trampoline memory: text, poisoned, every line watched (trampolines are visible code).
  addTextRegion(config.moduleBase, {}, config.moduleSize);
  TextRegion &modules = text.back();
  std::fill(modules.lineWatched.begin(), modules.lineWatched.end(), 1);
  state.moduleNext = config.moduleBase;
}

Machine::Impl::~Impl() {
  abortPatcher();
  releaseEngines(); // EnginePool.cpp
}

// --- Machine: scenario building and observation --------------------------------------------------

namespace {
// The event log's buffer of the last machine this thread destroyed, for the next one it makes:
// engine-level harnesses boot a machine per execution, and a log of 100,000 events grown from
// empty each time spent a third of such a search in page faults and copies. At most one buffer a
// thread, as large as the longest log (max_events x sizeof(EventRecord)).
thread_local std::vector<EventRecord> spareLog;
} // namespace

Machine::Machine(const arch::Arch &arch, MachineConfig config)
    : impl_(std::make_unique<Impl>(*this, arch, config)) {
  if (impl_->config.keepLog && impl_->state.log.empty()) {
    impl_->state.log.swap(spareLog);
    impl_->state.log.clear();
  }
}

Machine::~Machine() {
  std::vector<EventRecord> &log = impl_->state.log;
  if (log.capacity() > spareLog.capacity()) {
    log.clear();
    spareLog.swap(log);
  }
}

const arch::Arch &Machine::arch() const { return impl_->arch; }
const MachineConfig &Machine::config() const { return impl_->config; }

void Machine::mapText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  impl_->addTextRegion(addr, bytes, 0);
}

void Machine::mapData(std::uint64_t addr, std::uint64_t size, std::span<const std::uint8_t> init) {
  impl_->addDataRegion(addr, size, init);
}

void Machine::loadImage(const arch::Image &image) {
  Impl &m = *impl_;
  if (image.arch != &m.arch)
    fatal("image '{}' is for {}, the machine is {}", image.name,
          image.arch ? image.arch->name() : "?", m.arch.name());
  for (const arch::ImageSegment &seg : image.segments) {
    const std::uint64_t base = seg.addr & ~(kPage - 1);
    std::vector<std::uint8_t> bytes(seg.addr - base, 0);
    for (std::size_t i = 0; seg.executable && i < bytes.size(); ++i)
      bytes[i] = m.abi.poison[i % m.abi.poison.size()];
    bytes.insert(bytes.end(), seg.bytes.begin(), seg.bytes.end());
    if (seg.executable)
      m.addTextRegion(base, bytes, 0);
    else
      m.addDataRegion(base, bytes.size(), bytes);
  }
  const std::pair<const char *, GuestHypercall> stubs[] = {
      {"ftsim_hc_schedule", GuestHypercall::Schedule},
      {"ftsim_hc_idle", GuestHypercall::Idle},
      {"ftsim_hc_user", GuestHypercall::User},
      {"ftsim_hc_exit", GuestHypercall::Exit},
      {"ftsim_hc_user_enter", GuestHypercall::UserEnter},
      {"ftsim_hc_kernel_entry", GuestHypercall::KernelEntry},
      {"ftsim_hc_irq_return", GuestHypercall::IrqReturn},
  };
  for (const auto &[name, which] : stubs)
    if (const arch::ImageSymbol *sym = image.findSymbol(name))
      bindHypercall(which, sym->addr);
}

void Machine::bindHypercall(GuestHypercall which, std::uint64_t stubAddress) {
  if (!impl_->textAt(stubAddress))
    fatal("hypercall stub at {:#x} is not in text", stubAddress);
  impl_->builtinHypercalls[stubAddress] = which;
  if (which == GuestHypercall::Exit)
    impl_->exitStub = stubAddress;
  if (which == GuestHypercall::IrqReturn)
    impl_->irqReturnStub = stubAddress;
}

void Machine::watchSite(std::uint64_t addr, std::uint32_t size,
                        std::vector<arch::Bytes> allowedStates) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, size);
  if (!r || size > 16)
    fatal("patch site {:#x}+{} is not inside text (or longer than 16 bytes)", addr, size);
  for (const arch::Bytes &s : allowedStates)
    if (s.size() != size)
      fatal("allowed state [{}] of site {:#x} is not {} bytes", arch::hexBytes(s), addr, size);
  // Watching the same site again replaces its allowed states (a new trampoline became a target).
  if (auto it = m.state.sites.find(addr); it != m.state.sites.end() && it->second.size == size) {
    it->second.allowed = std::move(allowedStates);
    return;
  }
  for (std::uint32_t i = 0; i < size; ++i) {
    if (r->flags.get()[addr - r->base + i] & kSiteByte)
      fatal("patch site {:#x}+{} overlaps another site", addr, size);
    r->flags.get()[addr - r->base + i] |= kSiteByte;
  }
  r->touch(addr - r->base, size);
  m.state.sites[addr] = Site{addr, size, std::move(allowedStates)};
  m.watchLines(addr, size);
}

void Machine::watchSharedRead(std::uint64_t addr) {
  Impl &m = *impl_;
  TextRegion *r = m.textRange(addr, 1);
  if (!r)
    fatal("shared read at {:#x} is not inside text", addr);
  r->flags.get()[addr - r->base] |= kSharedRead;
  r->touch(addr - r->base, 1);
  m.watchLines(addr, 1);
}

RunResult Machine::run(Scheduler &scheduler, std::uint64_t maxEvents) {
  impl_->dropUnadopted();
  impl_->settleViews();
  return impl_->run(scheduler, maxEvents);
}

std::span<const EventRecord> Machine::events() const { return impl_->state.log; }
std::uint64_t Machine::eventCount() const { return impl_->state.eventCount; }
std::span<const Decision> Machine::schedule() const { return impl_->state.decisions; }
std::span<const Finding> Machine::findings() const { return impl_->state.findings; }

std::string Machine::logText() const {
  std::string out;
  for (const EventRecord &e : impl_->state.log) {
    out += formatEvent(e);
    if (e.kind == EventKind::Publish)
      out += fmt::format(" ({})", publishName(e.detail));
    out += '\n';
  }
  for (const Finding &f : impl_->state.findings) {
    out += formatFinding(f);
    out += '\n';
  }
  return out;
}

std::string_view Machine::publishName(std::uint64_t id) const {
  const auto &names = impl_->state.publishNames;
  return id < names.size() ? std::string_view(names[id]) : std::string_view("?");
}

std::size_t Machine::taskCount() const { return impl_->state.tasks.size(); }

TaskInfo Machine::task(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->state.tasks.size())
    fatal("no task {}", id);
  return impl_->state.tasks[id].info;
}

std::uint64_t Machine::pc(unsigned cpu) const { return impl_->state.cpus.at(cpu).pc; }
std::uint64_t Machine::reg(unsigned cpu, int ucRegId) const { return impl_->readReg(cpu, ucRegId); }
std::uint64_t Machine::steppedInstructions() const { return impl_->state.stepped; }
std::uint64_t Machine::storesDone() const { return impl_->state.storesDone; }
bool Machine::stepsByTraceFlag() const { return impl_->traceSteps; }

arch::Bytes Machine::viewBytes(unsigned cpu, std::uint64_t addr, std::size_t size) const {
  const TextRegion *r = impl_->textAt(addr);
  if (!r || addr + size - r->base > r->size)
    fatal("viewBytes {:#x}+{} is not inside text", addr, size);
  impl_->settleViews();
  const std::uint8_t *v = r->views.at(cpu).get() + (addr - r->base);
  return arch::Bytes(v, v + size);
}

} // namespace ftsim::sim
