#pragma once
// ftrace's fixed trampolines as guest machine code (arch/x86/kernel/ftrace_64.S): ftrace_caller,
// ftrace_regs_caller with their patchable `ftrace_call` / `ftrace_regs_call` sites, ftrace_stub,
// the function_graph entry (`ftrace_graph_call` in ftrace_epilogue, ftrace_graph_caller) and
// return_to_handler. The C functions they call (the trace function, prepare_ftrace_return,
// ftrace_return_to_handler) are host code: each is a hypercall stub (a trap followed by a return)
// inside the same text, which the integration binds with MachinePort::setHypercall.
//
// Who uses it: the simulated kernel (verify/), once at boot, before the machine runs. It maps
// `code.bytes` as text at `code.base`, binds the stubs, and from then on reads the callbacks'
// arguments through argsOf()/ptRegs() — the only ISA knowledge the integration needs.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/MachinePort.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ftsim::arch {

// Where the compiler put the profiling call (decides how the trampoline finds the parent).
enum class SiteFlavour {
  Fentry, // first instruction of the function (gcc -pg -mfentry): the parent is on the stack
  Mcount, // after the prologue (gcc -pg with frame pointers): the parent is at 8(%rbp)
};

struct TrampolineRequest {
  std::uint64_t base = 0; // page aligned; within direct-call reach of every patch site
  SiteFlavour flavour = SiteFlavour::Fentry;
  unsigned callbackStubs = 16; // hypercall stubs for distinct trace functions
  // ftrace_ops_list_func as a read of ftrace_ops_list and a walk, one event apart
  // (TrampolineCode::listFuncWalkStub); false: one hypercall does both.
  bool splitListFunction = false;
  // The guest address of function_trace_op (a pointer-sized data word): ftrace_caller and
  // ftrace_regs_caller load it into the third argument register before ftrace_call, as Linux's
  // do (x86 `movq function_trace_op, %rdx`, ppc32 `lis r5,..@ha; lwz r5,..@l(r5)`). 0: not loaded
  // (the argument register holds whatever it held).
  std::uint64_t functionTraceOp = 0;
  // How function_graph enters (the release's, model/LinuxProfile.h ReleaseCode::graphViaOps).
  // false: the callers end in a jump to the shared epilogue, whose ftrace_graph_call jump is
  // patched to ftrace_graph_caller, which calls prepare_ftrace_return (x86 ftrace_64.S until
  // v5.15, ppc32 ftrace_32.S). true (CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS, v6.x): the callers
  // return straight after ftrace_call (x86 `ftrace_caller_end: RET`, ppc32 ftrace_regs_exit's
  // bctr); there is no ftrace_graph_call, ftrace_graph_caller or prepare_ftrace_return stub, and
  // the graph tracer is an ops whose callback rewrites graphReturnSlot().
  bool graphViaOps = false;

  bool operator==(const TrampolineRequest &) const = default;
};

struct TrampolineCode {
  std::uint64_t base = 0;
  Bytes bytes;
  std::vector<ImageSymbol> symbols; // for kallsyms (%ps of a trampoline address)

  std::uint64_t ftraceCaller = 0;      // FTRACE_ADDR
  std::uint64_t ftraceCall = 0;        // the patched `call` in ftrace_caller
  std::uint64_t ftraceRegsCaller = 0;  // FTRACE_REGS_ADDR
  std::uint64_t ftraceRegsCall = 0;    // the patched `call` in ftrace_regs_caller
  std::uint64_t ftraceStub = 0;        // `ret`
  std::uint64_t ftraceGraphCall = 0;   // the patched `jmp` in ftrace_epilogue (0: graph via ops)
  std::uint64_t ftraceGraphCaller = 0; // 0: graph via ops
  std::uint64_t returnToHandler = 0;
  // Hypercall stubs: the list function, prepare_ftrace_return, ftrace_return_to_handler, and a
  // pool of stubs the integration assigns to distinct trace functions (ops->func, assist func).
  std::uint64_t listFuncStub = 0; // the entry (what ftrace_call calls)
  std::uint64_t listFuncTrap = 0; // its (first) hypercall
  // The second half of ftrace_ops_list_func when it is split in two hypercalls: the first reads
  // ftrace_ops_list (rcu_dereference), this one walks the ops it read and calls them. One event
  // apart, so a patcher can unlink and free an ops in between (0e792b89e680). 0: not split.
  std::uint64_t listFuncWalkStub = 0;
  std::uint64_t prepareReturnStub = 0; // 0: graph via ops
  std::uint64_t returnHandlerStub = 0;
  std::vector<std::uint64_t> callbackStubs;
  std::uint32_t siteSize = 0; // bytes of each patched call/jmp
  // The instructions that load function_trace_op (ftrace_caller's and ftrace_regs_caller's third
  // argument): reads of what the patcher publishes, which the kernel marks as such
  // (sim::Machine::watchSharedRead).
  std::vector<std::uint64_t> opLoads;
};

// A per-ops trampoline (arch/x86/kernel/ftrace.c create_trampoline(), f3bea491): a copy of
// ftrace_caller (or ftrace_regs_caller for a SAVE_REGS ops) in module memory whose ftrace_call
// calls the ops' own callback directly, followed by the jump back to ftrace_epilogue. Linux stores
// the ops pointer at the trampoline's tail and loads it into the callback's third argument; here
// the C callback is a hypercall stub at the tail, and the integration binds that stub to the ops —
// the same binding, one address per trampoline.
struct OpsTrampolineCode {
  std::uint64_t base = 0;
  Bytes bytes;
  std::uint64_t callSite = 0;         // the copied ftrace_call / ftrace_regs_call
  std::uint64_t callbackStub = 0;     // the ops' callback (a hypercall stub at the tail)
  bool saveRegs = false;              // a copy of ftrace_regs_caller
  std::vector<std::uint64_t> opLoads; // the copied loads of function_trace_op (TrampolineCode)
};

// The arguments a callback stub sees, in the trampoline's calling convention.
struct CallbackArgs {
  std::uint64_t ip = 0;         // the call site (return address - MCOUNT_INSN_SIZE)
  std::uint64_t parentIp = 0;   // the traced function's return address (trace callbacks)
  std::uint64_t parentSlot = 0; // prepare_ftrace_return: where the parent return address lives
  std::uint64_t regs = 0;       // pt_regs on the guest stack (ftrace_regs_caller's 4th argument)
  bool fullRegs = false;        // regs is a full pt_regs (CS set, as in ftrace_regs_caller)
  std::uint64_t op = 0;         // the third argument: function_trace_op as the trampoline loaded it
};

class FtraceTrampolines {
public:
  virtual ~FtraceTrampolines() = default;
  virtual const TrampolineCode &code() const = 0;
  // At a trace-function stub (called from ftrace_call / ftrace_regs_call) or at the
  // prepare_ftrace_return stub.
  virtual CallbackArgs argsOf(const GuestContext &cpu) const = 0;
  // The frame pointer return_to_handler passes to ftrace_return_to_handler.
  virtual std::uint64_t returnFramePointer(const GuestContext &cpu) const = 0;
  // A GuestContext over the pt_regs block at `regs` on `cpu`'s stack: pc()/setPc() are regs->ip,
  // sp() is regs->sp, reg() reads the saved register. Callbacks that change regs->ip redirect the
  // traced function (the trampoline copies it into its return slot).
  virtual std::unique_ptr<GuestContext> ptRegs(GuestContext &cpu, std::uint64_t regs) const = 0;
  // A stub's C return value (rax).
  virtual void setReturnValue(GuestContext &cpu, std::uint64_t value) const = 0;
  // ftrace_graph_func() (graph via ops), in a callback whose pt_regs are at `regs`: the guest
  // address of the word holding where the traced function returns, which function_graph_enter()
  // rewrites. x86-64: kernel_stack_pointer(regs), the parent's return address on the stack;
  // ppc32: &regs->link, which the trampoline's exit moves back into LR.
  virtual std::uint64_t graphReturnSlot(GuestContext &cpu, std::uint64_t regs) const = 0;

  // Per-ops trampolines (arch_ftrace_update_trampoline). An ISA without them keeps the defaults
  // and every ops goes through the shared trampolines and the list function. x86-64 has them as
  // Linux does; ppc32 has a port of x86's create_trampoline() (Linux powerpc has none), placed
  // within bl reach of kernel text.
  virtual bool hasOpsTrampolines() const { return false; }
  // Bytes an ops trampoline needs (the size to allocText before generating it at its address).
  virtual std::uint64_t opsTrampolineSize(bool /*saveRegs*/) const { return 0; }
  // The trampoline's code for `base` (64-byte aligned, within direct-call reach of every site
  // and of ftrace_epilogue). FatalError when the ISA has none.
  virtual OpsTrampolineCode makeOpsTrampoline(std::uint64_t /*base*/, bool /*saveRegs*/) const {
    fatal("no per-ops ftrace trampolines on this ISA");
  }
};

// The target's generator (Arch::makeTrampolines: x86-64 after ftrace_64.S, ppc32 after
// ftrace_entry.S); FatalError for an ISA without guest trampolines (ppc64 is static only).
std::unique_ptr<FtraceTrampolines> makeFtraceTrampolines(const Arch &arch,
                                                         const TrampolineRequest &request);

} // namespace ftsim::arch
