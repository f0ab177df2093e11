// ftrace's x86-64 trampolines, generated as machine code at boot, in the release's two shapes
// (TrampolineRequest::graphViaOps):
//  - v4.19 and before: arch/x86/kernel/ftrace_64.S with the graph entry as a patched jump, below,
//    including the mcount flavour it supported until 562e14f72292 "ftrace/x86: Remove mcount
//    support";
//  - v6.1 and v6.12 (CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS): the same callers ending in
//    `ftrace_caller_end: RET` / `ftrace_regs_caller_end: RET`, no ftrace_epilogue, no
//    ftrace_graph_call or ftrace_graph_caller; function_graph is an ops whose callback
//    ftrace_graph_func() rewrites the return address at kernel_stack_pointer(regs). fentry only.
//
//   ftrace_caller:      save_mcount_regs                  ; pt_regs frame, rdi = ip, rsi = parent
//                       leaq MCOUNT_REG_SIZE+8(%rsp),%rcx ; movq %rcx,RSP(%rsp)
//                       leaq (%rsp),%rcx                  ; regs (4th argument)
//                       movq $0,CS(%rsp)                  ; only REGS ops see CS set
//   ftrace_call:        call ftrace_stub                  ; patched: the trace function
//                       movq RIP(%rsp),%rax               ; handlers can change RIP:
//                       movq %rax,MCOUNT_REG_SIZE(%rsp)   ;   it becomes the return address
//                       restore_mcount_regs
//                       jmp ftrace_epilogue
//   ftrace_epilogue:
//   ftrace_graph_call:  jmp ftrace_stub                  ; patched: jmp ftrace_graph_caller
//   ftrace_stub:        ret
//   ftrace_regs_caller: pushfq ; save_mcount_regs 8 ; save r15..r10, rbx, flags, CS, SS, RSP
//   ftrace_regs_call:   call ftrace_stub                 ; patched
//                       flags and RIP back into the return frame, restore, popfq,
//                       jmp ftrace_epilogue
//   ftrace_graph_caller: save_mcount_regs ; rsi = &parent ; call prepare_ftrace_return
//                       restore_mcount_regs ; ret
//   return_to_handler:  subq $24,%rsp ; save rax, rdx ; rdi = rbp
//                       call ftrace_return_to_handler
//                       rdi = rax ; restore rdx, rax ; addq $24,%rsp ; jmp *%rdi
//
// Differences from Linux, all deliberate:
//  - function_trace_op is loaded into %rdx with an absolute `movq function_trace_op, %rdx`
//    (Linux: %rip-relative) when the request gives its address, so per-ops trampoline copies keep
//    the same instruction; Linux's create_trampoline() instead makes the copy load its own ops
//    from the trampoline's tail (here the copy's callback stub is bound to its ops on the host).
//  - No CONFIG_FRAME_POINTER frame (MCOUNT_FRAME_SIZE = 0) and no ORIG_RAX direct-call return
//    (direct trampolines are not modelled).
//  - The C functions called from the trampolines are hypercall stubs (int3; ret) in the same text.

#include "../common/TrampolineAssembler.h"
#include "X86_64Target.h"

#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

namespace ftsim::arch {
namespace {

// struct pt_regs (arch/x86/include/asm/ptrace.h) offsets, as ftrace_64.S names them.
constexpr int R15 = 0, R14 = 8, R13 = 16, R12 = 24, RBP = 32, RBX = 40, R11 = 48, R10 = 56, R9 = 64,
              R8 = 72, RAX = 80, RCX = 88, RDX = 96, RSI = 104, RDI = 112, ORIG_RAX = 120,
              RIP = 128, CS = 136, EFLAGS = 144, RSP = 152, SS = 160;
static_assert(ORIG_RAX + 8 == RIP, "pt_regs: orig_ax precedes ip"); // the one slot unused here
constexpr int kPtRegsSize = 168;
constexpr int kMcountRegSize = kPtRegsSize; // MCOUNT_REG_SIZE without a frame-pointer frame
constexpr int kMcountInsnSize = 5;          // MCOUNT_INSN_SIZE
constexpr std::uint64_t kKernelCs = 0x10;   // __KERNEL_CS
constexpr std::uint64_t kKernelDs = 0x18;   // __KERNEL_DS

enum Reg { rax = 0, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };

// A tiny emitter for exactly the instruction forms ftrace_64.S uses. Calls and jumps to labels
// are 5-byte rel32 (never relaxed, like the weak ftrace_graph_call label that "keeps gas from
// relaxing the jumps").
class Emitter : public TrampolineAssembler {
public:
  Emitter(const Arch &arch, std::uint64_t base) : TrampolineAssembler(arch, base, 0xcc, {0xc3}) {}

  void movStore(Reg src, Reg base, int disp) { modrmMem(0x89, src, base, disp); }
  void movLoad(Reg dst, Reg base, int disp) { modrmMem(0x8b, dst, base, disp); }
  void lea(Reg dst, Reg base, int disp) { modrmMem(0x8d, dst, base, disp); }
  void movRegReg(Reg dst, Reg src) {
    rex(src, dst);
    byte(0x89);
    byte(0xc0 | (src & 7) << 3 | (dst & 7));
  }
  void movImmMem(Reg base, int disp, std::int32_t imm) {
    modrmMem(0xc7, static_cast<Reg>(0), base, disp);
    imm32(imm);
  }
  void movImmReg(Reg dst, std::int32_t imm) {
    rex(static_cast<Reg>(0), dst);
    byte(0xc7);
    byte(0xc0 | (dst & 7));
    imm32(imm);
  }
  void addSub(bool sub, Reg dst, std::int32_t imm) {
    rex(static_cast<Reg>(0), dst);
    const unsigned ext = sub ? 5 : 0;
    if (imm >= -128 && imm <= 127) {
      byte(0x83);
      byte(0xc0 | ext << 3 | (dst & 7));
      byte(static_cast<std::uint8_t>(imm));
    } else {
      byte(0x81);
      byte(0xc0 | ext << 3 | (dst & 7));
      imm32(imm);
    }
  }
  // movq addr, %reg with a sign-extended 32-bit absolute address (-mcmodel=kernel): position
  // independent, so per-ops trampoline copies keep it.
  void movAbsLoad(Reg dst, std::uint64_t addr) {
    if (static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(addr))) !=
        addr)
      FTSIM_PANIC("{:#x} is not a sign-extended 32-bit address", addr);
    rex(dst, static_cast<Reg>(0));
    byte(0x8b);
    byte(static_cast<std::uint8_t>((dst & 7) << 3 | 4)); // mod 00, rm 100: SIB
    byte(0x25);                                          // no base, no index: disp32
    imm32(static_cast<std::int32_t>(addr));
  }
  std::uint64_t functionTraceOp = 0; // TrampolineRequest::functionTraceOp
  void pushfq() { byte(0x9c); }
  void popfq() { byte(0x9d); }
  void ret() { byte(0xc3); }
  void jmpIndirect(Reg target) { // jmp *%reg (JMP_NOSPEC without retpolines)
    if (target >= r8)
      byte(0x41);
    byte(0xff);
    byte(0xe0 | (target & 7));
  }

private:
  void byte(std::uint8_t b) { emit({b}); }
  void imm32(std::int32_t v) {
    for (unsigned i = 0; i < 4; ++i)
      byte(static_cast<std::uint8_t>(static_cast<std::uint32_t>(v) >> (8 * i)));
  }
  void rex(Reg reg, Reg rm) { byte(0x48 | ((reg >> 3) & 1) << 2 | ((rm >> 3) & 1)); }
  void modrmMem(std::uint8_t opcode, Reg reg, Reg base, int disp) {
    rex(reg, base);
    byte(opcode);
    unsigned mod = 2;
    if (disp == 0 && (base & 7) != rbp)
      mod = 0;
    else if (disp >= -128 && disp <= 127)
      mod = 1;
    byte(static_cast<std::uint8_t>(mod << 6 | (reg & 7) << 3 | (base & 7)));
    if ((base & 7) == rsp)
      byte(0x24); // SIB: base rsp, no index
    if (mod == 1)
      byte(static_cast<std::uint8_t>(disp));
    else if (mod == 2)
      imm32(disp);
  }
};

// save_mcount_regs \added: a pt_regs frame below the return address (and `added` more bytes),
// %rdi = the call site, %rsi = the parent, %rdx = the original %rbp.
void saveMcountRegs(Emitter &e, SiteFlavour flavour, int added) {
  e.addSub(true, rsp, kMcountRegSize);
  e.movStore(rax, rsp, RAX);
  e.movStore(rcx, rsp, RCX);
  e.movStore(rdx, rsp, RDX);
  e.movStore(rsi, rsp, RSI);
  e.movStore(rdi, rsp, RDI);
  e.movStore(r8, rsp, R8);
  e.movStore(r9, rsp, R9);
  // "Save the original RBP. Even though the mcount ABI does not require this, it helps out
  // callers."
  e.movRegReg(rdx, rbp);
  e.movStore(rdx, rsp, RBP);
  // Copy the parent address into %rsi (second parameter).
  if (flavour == SiteFlavour::Fentry)
    e.movLoad(rsi, rsp, kMcountRegSize + 8 + added);
  else
    e.movLoad(rsi, rdx, 8); // "%rdx contains original %rbp": the traced function's frame
  // Move RIP to its proper location.
  e.movLoad(rdi, rsp, kMcountRegSize + added);
  e.movStore(rdi, rsp, RIP);
  // "%rdi has the return address of where ftrace_call returns. But the callbacks expect the
  // address of the call itself."
  e.addSub(true, rdi, kMcountInsnSize);
}

void restoreMcountRegs(Emitter &e) {
  e.movLoad(rbp, rsp, RBP);
  e.movLoad(r9, rsp, R9);
  e.movLoad(r8, rsp, R8);
  e.movLoad(rdi, rsp, RDI);
  e.movLoad(rsi, rsp, RSI);
  e.movLoad(rdx, rsp, RDX);
  e.movLoad(rcx, rsp, RCX);
  e.movLoad(rax, rsp, RAX);
  e.addSub(false, rsp, kMcountRegSize);
}

// ftrace_caller, then (graph by ftrace_graph_call) ftrace_epilogue with ftrace_graph_call and
// ftrace_stub, or (graph via ops, v6.x) `ftrace_caller_end: RET` and ftrace_stub on its own.
void ftraceCaller(Emitter &e, SiteFlavour flavour, bool graphViaOps) {
  e.function("ftrace_caller");
  saveMcountRegs(e, flavour, 0);
  // Stack - skipping return address of ftrace_caller.
  e.lea(rcx, rsp, kMcountRegSize + 8);
  e.movStore(rcx, rsp, RSP);
  e.label("ftrace_caller_op_ptr");
  if (e.functionTraceOp) {
    e.opLoad();
    e.movAbsLoad(rdx, e.functionTraceOp); // load the ftrace_ops into the 3rd parameter
  }
  e.lea(rcx, rsp, 0); // regs go into 4th parameter
  e.movImmMem(rsp, CS, 0);
  e.label("ftrace_call");
  e.call("ftrace_stub");
  // Handlers can change the RIP.
  e.movLoad(rax, rsp, RIP);
  e.movStore(rax, rsp, kMcountRegSize);
  restoreMcountRegs(e);
  e.label("ftrace_caller_end");
  if (graphViaOps) {
    e.ret();
    e.function("ftrace_stub");
    e.ret();
    return;
  }
  e.jump("ftrace_epilogue");

  e.symbol("ftrace_epilogue");
  e.label("ftrace_graph_call");
  e.jump("ftrace_stub");
  e.label("ftrace_stub");
  e.ret();
}

void ftraceRegsCaller(Emitter &e, SiteFlavour flavour, bool graphViaOps) {
  e.function("ftrace_regs_caller");
  e.pushfq(); // save the current flags before any operations that can change them
  saveMcountRegs(e, flavour, 8);
  e.movStore(r15, rsp, R15);
  e.movStore(r14, rsp, R14);
  e.movStore(r13, rsp, R13);
  e.movStore(r12, rsp, R12);
  e.movStore(r11, rsp, R11);
  e.movStore(r10, rsp, R10);
  e.movStore(rbx, rsp, RBX);
  e.movLoad(rcx, rsp, kMcountRegSize); // copy saved flags
  e.movStore(rcx, rsp, EFLAGS);
  e.movImmReg(rcx, static_cast<std::int32_t>(kKernelDs));
  e.movStore(rcx, rsp, SS);
  e.movImmReg(rcx, static_cast<std::int32_t>(kKernelCs));
  e.movStore(rcx, rsp, CS);
  e.lea(rcx, rsp, kMcountRegSize + 8 * 2); // stack, skipping return address and flags
  e.movStore(rcx, rsp, RSP);
  if (e.functionTraceOp) {
    e.opLoad();
    e.movAbsLoad(rdx, e.functionTraceOp); // load the ftrace_ops into the 3rd parameter
  }
  e.lea(rcx, rsp, 0);
  e.label("ftrace_regs_call");
  e.call("ftrace_stub");
  e.movLoad(rax, rsp, EFLAGS); // copy flags back to where popfq finds them
  e.movStore(rax, rsp, kMcountRegSize);
  e.movLoad(rax, rsp, RIP); // handlers can change the RIP (livepatch)
  e.movStore(rax, rsp, kMcountRegSize + 8);
  e.movLoad(r15, rsp, R15);
  e.movLoad(r14, rsp, R14);
  e.movLoad(r13, rsp, R13);
  e.movLoad(r12, rsp, R12);
  e.movLoad(r10, rsp, R10);
  e.movLoad(rbx, rsp, RBX);
  restoreMcountRegs(e);
  e.popfq();
  e.label("ftrace_regs_caller_end");
  if (graphViaOps)
    e.ret(); // "The trampoline will add the return."
  else
    e.jump("ftrace_epilogue");
}

void ftraceGraphCaller(Emitter &e, SiteFlavour flavour) {
  e.function("ftrace_graph_caller");
  saveMcountRegs(e, flavour, 0);
  if (flavour == SiteFlavour::Fentry) {
    e.lea(rsi, rsp, kMcountRegSize + 8);
    e.movImmReg(rdx, 0); // no frame pointers needed
  } else {
    e.lea(rsi, rdx, 8);     // address of the return address of the traced function
    e.movLoad(rdx, rdx, 0); // ftrace does sanity checks against frame pointers
  }
  e.call("prepare_ftrace_return");
  restoreMcountRegs(e);
  e.ret();
}

void returnToHandler(Emitter &e) {
  e.function("return_to_handler");
  e.addSub(true, rsp, 24);
  e.movStore(rax, rsp, 0); // save the return values
  e.movStore(rdx, rsp, 8);
  e.movRegReg(rdi, rbp);
  e.call("ftrace_return_to_handler");
  e.movRegReg(rdi, rax);
  e.movLoad(rdx, rsp, 8);
  e.movLoad(rax, rsp, 0);
  e.addSub(false, rsp, 24);
  e.jmpIndirect(rdi);
}

AssembledListing assemble(const Arch &arch, const TrampolineRequest &request) {
  Emitter e(arch, request.base);
  e.functionTraceOp = request.functionTraceOp;
  // v6.x's ftrace_64.S has no mcount entry (562e14f72292): its graph entry reads the parent's
  // return address at regs->sp, which is the fentry layout.
  if (request.graphViaOps && request.flavour != SiteFlavour::Fentry)
    fatal("x86-64 trampolines with function_graph via ops take fentry sites only (v6.x builds "
          "with -mfentry); mcount sites need the ftrace_graph_call entry of v4.19 and before (run "
          "as Linux 4.19 or 3.13)");
  ftraceCaller(e, request.flavour, request.graphViaOps);
  ftraceRegsCaller(e, request.flavour, request.graphViaOps);
  if (!request.graphViaOps)
    ftraceGraphCaller(e, request.flavour);
  returnToHandler(e);
  // incl %gs:0 / decl %gs:0: Linux's incl %gs:__preempt_count (preempt_count_add), the thread
  // area's first word in the machine (sim/README.md, "Regions").
  static const std::uint8_t preemptDisable[] = {0x65, 0xff, 0x04, 0x25, 0, 0, 0, 0};
  static const std::uint8_t preemptEnable[] = {0x65, 0xff, 0x0c, 0x25, 0, 0, 0, 0};
  e.hypercallStubs(request, preemptDisable, preemptEnable);
  return request.graphViaOps ? e.finishReturning(1) : e.finish("ftrace_epilogue");
}

int ptRegsSlot(int ucRegId) {
  static const std::pair<int, int> slots[] = {
      {UC_X86_REG_R15, R15}, {UC_X86_REG_R14, R14}, {UC_X86_REG_R13, R13},
      {UC_X86_REG_R12, R12}, {UC_X86_REG_RBP, RBP}, {UC_X86_REG_RBX, RBX},
      {UC_X86_REG_R11, R11}, {UC_X86_REG_R10, R10}, {UC_X86_REG_R9, R9},
      {UC_X86_REG_R8, R8},   {UC_X86_REG_RAX, RAX}, {UC_X86_REG_RCX, RCX},
      {UC_X86_REG_RDX, RDX}, {UC_X86_REG_RSI, RSI}, {UC_X86_REG_RDI, RDI},
      {UC_X86_REG_RIP, RIP}, {UC_X86_REG_CS, CS},   {UC_X86_REG_EFLAGS, EFLAGS},
      {UC_X86_REG_RSP, RSP}, {UC_X86_REG_SS, SS}};
  for (auto [id, off] : slots)
    if (id == ucRegId)
      return off;
  return -1;
}

constexpr TrampolineAbi kAbi{{RIP, RSP, ptRegsSlot}, UC_X86_REG_RDI, UC_X86_REG_RAX};

class X86_64Trampolines final : public AssembledTrampolines {
public:
  X86_64Trampolines(const Arch &arch, const TrampolineRequest &request)
      : AssembledTrampolines(arch, assemble(arch, request), kAbi) {}

  CallbackArgs argsOf(const GuestContext &cpu) const override {
    CallbackArgs args;
    args.ip = cpu.reg(UC_X86_REG_RDI);
    args.parentIp = cpu.reg(UC_X86_REG_RSI);
    args.parentSlot = cpu.reg(UC_X86_REG_RSI);
    args.regs = cpu.reg(UC_X86_REG_RCX);
    args.op = cpu.reg(UC_X86_REG_RDX);
    std::uint8_t cs[8] = {};
    args.fullRegs = cpu.readMemory(args.regs + CS, cs) && cs[0] == kKernelCs;
    return args;
  }

  // kernel_stack_pointer(regs): both callers store RSP = the stack above their return address,
  // where a fentry site's parent return address is.
  std::uint64_t graphReturnSlot(GuestContext &cpu, std::uint64_t regs) const override {
    return ptRegs(cpu, regs)->sp();
  }
};

} // namespace

std::unique_ptr<FtraceTrampolines> makeX86_64Trampolines(const Arch &arch,
                                                         const TrampolineRequest &request) {
  return std::make_unique<X86_64Trampolines>(arch, request);
}

} // namespace ftsim::arch
