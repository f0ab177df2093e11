#include "ftsim/kernel/Kernel.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Ppc32Code.h"
#include "ftsim/arch/Ppc32Protocols.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/model/Ppc32Patcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ftsim::kernel {
namespace {

// The trampolines sit just below kernel text, well within a rel32 call of every site (as
// ftrace_64.S is part of the kernel's own text).
constexpr std::uint64_t kTrampolineGap = 0x10000;
// ppc32: the per-ops trampoline area ends this far below the fixed trampolines.
constexpr std::uint64_t kNearModuleGap = 0x100000;

// A pointer-sized guest word in the ISA's byte order (8 bytes little-endian on x86-64, 4 bytes
// big-endian on ppc32).
std::uint64_t loadWord(const arch::Arch &isa, const arch::GuestContext &cpu, std::uint64_t addr) {
  std::uint8_t b[8] = {};
  const unsigned n = isa.wordSize();
  if (!cpu.readMemory(addr, std::span(b, n)))
    FTSIM_PANIC("guest stack word at {:#x} is not mapped", addr);
  std::uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) {
    const unsigned shift = isa.endian() == arch::Endian::Little ? 8 * i : 8 * (n - 1 - i);
    v |= std::uint64_t{b[i]} << shift;
  }
  return v;
}

void storeWord(const arch::Arch &isa, arch::GuestContext &cpu, std::uint64_t addr,
               std::uint64_t v) {
  std::uint8_t b[8] = {};
  const unsigned n = isa.wordSize();
  for (unsigned i = 0; i < n; ++i) {
    const unsigned shift = isa.endian() == arch::Endian::Little ? 8 * i : 8 * (n - 1 - i);
    b[i] = static_cast<std::uint8_t>(v >> shift);
  }
  if (!cpu.writeMemory(addr, std::span<const std::uint8_t>(b, n)))
    FTSIM_PANIC("guest stack word at {:#x} is not mapped", addr);
}

// arch_ftrace_update_trampoline() as the core sees it: the Kernel allocates and maps the code.
class KernelOpsTrampolines final : public model::OpsTrampolineArch {
public:
  explicit KernelOpsTrampolines(std::function<void(model::FtraceOps &)> update)
      : update_(std::move(update)) {}
  void updateTrampoline(model::FtraceOps &ops) override { update_(ops); }

private:
  std::function<void(model::FtraceOps &)> update_;
};

} // namespace

Kernel::Kernel(arch::Image image, KernelConfig config)
    : image_(std::move(image)), config_(std::move(config)) {
  if (!image_.arch)
    fatal("image {} has no architecture", image_.name);
  const arch::Arch &isa = *image_.arch;
  const std::uint64_t trampolineBase =
      (image_.textStart() & ~std::uint64_t{0xfff}) - kTrampolineGap;
  if (isa.name() == "ppc32" && !config_.machine.moduleBase) {
    // module_alloc() of arch/powerpc/kernel/module.c (2ec13df16704 "powerpc/modules: Load modules
    // closer to kernel text", v5.13): first try within 32 MiB below _etext, so that `bl` reaches
    // without branch trampolines. Per-ops trampolines come from there, below the fixed ones (which
    // stand in for ftrace_entry.S, part of kernel text). A module image loaded far away (the
    // ppc32-module at 0xb0000000) still needs its long-branch stubs.
    config_.machine.moduleBase =
        trampolineBase - kNearModuleGap - ((config_.machine.moduleSize + 0xfff) & ~0xfffull);
  }
  machine_ = std::make_unique<sim::Machine>(isa, config_.machine);
  machine_->loadImage(image_);
  mcountLocs_ = image_.mcountLocs;
  for (const std::string &path : config_.modules) {
    if (isa.name() != "ppc32")
      fatal("{}: guest modules are a ppc32 feature (long-branch stubs)", path);
    auto mod = std::make_unique<LoadedModule>(LoadedModule{{}, arch::loadImage(path)});
    if (mod->image.arch != &isa)
      fatal("module {} is a {} image, not {}", path, mod->image.arch->name(), isa.name());
    for (const arch::ImageSymbol &s : mod->image.symbols)
      if (s.name.ends_with("_ftrace_tramp"))
        mod->name = s.name.substr(0, s.name.size() - std::string_view("_ftrace_tramp").size());
    if (mod->name.empty())
      fatal("module {} has no <name>_ftrace_tramp slot for mod->arch.tramp", path);
    machine_->loadImage(mod->image);
    mcountLocs_.insert(mcountLocs_.end(), mod->image.mcountLocs.begin(),
                       mod->image.mcountLocs.end());
    modules_.push_back(std::move(mod));
  }

  // Site flavour: which profiling hook the compiler called.
  const arch::ImageSymbol *fentry = image_.findSymbol("__fentry__");
  flavour_ = fentry && fentry->addr == image_.mcountAddr ? arch::SiteFlavour::Fentry
                                                         : arch::SiteFlavour::Mcount;
  arch::TrampolineRequest request;
  request.base = trampolineBase;
  request.flavour = flavour_;
  request.splitListFunction = config_.splitListFunction;
  trampolines_ = arch::makeFtraceTrampolines(isa, request);
  const arch::TrampolineCode &code = trampolines_->code();
  machine_->mapText(code.base, code.bytes);
  // ftrace_graph_call as generated is the "graph off" state: `jmp ftrace_stub` on x86-64 (whose
  // ret returns from ftrace_caller), `b ftrace_graph_stub` on ppc32 (whose bctr goes back into the
  // traced function: a `b ftrace_stub` there would return to the parent and skip the function).
  graphOff_.assign(
      code.bytes.begin() + static_cast<std::ptrdiff_t>(code.ftraceGraphCall - code.base),
      code.bytes.begin() +
          static_cast<std::ptrdiff_t>(code.ftraceGraphCall - code.base + code.siteSize));

  protocol_ = arch::makePatchProtocol(isa, config_.protocol);
  // ProtocolPatcher on x86-64; on ppc32 a Ppc32Patcher (ftrace_init_nop for the image's call-site
  // layout, module long-branch stubs, REL24 range errors).
  patcher_ = model::makeArchPatcher(
      isa, *machine_, *protocol_, image_, {code.ftraceCaller, code.ftraceRegsCaller},
      [this](const model::TraceFunction &function) { return functionAddress(function); },
      std::vector<std::uint64_t>{code.ftraceCall, code.ftraceRegsCall});

  // The module loader's part (module_finalize_ftrace() in arch/powerpc/kernel/module_32.c):
  // mod->arch.tramp / tramp_regs as long-branch stubs to ftrace_caller / ftrace_regs_caller,
  // written before the module's text is live; the records of the module then reach them through
  // rec->arch.mod (Ppc32Patcher).
  for (const auto &mod : modules_) {
    auto *ppc = dynamic_cast<model::Ppc32Patcher *>(patcher_.get());
    const arch::ImageSymbol *tramp = mod->image.findSymbol(mod->name + "_ftrace_tramp");
    const arch::ImageSymbol *trampRegs = mod->image.findSymbol(mod->name + "_ftrace_tramp_regs");
    const arch::ImageSymbol *mcount = mod->image.findSymbol("_mcount");
    if (!ppc || !tramp)
      FTSIM_PANIC("module {} without a ppc32 patcher or trampoline slot", mod->name);
    machine_->pokeText(tramp->addr, arch::ppc32::longBranchStub(code.ftraceCaller).bytes);
    if (trampRegs)
      machine_->pokeText(trampRegs->addr, arch::ppc32::longBranchStub(code.ftraceRegsCaller).bytes);
    ppc->addModule(mod->name,
                   {tramp->addr, trampRegs ? trampRegs->addr : 0, mcount ? mcount->addr : 0});
  }

  model::FtraceConfig ftrace;
  ftrace.patcher = patcher_.get();
  ftrace.port = machine_.get();
  ftrace.freePolicy = config_.freePolicy;
  if (config_.opsTrampolines) {
    if (!trampolines_->hasOpsTrampolines())
      fatal("{}: no per-ops ftrace trampolines on {}", image_.name, isa.name());
    opsTrampolineArch_ = std::make_unique<KernelOpsTrampolines>(
        [this](model::FtraceOps &ops) { updateOpsTrampoline(ops); });
    ftrace.trampolines = opsTrampolineArch_.get();
  }
  ftrace.addresses = {image_.mcountAddr, code.ftraceCaller, code.ftraceRegsCaller};
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

  // ftrace_init(): before any task runs, so every conversion is a plain read-verify-write.
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

  // The C functions the trampolines call.
  if (code.listFuncWalkStub) {
    // The read of ftrace_ops_list, one event before the walk (Trampolines.h).
    machine_->setHypercall(code.listFuncStub, [this](arch::GuestContext &cpu) {
      listReads_[taskKey(cpu)] = {now(), core_->opsList()};
    });
    machine_->setHypercall(code.listFuncWalkStub,
                           [this](arch::GuestContext &cpu) { listWalk(cpu); });
  } else {
    machine_->setHypercall(code.listFuncStub, [this](arch::GuestContext &cpu) {
      traceCallback(cpu, {model::TraceFunction::Kind::ListFunc, nullptr});
    });
  }
  for (std::uint64_t stub : code.callbackStubs)
    machine_->setHypercall(stub, [this, stub](arch::GuestContext &cpu) {
      auto it = stubTargets_.find(stub);
      if (it == stubTargets_.end())
        FTSIM_PANIC("callback stub {:#x} called before it was assigned", stub);
      traceCallback(cpu, it->second);
    });
  machine_->setHypercall(code.prepareReturnStub,
                         [this](arch::GuestContext &cpu) { prepareReturn(cpu); });
  machine_->setHypercall(code.returnHandlerStub,
                         [this](arch::GuestContext &cpu) { returnToHandler(cpu); });

  model::TraceEnvironment env;
  env.cpus = config_.machine.cpus;
  env.context = [this] {
    if (!current_)
      FTSIM_PANIC("a tracer asked for the context outside a callback");
    return contextOf(*current_);
  };
  env.sampleStack = [this](std::uint64_t ip) { return sampleStack(ip); };
  env.setGraphCaller = [this](bool enable) { setGraphCaller(enable); };
  env.symbol = [this](std::uint64_t addr, bool withOffset) { return symbolName(addr, withOffset); };
  tracefs_ = std::make_unique<model::TraceFs>(*core_, std::move(env), config_.bufferEntriesPerCpu);
}

Kernel::~Kernel() = default;

std::uint64_t Kernel::now() const { return machine_->events().size(); }

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

void Kernel::patcher(std::function<void(Kernel &)> body) {
  machine_->startPatcher([this, body = std::move(body)](arch::MachinePort &) { body(*this); });
}

sim::RunResult Kernel::run(sim::Scheduler &scheduler, std::uint64_t maxEvents) {
  return machine_->run(scheduler, maxEvents);
}

// --- The trace functions ftrace_call may call
// ------------------------------------------------------

// What the `call` at ftrace_call targets for a TraceFunction: ftrace_stub, the list function, or
// a stub of its own for each distinct ops->func (as each C callback has its own address).
std::uint64_t Kernel::functionAddress(const model::TraceFunction &function) {
  const arch::TrampolineCode &code = trampolines_->code();
  switch (function.kind) {
  case model::TraceFunction::Kind::Stub:
    return code.ftraceStub;
  case model::TraceFunction::Kind::ListFunc:
    return code.listFuncStub;
  case model::TraceFunction::Kind::OpsFunc:
  case model::TraceFunction::Kind::AssistFunc:
    break;
  }
  if (function.kind == model::TraceFunction::Kind::OpsFunc &&
      (!function.ops || function.ops->has(model::OpsFlag::Stub)))
    return code.ftraceStub; // graph_ops.func = ftrace_stub
  for (const auto &[stub, target] : stubTargets_)
    if (target == function)
      return stub;
  if (stubTargets_.size() == code.callbackStubs.size())
    FTSIM_PANIC("out of callback stubs ({} distinct trace functions)", stubTargets_.size());
  const std::uint64_t stub = code.callbackStubs[stubTargets_.size()];
  stubTargets_[stub] = function;
  return stub;
}

std::int64_t Kernel::taskKey(const arch::GuestContext &cpu) const {
  return cpu.task() >= 0 ? cpu.task() : -1 - static_cast<std::int64_t>(cpu.cpu());
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

void Kernel::traceCallback(arch::GuestContext &cpu, const model::TraceFunction &function,
                           const std::vector<model::FtraceOps *> *list) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  std::unique_ptr<arch::GuestContext> regs;
  if (args.fullRegs)
    regs = trampolines_->ptRegs(cpu, args.regs);
  callbacks_.push_back(
      {now(), cpu.cpu(), cpu.task(), args.ip, args.parentIp, args.fullRegs, function.describe()});
  model::CallSite site{
      args.ip, args.parentIp, regs.get(), {cpu.cpu(), cpu.task(), model::ContextLevel::Normal}};
  current_ = &cpu;
  currentRegs_ = args.regs;
  if (list)
    core_->listFunc(site, *list);
  else
    core_->invoke(function, site);
  current_ = nullptr;
}

// The walk half of ftrace_ops_list_func: every ops on the list it read is dereferenced (its
// flags and hashes, then maybe its func), so one its owner freed since is a use-after-free.
void Kernel::listWalk(arch::GuestContext &cpu) {
  auto it = listReads_.find(taskKey(cpu));
  if (it == listReads_.end())
    FTSIM_PANIC("ftrace_ops_list_walk on cpu{} without a read of ftrace_ops_list", cpu.cpu());
  const ListRead read = std::move(it->second);
  listReads_.erase(it);
  std::vector<model::FtraceOps *> live;
  for (model::FtraceOps *op : read.list) {
    auto freed = freedOps_.find(op);
    if (freed == freedOps_.end()) {
      live.push_back(op);
      continue;
    }
    opsUseAfterFree_.push_back({now(), cpu.cpu(), cpu.task(), trampolines_->argsOf(cpu).ip,
                                op->name, read.event, freed->second});
  }
  traceCallback(cpu, {model::TraceFunction::Kind::ListFunc, nullptr}, &live);
  callbacks_.back().event = read.event; // the call entered the list function at the read
}

void Kernel::freeOps(const model::FtraceOps &ops) { freedOps_[&ops] = now(); }

// arch_ftrace_update_trampoline() (arch/x86/kernel/ftrace.c): the first registration allocates
// and fills the trampoline (create_trampoline, module_alloc: never read by anyone before the
// sites are patched to call it, so it is written directly); a later one would retarget its call to
// ftrace_ops_get_func(ops), which here is the stub bound to the ops itself and so never changes.
void Kernel::updateOpsTrampoline(model::FtraceOps &ops) {
  if (ops.trampoline)
    return;
  const bool saveRegs = ops.has(model::OpsFlag::SaveRegs);
  const std::uint64_t size = trampolines_->opsTrampolineSize(saveRegs);
  const std::uint64_t addr = machine_->allocText(size, 0);
  if (!addr)
    return; // create_trampoline() failed: the ops keeps using the shared trampolines
  const arch::OpsTrampolineCode code = trampolines_->makeOpsTrampoline(addr, saveRegs);
  machine_->pokeText(addr, code.bytes);
  machine_->setHypercall(code.callbackStub, [this, &ops, addr](arch::GuestContext &cpu) {
    opsTrampolineCallback(cpu, ops, addr);
  });
  ops.trampoline = addr;
  ops.trampolineSize = size;
  ops.flags |= model::OpsFlag::AllocTramp;
  opsTrampolines_.push_back({addr, size, code.callSite, code.callbackStub, &ops, saveRegs});
  // A site may now legally call the new trampoline: watched sites learn the new state before the
  // patcher can write it.
  if (watching_)
    watchPatchSites();
}

// The trampoline's ftrace_call: ftrace_ops_get_func(ops) with the ops bound in the trampoline —
// ops->func, or ftrace_ops_assist_func for an ops that needs recursion or RCU protection.
void Kernel::opsTrampolineCallback(arch::GuestContext &cpu, model::FtraceOps &ops,
                                   std::uint64_t trampoline) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  std::unique_ptr<arch::GuestContext> regs;
  if (args.fullRegs)
    regs = trampolines_->ptRegs(cpu, args.regs);
  const bool assist = ops.has(model::OpsFlag::Recursion) || ops.has(model::OpsFlag::Rcu);
  const model::TraceFunction function{
      assist ? model::TraceFunction::Kind::AssistFunc : model::TraceFunction::Kind::OpsFunc, &ops};
  callbacks_.push_back({now(), cpu.cpu(), cpu.task(), args.ip, args.parentIp, args.fullRegs,
                        function.describe(), trampoline});
  model::CallSite site{
      args.ip, args.parentIp, regs.get(), {cpu.cpu(), cpu.task(), model::ContextLevel::Normal}};
  current_ = &cpu;
  currentRegs_ = args.regs;
  if (assist)
    core_->assistFunc(ops, site);
  else if (ops.func)
    ops.func(site.ip, site.parentIp, ops, site.regs);
  current_ = nullptr;
}

std::uint64_t Kernel::siteTarget(std::uint64_t ip) {
  arch::Bytes bytes(image_.arch->siteSize());
  if (!machine_->readText(ip, bytes))
    return 0;
  const std::optional<std::uint64_t> target = image_.arch->callTarget(ip, bytes);
  if (!target)
    return 0;
  for (const OpsTrampoline &t : opsTrampolines_)
    if (*target == t.addr)
      return t.addr;
  return 0;
}

// The stack of the task in a callback: regs->sp is the traced function's stack pointer at its
// call site. Return addresses are the words that point just after a call instruction in text
// (what an unwinder without frame information finds); check_stack() measures each frame by where
// its return address sits.
model::StackSample Kernel::sampleStack(std::uint64_t) {
  model::StackSample sample;
  if (!current_ || current_->task() < 0)
    return sample;
  const std::uint64_t top = machine_->task(current_->task()).stackTop;
  const std::uint64_t sp = trampolines_->ptRegs(*current_, currentRegs_)->sp();
  if (sp >= top)
    return sample;
  sample.depth = top - sp;
  const arch::Arch &isa = *image_.arch;
  const unsigned wordSize = isa.wordSize();
  const unsigned callSize = isa.siteSize(); // call rel32 (5) / bl (4)
  for (std::uint64_t p = sp; p + wordSize <= top; p += wordSize) {
    const std::uint64_t word = loadWord(isa, *current_, p);
    const arch::ImageSegment *segment = image_.segmentAt(word);
    if (!segment || !segment->executable || word < callSize)
      continue;
    arch::Bytes insn(callSize);
    if (!machine_->readText(word - callSize, insn) || !isa.callTarget(word - callSize, insn))
      continue;
    sample.frames.push_back({word, top - p});
  }
  return sample;
}

// --- function_graph -----------------------------------------------------------------------------

// prepare_ftrace_return(self_addr, parent, frame_pointer) -> function_graph_enter(): push the
// return onto the task's return stack and make the traced function return to return_to_handler.
void Kernel::prepareReturn(arch::GuestContext &cpu) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  const arch::Arch &isa = *image_.arch;
  const std::uint64_t old = loadWord(isa, cpu, args.parentSlot);
  auto &stack = retStacks_[taskKey(cpu)];
  const int depth = static_cast<int>(stack.size());
  const model::TraceContext context = contextOf(cpu);
  current_ = &cpu;
  const unsigned users = tracefs_->graphEntry(args.ip, depth, context);
  current_ = nullptr;
  // prepare_ftrace_return() returns where the traced function must return to: the ppc32 graph
  // caller writes it to LR and to the caller's LR save word (ftrace_32.S); x86's ignores rax.
  if (!users) {
    trampolines_->setReturnValue(cpu, old);
    return;
  }
  stack.push_back({old, args.ip, context.timestampNs, users, depth});
  storeWord(isa, cpu, args.parentSlot, trampolines_->code().returnToHandler);
  trampolines_->setReturnValue(cpu, trampolines_->code().returnToHandler);
}

// ftrace_return_to_handler(): pop the return stack, report the return, give the real return
// address back to return_to_handler (in rax).
void Kernel::returnToHandler(arch::GuestContext &cpu) {
  auto &stack = retStacks_[taskKey(cpu)];
  if (stack.empty())
    FTSIM_PANIC("return_to_handler on cpu{} with an empty return stack (ftrace_graph_stop)",
                cpu.cpu());
  const ReturnFrame frame = stack.back();
  stack.pop_back();
  current_ = &cpu;
  tracefs_->graphReturn(frame.func, frame.depth, frame.callTime, frame.users, contextOf(cpu));
  current_ = nullptr;
  trampolines_->setReturnValue(cpu, frame.returnAddress);
}

// ftrace_enable_ftrace_graph_caller / ftrace_disable_ftrace_graph_caller: ftrace_mod_jmp() of
// ftrace_graph_call with text_poke_bp().
void Kernel::setGraphCaller(bool enable) {
  const arch::TrampolineCode &code = trampolines_->code();
  arch::Bytes current(code.siteSize);
  if (!machine_->readText(code.ftraceGraphCall, current))
    FTSIM_PANIC("ftrace_graph_call at {:#x} is not mapped", code.ftraceGraphCall);
  arch::Bytes wanted = graphOff_;
  if (enable) {
    const arch::EncodeResult jmp = image_.arch->jump(code.ftraceGraphCall, code.ftraceGraphCaller);
    if (!jmp.ok)
      FTSIM_PANIC("ftrace_graph_call: {}", jmp.error);
    wanted = jmp.bytes;
  }
  if (current == wanted)
    return;
  protocol_->pokeNow({code.ftraceGraphCall, current, wanted});
}

// --- Observation
// ----------------------------------------------------------------------------------

std::vector<PatchSite> Kernel::patchSites() const {
  const arch::Arch &isa = *image_.arch;
  const arch::TrampolineCode &code = trampolines_->code();
  std::vector<PatchSite> sites;
  const bool mflrSlot = isa.name() == "ppc32" && arch::patchesMflrSlot(*protocol_);
  core_->records().forEach([&](const model::DynFtrace &rec) {
    PatchSite site{rec.ip, isa.siteSize(), {isa.nop()}, core_->recordName(rec)};
    for (std::uint64_t target : {code.ftraceCaller, code.ftraceRegsCaller})
      site.states.push_back(isa.call(rec.ip, target).bytes);
    for (const OpsTrampoline &t : opsTrampolines_)
      site.states.push_back(isa.call(rec.ip, t.addr).bytes);
    // ppc32: a module site calls ftrace_caller through the module's long-branch stubs
    // (ftrace_call_replace for rec->arch.mod); the patcher knows them.
    for (std::uint64_t target : {code.ftraceCaller, code.ftraceRegsCaller}) {
      arch::Bytes viaStub = patcher_->callBytes(rec, target);
      if (!viaStub.empty() &&
          std::find(site.states.begin(), site.states.end(), viaStub) == site.states.end())
        site.states.push_back(std::move(viaStub));
    }
    std::erase_if(site.states, [](const arch::Bytes &b) { return b.empty(); });
    sites.push_back(std::move(site));
    // Two-instruction protocols (word-mflr, Ppc32Protocols.h): the `mflr r0` before the site is
    // patched too, between a nop and mflr r0.
    if (mflrSlot)
      sites.push_back({rec.ip - 4,
                       4,
                       {arch::ppc32::wordBytes(arch::ppc32::kNop),
                        arch::ppc32::wordBytes(arch::ppc32::kMflrR0)},
                       core_->recordName(rec) + " (mflr)"});
  });
  std::vector<std::uint64_t> targets = {code.ftraceStub, code.listFuncStub};
  targets.insert(targets.end(), code.callbackStubs.begin(), code.callbackStubs.end());
  for (auto [addr, name] : {std::pair{code.ftraceCall, "ftrace_call"},
                            std::pair{code.ftraceRegsCall, "ftrace_regs_call"}}) {
    PatchSite site{addr, code.siteSize, {}, name};
    for (std::uint64_t target : targets)
      site.states.push_back(isa.call(addr, target).bytes);
    sites.push_back(std::move(site));
  }
  sites.push_back({code.ftraceGraphCall,
                   code.siteSize,
                   {graphOff_, isa.jump(code.ftraceGraphCall, code.ftraceGraphCaller).bytes},
                   "ftrace_graph_call"});
  return sites;
}

void Kernel::watchPatchSites() {
  watching_ = true;
  for (PatchSite &site : patchSites())
    machine_->watchSite(site.addr, site.size, std::move(site.states));
}

std::vector<SiteExecution> Kernel::siteExecutions() const {
  std::set<std::uint64_t> ips;
  core_->records().forEach([&](const model::DynFtrace &rec) { ips.insert(rec.ip); });
  std::vector<SiteExecution> out;
  for (const sim::EventRecord &e : machine_->events())
    if (e.kind == sim::EventKind::Step && ips.count(e.pc))
      out.push_back({e.index, e.cpu, e.task, e.pc});
  return out;
}

} // namespace ftsim::kernel
