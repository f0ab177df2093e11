// ftrace's ppc32 trampolines, generated as machine code at boot. The listing follows
// arch/powerpc/kernel/trace/ftrace_entry.S of Linux v6.6 (ftrace_regs_entry / ftrace_regs_exit,
// the PPC32 paths), which serves both ppc32 call-site flavours: `mflr r0; stw r0,4(r1); bl _mcount`
// (gcc -pg) and `mflr r0; bl` (-fpatchable-function-entry=2, the mflr patched in at boot). At the
// site, LR holds the return into the traced function B and r0 the return address of B into its
// caller A (the parent).
//
//   ftrace_caller / ftrace_regs_caller:               (ftrace_regs_entry 0 / 1)
//       stw   r0,4(r1)          ; the parent into A's LR save word (the -pg site did it already)
//       stwu  r1,-16(r1)        ; a minimal frame representing B
//       stwu  r1,-192(r1)       ; our frame, pt_regs at 16(r1)
//       save r0, r3-r10 (regs: also r2, r11-r31) and the old r1 into pt_regs
//       r8 = MSR (regs) or 0    ; "Clear MSR to flag as ftrace_caller versus ftrace_regs_caller"
//       mflr  r7 ; nip = r7 ; B's LR save word = r7 ; link = r0
//       r3 = r7 - 4 (ip), r4 = r0 (parent_ip), r5 = op, r6 = &pt_regs
//   ftrace_call / ftrace_regs_call:
//       bl    ftrace_stub       ; patched: the trace function
//       ctr = pt_regs->nip      ; callbacks may redirect (livepatch)
//       restore r3-r10 (regs: r2-r31), lr = r0 = pt_regs->link ; pop both frames
//       b     ftrace_caller_common
//   ftrace_caller_common:
//   ftrace_graph_call:  b ftrace_graph_stub          ; patched: b ftrace_graph_caller
//   ftrace_graph_stub:  bctr                         ; back into B after its site
//   ftrace_stub:        blr
//   ftrace_graph_caller:                              (arch/powerpc/kernel/trace/ftrace_32.S, v5.x)
//       stwu r1,-48(r1) ; save r3-r10 and ctr
//       r3 = lr (parent), r4 = ctr - 4 (ip), r5 = r1 + 48 (B's stack pointer at the site)
//       bl    prepare_ftrace_return                  ; returns where B must return to
//       lr = r0 = r3 ; A's LR save word = r3 ("Change the LR in the callers stack frame")
//       restore r3-r10, ctr ; addi r1,r1,48 ; bctr
//   return_to_handler:
//       stwu r1,-16(r1) ; save r3, r4 (the return values) ; r3 = r1 + 16
//       bl    ftrace_return_to_handler               ; returns the real return address
//       mtlr r3 ; restore r3, r4 ; addi r1,r1,16 ; blr
//
// The graph entry is the release's (TrampolineRequest::graphViaOps): v6.x's callers end in their
// own bctr and the graph tracer's callback ftrace_graph_func() rewrites pt_regs->link; before,
// both callers branch to ftrace_caller_common, whose ftrace_graph_call ftrace_32.S patched.
//
// Differences from Linux, all deliberate:
//  - Before v6.x the callers themselves were ftrace_32.S's MCOUNT_SAVE_FRAME listing; this one
//    is v6.6's entry and exit with the older graph entry behind it (the same registers reach the
//    callback and prepare_ftrace_return).
//  - function_trace_op is loaded into r5 with `lis r5,function_trace_op@ha; lwz r5,..@l(r5)`
//    when the request gives its address (the simulated kernel does); otherwise r5 is 0.
//  - MSR is not read with mfmsr: ftrace_regs_caller stores MSR_KERNEL
//  (MSR_ME|MSR_IR|MSR_DR|MSR_RI),
//    the value a kernel thread runs with; only its being non-zero matters (regs vs. no regs).
//  - No livepatch_handler / kprobe checks (ppc64 only in Linux).
//  - The C functions called from the trampolines are hypercall stubs (`trap; blr`) in the same
//    text, and return their C result in r3 as the C functions do.

#include "../common/TrampolineAssembler.h"
#include "Ppc32Target.h"

#include "Ppc32Code.h"
#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

namespace ftsim::arch {
namespace {

// struct pt_regs of ppc32 (arch/powerpc/include/uapi/asm/ptrace.h), offsets from &pt_regs.
constexpr int GPR0 = 0, NIP = 128, MSR = 132, CTR = 140, LINK = 144, XER = 148, CCR = 152;
constexpr int kPtRegsSize = 176;
constexpr int kStackFrameMinSize = 16; // STACK_FRAME_MIN_SIZE (back chain + LR save, aligned)
constexpr int kStackIntFrameRegs = 16; // STACK_INT_FRAME_REGS: pt_regs above the frame header
constexpr int kSwitchFrameSize = 192;  // SWITCH_FRAME_SIZE: header + pt_regs, 16-byte aligned
constexpr int kTotalFrame = kSwitchFrameSize + kStackFrameMinSize;
constexpr int kLrSave = 4;         // LRSAVE: the LR save word of a ppc32 frame
constexpr int kMcountInsnSize = 4; // MCOUNT_INSN_SIZE
constexpr int kGraphFrame = 48;
constexpr std::uint32_t kMsrKernel = 0x1032; // MSR_ME | MSR_IR | MSR_DR | MSR_RI
constexpr std::uint32_t kBlr = 0x4e800020u;
static_assert(kStackIntFrameRegs + kPtRegsSize <= kSwitchFrameSize);

int gpr(int n) { return kStackIntFrameRegs + GPR0 + 4 * n; }
int slot(int off) { return kStackIntFrameRegs + off; }

// A tiny emitter for exactly the instruction forms the listing uses. Calls and jumps to labels are
// I-form `bl` / `b` (the patchable sites).
class Emitter : public TrampolineAssembler {
public:
  Emitter(const Arch &arch, std::uint64_t base)
      : TrampolineAssembler(arch, base, 0, ppc32::wordBytes(kBlr)) {} // 0: an illegal word

  void dForm(unsigned opcode, int rt, int ra, int d) {
    word(opcode << 26 | static_cast<std::uint32_t>(rt) << 21 |
         static_cast<std::uint32_t>(ra) << 16 | (static_cast<std::uint32_t>(d) & 0xffffu));
  }
  void stw(int rs, int d, int ra) { dForm(36, rs, ra, d); }
  void stwu(int rs, int d, int ra) { dForm(37, rs, ra, d); }
  void lwz(int rt, int d, int ra) { dForm(32, rt, ra, d); }
  void addi(int rt, int ra, int v) { dForm(14, rt, ra, v); }
  void li(int rt, int v) { addi(rt, 0, v); }
  void lis(int rt, int v) { dForm(15, rt, 0, v); }
  // lis rt,addr@ha; lwz rt,addr@l(rt)
  // lis, then lwz; `isOpLoad`: the lwz loads function_trace_op (TrampolineCode::opLoads).
  void loadWord(int rt, std::uint64_t addr, bool isOpLoad = false) {
    const auto a = static_cast<std::uint32_t>(addr);
    lis(rt, static_cast<int>((a + 0x8000u) >> 16));
    if (isOpLoad)
      opLoad();
    lwz(rt, static_cast<std::int16_t>(a & 0xffffu), rt);
  }
  std::uint64_t functionTraceOp = 0; // TrampolineRequest::functionTraceOp
  void mr(int ra, int rs) {
    word(0x7c000378u | static_cast<std::uint32_t>(rs) << 21 | static_cast<std::uint32_t>(ra) << 16 |
         static_cast<std::uint32_t>(rs) << 11);
  }
  void mflr(int rt) { word(0x7c0802a6u | static_cast<std::uint32_t>(rt) << 21); }
  void mtlr(int rs) { word(0x7c0803a6u | static_cast<std::uint32_t>(rs) << 21); }
  void mfctr(int rt) { word(0x7c0902a6u | static_cast<std::uint32_t>(rt) << 21); }
  void mtctr(int rs) { word(0x7c0903a6u | static_cast<std::uint32_t>(rs) << 21); }
  void mfxer(int rt) { word(0x7c0102a6u | static_cast<std::uint32_t>(rt) << 21); }
  void mfcr(int rt) { word(0x7c000026u | static_cast<std::uint32_t>(rt) << 21); }
  void blr() { word(kBlr); }
  void bctr() { word(0x4e800420u); }

private:
  void word(std::uint32_t w) { emit(ppc32::wordBytes(w)); }
};

void ftraceRegsEntry(Emitter &e, bool allRegs) {
  // Save the original return address in A's stack frame. A -pg site stored it already
  // (stw r0,4(r1)); a -fpatchable-function-entry site did not, and the unwinder and
  // ftrace_graph_caller look for it there.
  e.stw(0, kLrSave, 1);
  e.stwu(1, -kStackFrameMinSize, 1); // a minimal stack frame representing B
  e.stwu(1, -kSwitchFrameSize, 1);   // our frame + pt_regs
  e.stw(0, gpr(0), 1);
  for (int r = 3; r <= 10; ++r)
    e.stw(r, gpr(r), 1);
  if (allRegs) {
    e.stw(2, gpr(2), 1);
    for (int r = 11; r <= 31; ++r)
      e.stw(r, gpr(r), 1);
  }
  e.addi(8, 1, kTotalFrame); // the previous stack pointer (r1)
  e.stw(8, gpr(1), 1);
  if (allRegs) {
    e.li(8, static_cast<int>(kMsrKernel));
    e.mfctr(9);
    e.mfxer(10);
    e.mfcr(11);
  } else {
    e.li(8, 0); // clear MSR to flag ftrace_caller versus ftrace_regs_caller
  }
  e.mflr(7);                               // the _mcount() call site out of LR
  e.stw(7, slot(NIP), 1);                  // pt_regs->nip
  e.stw(7, kSwitchFrameSize + kLrSave, 1); // and B's frame header, for the unwinder
  e.stw(0, slot(LINK), 1);                 // the parent as pt_regs->link
  if (e.functionTraceOp)
    e.loadWord(5, e.functionTraceOp, true); // op = function_trace_op
  else
    e.li(5, 0);
  e.addi(3, 7, -kMcountInsnSize); // ip = nip - 4
  e.mr(4, 0);                     // parent_ip
  e.stw(8, slot(MSR), 1);
  if (allRegs) {
    e.stw(9, slot(CTR), 1);
    e.stw(10, slot(XER), 1);
    e.stw(11, slot(CCR), 1);
  }
  e.addi(6, 1, kStackIntFrameRegs); // &pt_regs
}

void ftraceRegsExit(Emitter &e, bool allRegs) {
  e.lwz(3, slot(NIP), 1); // ctr = the possibly modified NIP
  e.mtctr(3);
  if (allRegs)
    e.lwz(2, gpr(2), 1);
  for (int r = 3; r <= 10; ++r)
    e.lwz(r, gpr(r), 1);
  if (allRegs)
    for (int r = 11; r <= 31; ++r)
      e.lwz(r, gpr(r), 1);
  e.lwz(0, slot(LINK), 1); // the possibly modified LR
  e.mtlr(0);
  e.addi(1, 1, kTotalFrame);
}

int ptRegsSlot(int ucRegId) {
  if (ucRegId >= UC_PPC_REG_0 && ucRegId <= UC_PPC_REG_31)
    return GPR0 + 4 * (ucRegId - UC_PPC_REG_0);
  switch (ucRegId) {
  case UC_PPC_REG_PC:
    return NIP;
  case UC_PPC_REG_MSR:
    return MSR;
  case UC_PPC_REG_CTR:
    return CTR;
  case UC_PPC_REG_LR:
    return LINK;
  case UC_PPC_REG_XER:
    return XER;
  case UC_PPC_REG_CR:
    return CCR;
  default:
    return -1;
  }
}

constexpr TrampolineAbi kAbi{{NIP, GPR0 + 4, ptRegsSlot}, UC_PPC_REG_3, UC_PPC_REG_3};

// ftrace_regs_caller, then ftrace_caller, each ending in a branch to ftrace_caller_common
// (ftrace_graph_call, ftrace_graph_stub) or, graph via ops (v6.x ftrace_regs_exit), in its own
// bctr; then ftrace_stub.
void ftraceCallers(Emitter &e, bool graphViaOps) {
  e.function("ftrace_regs_caller");
  ftraceRegsEntry(e, true);
  e.label("ftrace_regs_call");
  e.call("ftrace_stub");
  ftraceRegsExit(e, true);
  e.label("ftrace_regs_caller_end");
  if (graphViaOps)
    e.bctr(); // jump after _mcount site
  else
    e.jump("ftrace_caller_common");

  e.function("ftrace_caller");
  ftraceRegsEntry(e, false);
  e.label("ftrace_call");
  e.call("ftrace_stub");
  ftraceRegsExit(e, false);
  e.label("ftrace_caller_end");
  if (graphViaOps) {
    e.bctr();
    e.function("ftrace_stub");
    e.blr();
    return;
  }
  e.jump("ftrace_caller_common");

  e.label("ftrace_caller_common");
  e.label("ftrace_graph_call");
  e.jump("ftrace_graph_stub");
  e.label("ftrace_graph_stub");
  e.bctr(); // back into the traced function, after its site

  e.function("ftrace_stub");
  e.blr();
}

void ftraceGraphCaller(Emitter &e) {
  e.function("ftrace_graph_caller");
  e.stwu(1, -kGraphFrame, 1);
  for (int r = 3; r <= 10; ++r)
    e.stw(r, 4 * (r - 1), 1); // 8..36(r1)
  e.mfctr(4);
  e.stw(4, 40, 1);
  e.addi(4, 4, -kMcountInsnSize); // self_addr: the site
  e.mflr(3);                      // parent
  e.addi(5, 1, kGraphFrame);      // B's stack pointer at the site; A's LR save word is 4(r5)
  e.call("prepare_ftrace_return");
  e.mtlr(3); // where B returns to (return_to_handler while the graph tracer holds it)
  e.mr(0, 3);
  e.stw(3, kGraphFrame + kLrSave, 1); // change the LR in the caller's stack frame
  e.lwz(4, 40, 1);
  e.mtctr(4);
  for (int r = 3; r <= 10; ++r)
    e.lwz(r, 4 * (r - 1), 1);
  e.addi(1, 1, kGraphFrame);
  e.bctr();
}

void returnToHandler(Emitter &e) {
  e.function("return_to_handler");
  e.stwu(1, -16, 1);
  e.stw(3, 8, 1); // the return values
  e.stw(4, 12, 1);
  e.addi(3, 1, 16); // the stack pointer B returned with
  e.call("ftrace_return_to_handler");
  e.mtlr(3); // the real return address
  e.lwz(3, 8, 1);
  e.lwz(4, 12, 1);
  e.addi(1, 1, 16);
  e.blr();
}

AssembledListing assemble(const Arch &arch, const TrampolineRequest &request) {
  Emitter e(arch, request.base);
  e.functionTraceOp = request.functionTraceOp;
  ftraceCallers(e, request.graphViaOps);
  if (!request.graphViaOps)
    ftraceGraphCaller(e);
  returnToHandler(e);
  // lwz r11,0(r2); addi r11,r11,+-1; stw r11,0(r2): the preempt count in the thread area r2
  // points at (Linux's `current`; sim/README.md, "Regions"); r11 is volatile in a C function.
  auto countBy = [](std::int16_t delta) {
    Bytes out;
    for (std::uint32_t w :
         {0x81620000u, 0x396b0000u | static_cast<std::uint16_t>(delta), 0x91620000u})
      for (std::uint8_t b : ppc32::wordBytes(w))
        out.push_back(b);
    return out;
  };
  e.hypercallStubs(request, countBy(1), countBy(-1));
  return request.graphViaOps ? e.finishReturning(4) : e.finish("ftrace_caller_common");
}

// Per-ops trampolines on ppc32 (AssembledTrampolines::makeOpsTrampoline). Linux has none on
// powerpc (arch_ftrace_update_trampoline() is x86's, f3bea491; powerpc got per-call-site ops
// pointers with CALL_OPS much later instead), so these are x86's create_trampoline()
// (arch/x86/kernel/ftrace.c) ported to the ppc32 listing: a copy of ftrace_caller (or
// ftrace_regs_caller) up to and including its closing `b ftrace_caller_common`, that branch
// re-encoded for the copy's address, and the copied ftrace_call `bl` the ops' own callback stub at
// the tail instead of ftrace_stub. The copy has no other PC-relative instruction (the save/restore
// is r1-relative).
//
// Reach: every branch here and the sites' `bl` to the trampoline are I-form, LI 24 bits, ±32 MiB
// (Power ISA v3.1 Book I 2.4). Linux's module_alloc() on powerpc first allocates within 32 MiB
// of _etext for exactly this reason (2ec13df16704, v5.13), and the simulated kernel places its
// trampoline memory there; a base out of reach is an error, never a truncated branch (a site
// would otherwise need a long-branch stub per trampoline, as modules have for ftrace_caller in
// module_32.c).
class Ppc32Trampolines final : public AssembledTrampolines {
public:
  Ppc32Trampolines(const Arch &arch, const TrampolineRequest &request)
      : AssembledTrampolines(arch, assemble(arch, request), kAbi) {}

  // At a trace-function stub: r3 = ip, r4 = parent_ip, r6 = &pt_regs (MSR 0 from ftrace_caller).
  // At the prepare_ftrace_return stub: r3 = parent, r4 = self_addr, r5 = B's stack pointer at the
  // site, whose 4(r5) is A's LR save word. prepare_ftrace_return returns the new parent in r3
  // (setReturnValue); the trampoline writes it to LR and to that word.
  CallbackArgs argsOf(const GuestContext &cpu) const override {
    CallbackArgs args;
    const bool prepare = code().prepareReturnStub && cpu.pc() >= code().prepareReturnStub &&
                         cpu.pc() < code().prepareReturnStub + 16;
    if (prepare) {
      args.ip = cpu.reg(UC_PPC_REG_4);
      args.parentIp = cpu.reg(UC_PPC_REG_3);
      args.parentSlot = cpu.reg(UC_PPC_REG_5) + kLrSave;
      return args;
    }
    args.ip = cpu.reg(UC_PPC_REG_3);
    args.parentIp = cpu.reg(UC_PPC_REG_4);
    args.regs = cpu.reg(UC_PPC_REG_6);
    args.op = cpu.reg(UC_PPC_REG_5);
    std::uint8_t msr[4] = {};
    args.fullRegs = cpu.readMemory(args.regs + MSR, msr) && ppc32::wordOf(msr) != 0;
    return args;
  }

  // ftrace_graph_func(): fregs->regs.link, which ftrace_regs_exit moves into LR before the bctr.
  std::uint64_t graphReturnSlot(GuestContext &, std::uint64_t regs) const override {
    return regs + LINK;
  }
};

} // namespace

std::unique_ptr<FtraceTrampolines> makePpc32Trampolines(const Arch &arch,
                                                        const TrampolineRequest &request) {
  if (arch.name() != "ppc32")
    FTSIM_PANIC("ppc32 trampolines requested for {}", arch.name());
  return std::make_unique<Ppc32Trampolines>(arch, request);
}

} // namespace ftsim::arch
