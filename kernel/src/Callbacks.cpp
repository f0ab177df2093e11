// The C functions the trampolines call, reached through hypercall stubs (the trace functions at
// ftrace_call, the list function, prepare_ftrace_return and ftrace_return_to_handler), and what
// the tracers ask of the machine (context, stack, symbols) through tracefs.

#include "ftsim/kernel/Kernel.h"

#include "ftsim/arch/Error.h"

namespace ftsim::kernel {
namespace {

// A pointer-sized guest word in the ISA's byte order (8 bytes little-endian on x86-64, 4 bytes
// big-endian on ppc32).
std::uint64_t loadWord(const arch::Arch &isa, const arch::GuestContext &cpu, std::uint64_t addr) {
  std::uint8_t b[8] = {};
  const unsigned n = isa.wordSize();
  if (!cpu.readMemory(addr, std::span(b, n)))
    FTSIM_PANIC("guest stack word at {:#x} is not mapped", addr);
  return arch::loadInteger(isa.endian(), std::span<const std::uint8_t>(b, n));
}

void storeWord(const arch::Arch &isa, arch::GuestContext &cpu, std::uint64_t addr,
               std::uint64_t v) {
  std::uint8_t b[8] = {};
  const unsigned n = isa.wordSize();
  arch::storeInteger(isa.endian(), v, std::span(b, n));
  if (!cpu.writeMemory(addr, std::span<const std::uint8_t>(b, n)))
    FTSIM_PANIC("guest stack word at {:#x} is not mapped", addr);
}

} // namespace

void Kernel::bindHypercalls() {
  const arch::TrampolineCode &code = trampolines_->code();
  if (code.listFuncWalkStub) {
    // The read of ftrace_ops_list, one event before the walk (Trampolines.h).
    machine_->setHypercall(code.listFuncTrap, [this](arch::GuestContext &cpu) {
      listReads_[taskKey(cpu)].push_back({now(), core_->opsList()});
    });
    machine_->setHypercall(code.listFuncWalkStub,
                           [this](arch::GuestContext &cpu) { listWalk(cpu); });
  } else {
    machine_->setHypercall(code.listFuncTrap, [this](arch::GuestContext &cpu) {
      traceCallback(cpu, {model::TraceFunction::Kind::ListFunc, nullptr});
    });
  }
  for (std::uint64_t stub : code.callbackStubs)
    machine_->setHypercall(stub, [this, stub](arch::GuestContext &cpu) {
      const model::TraceFunction *function = stubs_->functionAt(stub);
      if (!function)
        FTSIM_PANIC("callback stub {:#x} called before it was assigned", stub);
      traceCallback(cpu, *function);
    });
  if (code.prepareReturnStub)
    machine_->setHypercall(code.prepareReturnStub,
                           [this](arch::GuestContext &cpu) { prepareReturn(cpu); });
  machine_->setHypercall(code.returnHandlerStub,
                         [this](arch::GuestContext &cpu) { returnToHandler(cpu); });
}

void Kernel::makeTraceFs() {
  model::TraceEnvironment env;
  env.cpus = config_.machine.cpus;
  env.context = [this] {
    if (!current_)
      FTSIM_PANIC("a tracer asked for the context outside a callback");
    return contextOf(*current_);
  };
  env.sampleStack = [this](std::uint64_t ip) { return sampleStack(ip); };
  env.symbol = [this](std::uint64_t addr, bool withOffset) { return symbolName(addr, withOffset); };
  if (config_.release.graphViaOps)
    env.graphFunc = [this](std::uint64_t ip) { graphFunc(ip); };
  tracefs_ = std::make_unique<model::TraceFs>(*core_, std::move(env), config_.bufferEntriesPerCpu);
}

void Kernel::recordCallback(CallbackEvent event) {
  if (config_.machine.keepLog) // what a verifier reads; a plain run keeps only the trace
    callbacks_.push_back(std::move(event));
}

void Kernel::traceCallback(arch::GuestContext &cpu, const model::TraceFunction &function,
                           const std::vector<model::FtraceOps *> *list) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  std::unique_ptr<arch::GuestContext> regs;
  if (args.fullRegs)
    regs = trampolines_->ptRegs(cpu, args.regs);
  recordCallback(
      {now(), cpu.cpu(), cpu.task(), args.ip, args.parentIp, args.fullRegs, function.describe()});
  model::CallSite site{
      args.ip, args.parentIp, regs.get(), {cpu.cpu(), cpu.task(), contextLevel(cpu)}};
  // The op the trampoline loaded from function_trace_op before its ftrace_call.
  if (auto it = opsAt_.find(args.op); it != opsAt_.end())
    site.op = it->second;
  // ftrace_call calls one ops' func (directly or through ftrace_ops_assist_func, which calls the
  // func of the op it is passed): with any other op it runs the wrong callback or the right one
  // with the wrong data.
  const bool single = function.kind == model::TraceFunction::Kind::OpsFunc ||
                      function.kind == model::TraceFunction::Kind::AssistFunc;
  if (single && function.ops && site.op && site.op != function.ops && config_.machine.keepLog)
    opMismatches_.push_back(
        {now(), cpu.cpu(), cpu.task(), args.ip, function.ops->name, site.op->name});
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
  if (it == listReads_.end() || it->second.empty())
    FTSIM_PANIC("ftrace_ops_list_walk on cpu{} without a read of ftrace_ops_list", cpu.cpu());
  const ListRead read = std::move(it->second.back());
  it->second.pop_back();
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

std::uint64_t Kernel::guestOps(model::FtraceOps &ops) {
  auto it = opsAddress_.find(&ops);
  if (it != opsAddress_.end())
    return it->second;
  const unsigned word = image_.arch->wordSize();
  const std::uint64_t addr = ftraceData_ + word * (1 + opsAddress_.size());
  if (addr + word > ftraceData_ + 0x1000)
    FTSIM_PANIC("more ftrace_ops than guest words for them");
  opsAddress_[&ops] = addr;
  opsAt_[addr] = &ops;
  return addr;
}

// function_trace_op = op, in guest memory (inside the publication's event).
void Kernel::setFunctionTraceOp(model::FtraceOps &op) {
  const std::uint64_t value = guestOps(op);
  const unsigned n = image_.arch->wordSize();
  std::uint8_t b[8] = {};
  arch::storeInteger(image_.arch->endian(), value, std::span(b, n));
  machine_->pokeData(ftraceData_, std::span<const std::uint8_t>(b, n));
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

// function_graph_enter() for the traced function at `ip`, whose return address is the guest word
// at `slot`: push the return onto the task's return stack and make the function return to
// return_to_handler. Returns where the function returns to now.
std::uint64_t Kernel::graphEnter(arch::GuestContext &cpu, std::uint64_t ip, std::uint64_t slot) {
  const arch::Arch &isa = *image_.arch;
  const std::uint64_t old = loadWord(isa, cpu, slot);
  auto &stack = retStacks_[taskKey(cpu)];
  const int depth = static_cast<int>(stack.size());
  const model::TraceContext context = contextOf(cpu);
  arch::GuestContext *const outer = current_; // inside a callback when the graph is an ops
  current_ = &cpu;
  const unsigned users = tracefs_->graphEntry(ip, depth, context);
  current_ = outer;
  if (!users)
    return old;
  stack.push_back({old, ip, context.timestampNs, users, depth});
  storeWord(isa, cpu, slot, trampolines_->code().returnToHandler);
  return trampolines_->code().returnToHandler;
}

// prepare_ftrace_return(self_addr, parent, frame_pointer), called by ftrace_graph_caller. It
// returns where the traced function must return to: the ppc32 graph caller writes it to LR and to
// the caller's LR save word (ftrace_32.S); x86's ignores rax.
void Kernel::prepareReturn(arch::GuestContext &cpu) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  trampolines_->setReturnValue(cpu, graphEnter(cpu, args.ip, args.parentSlot));
}

// ftrace_graph_func(), graph_ops' callback where the graph tracer is an ops: the return address
// it rewrites is the callback's (x86 kernel_stack_pointer(regs), ppc32 regs->link).
void Kernel::graphFunc(std::uint64_t ip) {
  if (!current_)
    FTSIM_PANIC("ftrace_graph_func outside a callback");
  graphEnter(*current_, ip, trampolines_->graphReturnSlot(*current_, currentRegs_));
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

} // namespace ftsim::kernel
