// Booting the simulated kernel, in the order Linux does it: the image and its modules on the
// machine, the generated trampolines mapped below kernel text, the arch patcher over the named
// patch protocol, the ftrace core, and ftrace_init() turning every site into a nop.

#include "ftsim/kernel/Kernel.h"

#include "ftsim/arch/Error.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/model/ProtocolPatcher.h"

#include <memory>
#include <vector>

namespace ftsim::kernel {
namespace {

// Modules near kernel text: the per-ops trampoline area ends this far below the fixed trampolines.
constexpr std::uint64_t kNearModuleGap = 0x100000;
constexpr std::uint64_t kFtraceDataSize = 0x1000;

// The generated trampolines of the last few requests on this thread. Their code is made once and
// every method after that is const, so kernels booted with the same request share it: an
// engine-level search boots a kernel per execution, and generating x86-64's trampolines again was
// 3% of op-func-residual-race's search (perf record).
std::shared_ptr<const arch::FtraceTrampolines> trampolinesFor(const arch::Arch &arch,
                                                              const arch::TrampolineRequest &r) {
  struct Made {
    const arch::Arch *arch;
    arch::TrampolineRequest request;
    std::shared_ptr<const arch::FtraceTrampolines> trampolines;
  };
  constexpr std::size_t kKept = 4;
  thread_local std::vector<Made> made;
  for (const Made &m : made)
    if (m.arch == &arch && m.request == r)
      return m.trampolines;
  std::shared_ptr<const arch::FtraceTrampolines> t = arch::makeFtraceTrampolines(arch, r);
  if (made.size() == kKept)
    made.erase(made.begin());
  made.push_back({&arch, r, t});
  return t;
}

} // namespace

void Kernel::placeModuleArea(std::uint64_t trampolineBase) {
  if (image_.arch->modulesNearKernelText() && !config_.machine.moduleBase) {
    // module_alloc() of arch/powerpc/kernel/module.c (2ec13df16704 "powerpc/modules: Load modules
    // closer to kernel text", v5.13): first try within 32 MiB below _etext, so that `bl` reaches
    // without branch trampolines. Per-ops trampolines come from there, below the fixed ones (which
    // stand in for ftrace_entry.S, part of kernel text). A module image loaded far away (the
    // ppc32-module at 0xb0000000) still needs its long-branch stubs.
    config_.machine.moduleBase =
        trampolineBase - kNearModuleGap - ((config_.machine.moduleSize + 0xfff) & ~0xfffull);
  }
}

void Kernel::loadModules() {
  const arch::Arch &isa = *image_.arch;
  for (const std::string &path : config_.modules) {
    auto mod = std::make_unique<LoadedModule>(LoadedModule{{}, arch::loadImage(path)});
    if (mod->image.arch != &isa)
      fatal("module {} is a {} image, not {}", path, mod->image.arch->name(), isa.name());
    machine_->loadImage(mod->image);
    mcountLocs_.insert(mcountLocs_.end(), mod->image.mcountLocs.begin(),
                       mod->image.mcountLocs.end());
    modules_.push_back(std::move(mod));
  }
}

void Kernel::mapTrampolines(std::uint64_t base) {
  // Site flavour: which profiling hook the compiler called.
  const arch::ImageSymbol *fentry = image_.findSymbol("__fentry__");
  flavour_ = fentry && fentry->addr == image_.mcountAddr ? arch::SiteFlavour::Fentry
                                                         : arch::SiteFlavour::Mcount;
  arch::TrampolineRequest request;
  request.base = base;
  request.flavour = flavour_;
  request.splitListFunction = config_.splitListFunction;
  // x86-64 mcount sites with v6.x's graph entry are a FatalError of the target's generator.
  request.graphViaOps = config_.release.graphViaOps;
  // ftrace's data the trampolines load: function_trace_op, then one word per ops it can point at
  // (the ops' guest address; Kernel::guestOps).
  ftraceData_ = base - kFtraceDataSize;
  // Not a watched data range (every access in every engine would go through a hook, and runs by
  // blocks would stop): the loads of function_trace_op are marked instead, below.
  machine_->mapData(ftraceData_, kFtraceDataSize);
  request.functionTraceOp = ftraceData_;
  trampolines_ = trampolinesFor(*image_.arch, request);
  const arch::TrampolineCode &code = trampolines_->code();
  machine_->mapText(code.base, code.bytes);
  // ftrace_caller's and ftrace_regs_caller's loads of function_trace_op read what a publication
  // writes (setFunctionTraceOp): each is a step and a shared read, so the visible-event search
  // orders it against the publication wherever the load lies (its line need not hold a site).
  for (std::uint64_t load : code.opLoads)
    machine_->watchSharedRead(load);
  stubs_ = std::make_unique<model::TraceFunctionStubs>(
      model::TraceFunctionAddresses{code.ftraceStub, code.listFuncStub, code.callbackStubs});
}

void Kernel::makePatcher() {
  const arch::Arch &isa = *image_.arch;
  const arch::TrampolineCode &code = trampolines_->code();
  protocol_ = arch::makePatchProtocol(isa, config_.protocol.empty() ? arch::defaultProtocol(isa)
                                                                    : config_.protocol);
  // The target's SiteHooks: ftrace_init_nop for the image's call-site layout, calls through
  // module long-branch stubs, range errors. ftrace_call's target for each trace function comes
  // from the core's table of stubs.
  siteHooks_ = isa.makeSiteHooks({&image_, protocol_.get(), code.ftraceCaller,
                                  code.ftraceRegsCaller, config_.release.ppc32InitNop});
  // Each record site's exact legal states (SiteTargets.h), told of every all-CPU sync through
  // the port the patcher and the core use, and published to the machine once sites are watched.
  siteTargets_ = std::make_unique<SiteTargets>(
      [this, size = isa.siteSize()](std::uint64_t ip, const std::vector<arch::Bytes> &states) {
        if (watching_)
          machine_->watchSite(ip, size, states);
      },
      [this](std::uint64_t ip, std::size_t size) {
        arch::Bytes bytes(size);
        if (!machine_->readText(ip, bytes))
          bytes.clear();
        return bytes;
      });
  syncPort_ = makeSyncObservingPort(*machine_, [this] { siteTargets_->contextSynchronised(); });
  // The ISA's live-patching rule watches the protocol's writes; boot's are not live.
  const arch::LivePatchingRule *rule = isa.livePatchingRule();
  if (config_.livePatchingRule && rule) {
    rulePort_ = rule->watch(*syncPort_);
    rulePort_->setLive(false);
  }
  arch::MachinePort &port = rulePort_ ? *rulePort_ : *syncPort_;
  protocolPatcher_ = std::make_unique<model::ProtocolPatcher>(
      port, *protocol_, *siteHooks_,
      [stubs = stubs_.get()](const model::TraceFunction &function) {
        return stubs->addressOf(function);
      },
      std::vector<std::uint64_t>{code.ftraceCall, code.ftraceRegsCall});
  model::ArchPatcher *inner = protocolPatcher_.get();
  if (config_.patcherMutation) {
    mutatedPatcher_ = config_.patcherMutation(*inner);
    inner = mutatedPatcher_.get();
  }
  patcher_ = makeTargetCheckedPatcher(
      *inner, *siteTargets_, [this](const model::DynFtrace &rec) { return core_->addrNew(rec); });
  finalizeModules();
}

std::vector<std::string> Kernel::livePatchingFindings() const {
  return rulePort_ ? rulePort_->findings() : std::vector<std::string>{};
}

// The module loader's part (module_finalize_ftrace(); on powerpc mod->arch.tramp / tramp_regs as
// long-branch stubs to ftrace_caller / ftrace_regs_caller), written before the module's text is
// live; the records of the module then reach them through their arch datum (rec->arch.mod).
void Kernel::finalizeModules() {
  for (const auto &mod : modules_) {
    arch::ModuleLoad load = siteHooks_->loadModule(mod->image);
    mod->name = std::move(load.name);
    for (const arch::TextWrite &write : load.writes)
      machine_->pokeText(write.addr, write.bytes);
  }
}

void Kernel::makeCore() {
  const arch::TrampolineCode &code = trampolines_->code();
  model::FtraceConfig ftrace;
  ftrace.patcher = patcher_.get();
  ftrace.port = rulePort_ ? static_cast<arch::MachinePort *>(rulePort_.get()) : syncPort_.get();
  ftrace.freePolicy = config_.freePolicy;
  ftrace.records = *config_.release.records;
  ftrace.functionTraceOpChanged = [this](model::FtraceOps &op) { setFunctionTraceOp(op); };
  if (config_.opsTrampolines)
    enableOpsTrampolines(ftrace);
  ftrace.addresses = {image_.mcountAddr, code.ftraceCaller, code.ftraceRegsCaller};
  // ftrace_graph_call as generated is the "graph off" state: `jmp ftrace_stub` on x86-64 (whose
  // ret returns from ftrace_caller), `b ftrace_graph_stub` on ppc32 (whose bctr goes back into the
  // traced function: a `b ftrace_stub` there would return to the parent and skip the function).
  // A release whose graph tracer is an ops has no such site (GraphCallSite 0).
  if (code.ftraceGraphCall) {
    const auto graphAt =
        code.bytes.begin() + static_cast<std::ptrdiff_t>(code.ftraceGraphCall - code.base);
    ftrace.graphCall = {code.ftraceGraphCall, code.ftraceGraphCaller,
                        arch::Bytes(graphAt, graphAt + code.siteSize)};
  }
  const model::Symbolizer imageSymbols = model::imageSymbolizer(image_);
  ftrace.symbolizer = [this, imageSymbols](std::uint64_t addr) -> std::optional<model::SymbolInfo> {
    for (const arch::ImageSymbol &s : trampolines_->code().symbols)
      if (addr >= s.addr && addr < s.addr + s.size)
        return model::SymbolInfo{s.name, s.addr, s.size, {}};
    // ftrace_add_trampoline_to_kallsyms(): "ftrace_trampoline [__builtin__ftrace]"
    for (const OpsTrampoline &t : opsTrampolines_)
      if (addr >= t.addr && addr < t.addr + t.size)
        return model::SymbolInfo{"ftrace_trampoline", t.addr, t.size, "__builtin__ftrace"};
    if (const LoadedModule *mod = moduleAt(addr)) {
      std::optional<model::SymbolInfo> s = model::imageSymbolizer(mod->image)(addr);
      if (s)
        s->module = mod->name; // "mod_scale [ftsim_mod]"; rec->arch.mod at boot
      return s;
    }
    return imageSymbols(addr);
  };
  core_ = std::make_unique<model::FtraceCore>(std::move(ftrace));
  core_->setPre59338f754a55Order(config_.pre59338f754a55);
  core_->setPre405e1d834807(config_.pre405e1d834807);
}

// ftrace_init(): before any task runs, so every conversion is a plain read-verify-write.
void Kernel::bootFtrace() {
  model::BootOptions bootOptions = model::imageBootOptions(image_);
  bootOptions.mcountLocs = mcountLocs_;
  bootOptions.isKernelText = [this](std::uint64_t addr) {
    const arch::ImageSegment *segment = image_.segmentAt(addr);
    if (const LoadedModule *mod = moduleAt(addr))
      segment = mod->image.segmentAt(addr);
    return segment && segment->executable;
  };
  boot_ = core_->boot(bootOptions);
  if (!boot_.bugs.empty()) {
    std::string text;
    for (const auto &bug : boot_.bugs)
      text += bug.text();
    fatal("{}: ftrace boot failed:\n{}", image_.name, text);
  }
}

} // namespace ftsim::kernel
