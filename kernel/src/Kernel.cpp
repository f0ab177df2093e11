// The simulated kernel's construction and its small services: symbols, workloads, the patcher,
// the clock. Boot is in KernelBoot.cpp, the trampolines' callbacks in Callbacks.cpp, per-ops
// trampolines in OpsTrampolines.cpp, the watched patch sites in PatchSites.cpp.

#include "ftsim/kernel/Kernel.h"

#include "ftsim/model/LinuxProfile.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::kernel {
namespace {

// The trampolines sit just below kernel text, well within a rel32 call of every site (as
// ftrace_64.S is part of the kernel's own text).
constexpr std::uint64_t kTrampolineGap = 0x10000;

} // namespace

Kernel::Kernel(arch::Image image, KernelConfig config)
    : image_(std::move(image)), config_(std::move(config)) {
  if (!image_.arch)
    fatal("image {} has no architecture", image_.name);
  const std::uint64_t trampolineBase =
      (image_.textStart() & ~std::uint64_t{0xfff}) - kTrampolineGap;
  placeModuleArea(trampolineBase);
  machine_ = std::make_unique<sim::Machine>(*image_.arch, config_.machine);
  machine_->loadImage(image_);
  mcountLocs_ = image_.mcountLocs;
  loadModules();
  mapTrampolines(trampolineBase);
  makePatcher();
  makeCore();
  setFunctionTraceOp(*core_->functionTraceOp()); // &ftrace_list_end
  bootFtrace();
  if (rulePort_)
    rulePort_->setLive(true); // from here on other CPUs run the text
  bindHypercalls();
  makeTraceFs();
}

Kernel::~Kernel() = default;

std::uint64_t Kernel::now() const { return machine_->eventCount(); }

const Kernel::LoadedModule *Kernel::moduleAt(std::uint64_t addr) const {
  for (const auto &mod : modules_)
    if (mod->image.segmentAt(addr))
      return mod.get();
  return nullptr;
}

std::uint64_t Kernel::symbolAddress(std::string_view name) const {
  for (const arch::ImageSymbol &s : trampolines_->code().symbols)
    if (s.name == name)
      return s.addr;
  if (const arch::ImageSymbol *s = image_.findSymbol(name))
    return s->addr;
  for (const auto &mod : modules_)
    if (const arch::ImageSymbol *s = mod->image.findSymbol(name))
      return s->addr;
  fatal("{}: no symbol {}", image_.name, name);
}

std::string Kernel::symbolName(std::uint64_t addr, bool withOffset) const {
  std::optional<model::SymbolInfo> symbol = core_->symbolize(addr);
  if (withOffset)
    return model::formatSymbolOffset(symbol, addr);
  return symbol ? symbol->name : fmt::format("{:#x}", addr);
}

int Kernel::addWorkload(std::string_view name, unsigned cpu, std::uint64_t seed) {
  const std::string symbol = fmt::format("workload_{}", name);
  const arch::ImageSymbol *entry = image_.findSymbol(symbol);
  if (!entry || !entry->function)
    fatal("{}: no workload '{}' (workloads: sched, mm, fs, boot, mixed, tight)", image_.name, name);
  return machine_->addTask({symbol, cpu, entry->addr, seed});
}

int Kernel::addIdleWorkload(std::string_view name, unsigned cpu, std::uint64_t seed) {
  const std::string symbol = fmt::format("workload_{}", name);
  const arch::ImageSymbol *entry = image_.findSymbol(symbol);
  if (!entry || !entry->function)
    fatal("{}: no workload '{}' (workloads: sched, mm, fs, boot, mixed, tight)", image_.name, name);
  return machine_->addTask({fmt::format("swapper/{}", cpu), cpu, entry->addr, seed, true});
}

void Kernel::patcher(std::function<void(Kernel &)> body) {
  machine_->startPatcher([this, body = std::move(body)](arch::MachinePort &) { body(*this); });
}

sim::RunResult Kernel::run(sim::Scheduler &scheduler, std::uint64_t maxEvents) {
  return machine_->run(scheduler, maxEvents);
}

std::int64_t Kernel::taskKey(const arch::GuestContext &cpu) const {
  return cpu.task() >= 0 ? cpu.task() : -1 - static_cast<std::int64_t>(cpu.cpu());
}

// In a timer interrupt's handler (sim/README.md, "Interrupt context"): hardirq, whose recursion
// bit is its own (trace_test_and_set_recursion()).
model::ContextLevel Kernel::contextLevel(const arch::GuestContext &cpu) const {
  return machine_->inInterrupt(cpu.cpu()) ? model::ContextLevel::Irq : model::ContextLevel::Normal;
}

model::TraceContext Kernel::contextOf(const arch::GuestContext &cpu) const {
  model::TraceContext c;
  c.cpu = cpu.cpu();
  if (cpu.task() >= 0) {
    c.pid = cpu.task() + 1;
    c.comm = machine_->task(cpu.task()).name.substr(0, 15); // TASK_COMM_LEN - 1
  } else {
    c.comm = "<idle>";
  }
  c.timestampNs = now() * config_.nsPerEvent;
  return c;
}

void applyLinuxProfile(KernelConfig &config, std::string_view profile, std::string_view isa) {
  const model::LinuxProfile &p = model::linuxProfileByName(profile);
  const std::string protocol(model::profileProtocol(p, isa));
  if (!config.protocol.empty() && config.protocol != protocol)
    fatal("--protocol {} is not Linux {}'s patch protocol on {} ({}): give one of them",
          config.protocol, p.name, isa, protocol);
  config.protocol = protocol;
  config.pre59338f754a55 = p.pre59338f754a55;
  config.pre405e1d834807 = p.pre405e1d834807;
  config.freePolicy = p.free;
  config.release = p.code;
}

} // namespace ftsim::kernel
