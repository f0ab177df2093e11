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
// Differences from Linux, all deliberate:
//  - The graph entry is the ftrace_graph_call site of ftrace_32.S before v6.x (the interface's
//    ftrace_graph_call / ftrace_graph_caller), not the ftrace_graph_func ops of v6.x.
//  - function_trace_op is not loaded into r5 (`lis r3,function_trace_op@ha; lwz r5,...`): the
//    engine keeps it as host state published as one event; r5 is 0.
//  - MSR is not read with mfmsr: ftrace_regs_caller stores MSR_KERNEL
//  (MSR_ME|MSR_IR|MSR_DR|MSR_RI),
//    the value a kernel thread runs with; only its being non-zero matters (regs vs. no regs).
//  - No livepatch_handler / kprobe checks (ppc64 only in Linux).
//  - The C functions called from the trampolines are hypercall stubs (`trap; blr`) in the same
//    text, and return their C result in r3 as the C functions do.

#include "Ppc32Target.h"

#include "Ppc32Code.h"
#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

#include <map>

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
static_assert(kStackIntFrameRegs + kPtRegsSize <= kSwitchFrameSize);

int gpr(int n) { return kStackIntFrameRegs + GPR0 + 4 * n; }
int slot(int off) { return kStackIntFrameRegs + off; }

// A tiny emitter for exactly the instruction forms the listing uses.
class Emitter {
public:
  explicit Emitter(std::uint64_t base) : base_(base) {}

  std::uint64_t here() const { return base_ + 4 * words_.size(); }
  void align(unsigned n) {
    while ((4 * words_.size()) % n)
      words_.push_back(0); // an illegal word: never executed
  }
  void label(const std::string &name) { labels_[name] = here(); }
  std::uint64_t at(const std::string &name) const {
    auto it = labels_.find(name);
    if (it == labels_.end())
      FTSIM_PANIC("trampoline label {} undefined", name);
    return it->second;
  }

  void dForm(unsigned opcode, int rt, int ra, int d) {
    word(opcode << 26 | static_cast<std::uint32_t>(rt) << 21 |
         static_cast<std::uint32_t>(ra) << 16 | (static_cast<std::uint32_t>(d) & 0xffffu));
  }
  void stw(int rs, int d, int ra) { dForm(36, rs, ra, d); }
  void stwu(int rs, int d, int ra) { dForm(37, rs, ra, d); }
  void lwz(int rt, int d, int ra) { dForm(32, rt, ra, d); }
  void addi(int rt, int ra, int v) { dForm(14, rt, ra, v); }
  void li(int rt, int v) { addi(rt, 0, v); }
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
  void blr() { word(0x4e800020u); }
  void bctr() { word(0x4e800420u); }
  void trap() { word(0x7fe00008u); }
  // b / bl to a label resolved in finish() (an I-form branch: the patchable sites).
  void b(const std::string &target) { branch(target, false); }
  void bl(const std::string &target) { branch(target, true); }

  Bytes finish(const Arch &arch) {
    for (const auto &[index, fixup] : fixups_) {
      const std::uint64_t site = base_ + 4 * index;
      EncodeResult r =
          fixup.second ? arch.call(site, at(fixup.first)) : arch.jump(site, at(fixup.first));
      if (!r.ok)
        FTSIM_PANIC("trampoline branch to {}: {}", fixup.first, r.error);
      words_[index] = ppc32::wordOf(r.bytes);
    }
    Bytes out;
    for (std::uint32_t w : words_) {
      Bytes b = ppc32::wordBytes(w);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  }

private:
  void word(std::uint32_t w) { words_.push_back(w); }
  void branch(const std::string &target, bool link) {
    fixups_.emplace_back(words_.size(), std::make_pair(target, link));
    words_.push_back(0);
  }

  std::uint64_t base_;
  std::vector<std::uint32_t> words_;
  std::map<std::string, std::uint64_t> labels_;
  std::vector<std::pair<std::size_t, std::pair<std::string, bool>>> fixups_;
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
  e.li(5, 0);                              // function_trace_op: host state (see above)
  e.addi(3, 7, -kMcountInsnSize);          // ip = nip - 4
  e.mr(4, 0);                              // parent_ip
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
  e.b("ftrace_caller_common");
}

void function(Emitter &e, const std::string &name) {
  e.align(16);
  e.label(name);
}

// pt_regs on the guest stack (big-endian words) seen as a GuestContext.
class PtRegsContext final : public GuestContext {
public:
  PtRegsContext(GuestContext &cpu, std::uint64_t regs) : cpu_(cpu), regs_(regs) {}
  unsigned cpu() const override { return cpu_.cpu(); }
  int task() const override { return cpu_.task(); }
  std::uint64_t pc() const override { return load(NIP); }
  void setPc(std::uint64_t pc) override { store(NIP, pc); }
  std::uint64_t sp() const override { return load(GPR0 + 4); }
  void setSp(std::uint64_t sp) override { store(GPR0 + 4, sp); }
  std::uint64_t reg(int ucRegId) const override {
    if (int off = offsetOf(ucRegId); off >= 0)
      return load(off);
    return cpu_.reg(ucRegId);
  }
  void setReg(int ucRegId, std::uint64_t value) override {
    const int off = offsetOf(ucRegId);
    if (off < 0)
      FTSIM_PANIC("pt_regs has no slot for unicorn register {}", ucRegId);
    store(off, value);
  }
  bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const override {
    return cpu_.readMemory(addr, out);
  }
  bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    return cpu_.writeMemory(addr, bytes);
  }

private:
  static int offsetOf(int ucRegId) {
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
  std::uint64_t load(int off) const {
    std::uint8_t b[4] = {};
    if (!cpu_.readMemory(regs_ + off, b))
      FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
    return ppc32::wordOf(b);
  }
  void store(int off, std::uint64_t v) {
    const Bytes b = ppc32::wordBytes(static_cast<std::uint32_t>(v));
    if (!cpu_.writeMemory(regs_ + off, b))
      FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
  }

  GuestContext &cpu_;
  std::uint64_t regs_;
};

class Ppc32Trampolines final : public FtraceTrampolines {
public:
  Ppc32Trampolines(const Arch &arch, const TrampolineRequest &request) : arch_(arch) {
    if (request.base % 4096)
      fatal("trampoline base {:#x} is not page aligned", request.base);
    Emitter e(request.base);

    function(e, "ftrace_regs_caller");
    ftraceRegsEntry(e, true);
    e.label("ftrace_regs_call");
    e.bl("ftrace_stub");
    ftraceRegsExit(e, true);
    e.label("ftrace_regs_caller_end");

    function(e, "ftrace_caller");
    ftraceRegsEntry(e, false);
    e.label("ftrace_call");
    e.bl("ftrace_stub");
    ftraceRegsExit(e, false);
    e.label("ftrace_caller_end");

    e.label("ftrace_caller_common");
    e.label("ftrace_graph_call");
    e.b("ftrace_graph_stub");
    e.label("ftrace_graph_stub");
    e.bctr(); // back into the traced function, after its site

    function(e, "ftrace_stub");
    e.blr();

    function(e, "ftrace_graph_caller");
    e.stwu(1, -kGraphFrame, 1);
    for (int r = 3; r <= 10; ++r)
      e.stw(r, 4 * (r - 1), 1); // 8..36(r1)
    e.mfctr(4);
    e.stw(4, 40, 1);
    e.addi(4, 4, -kMcountInsnSize); // self_addr: the site
    e.mflr(3);                      // parent
    e.addi(5, 1, kGraphFrame);      // B's stack pointer at the site; A's LR save word is 4(r5)
    e.bl("prepare_ftrace_return");
    e.mtlr(3); // where B returns to (return_to_handler while the graph tracer holds it)
    e.mr(0, 3);
    e.stw(3, kGraphFrame + kLrSave, 1); // change the LR in the caller's stack frame
    e.lwz(4, 40, 1);
    e.mtctr(4);
    for (int r = 3; r <= 10; ++r)
      e.lwz(r, 4 * (r - 1), 1);
    e.addi(1, 1, kGraphFrame);
    e.bctr();

    function(e, "return_to_handler");
    e.stwu(1, -16, 1);
    e.stw(3, 8, 1); // the return values
    e.stw(4, 12, 1);
    e.addi(3, 1, 16); // the stack pointer B returned with
    e.bl("ftrace_return_to_handler");
    e.mtlr(3); // the real return address
    e.lwz(3, 8, 1);
    e.lwz(4, 12, 1);
    e.addi(1, 1, 16);
    e.blr();

    auto stub = [&](const std::string &name) {
      function(e, name);
      e.trap();
      e.blr();
      return e.at(name);
    };
    // ftrace_ops_list_func, optionally in two hypercalls: the first reads ftrace_ops_list, the
    // second walks what it read (Trampolines.h; the window of 0e792b89e680).
    function(e, "ftrace_ops_list_func");
    e.trap();
    if (request.splitListFunction) {
      e.label("ftrace_ops_list_walk");
      e.trap();
      code_.listFuncWalkStub = e.at("ftrace_ops_list_walk");
    }
    e.blr();
    code_.listFuncStub = e.at("ftrace_ops_list_func");
    code_.prepareReturnStub = stub("prepare_ftrace_return");
    code_.returnHandlerStub = stub("ftrace_return_to_handler");
    for (unsigned i = 0; i < request.callbackStubs; ++i)
      code_.callbackStubs.push_back(stub(fmt::format("ftrace_callback_{}", i)));
    e.align(16);

    code_.base = request.base;
    code_.bytes = e.finish(arch);
    code_.ftraceCaller = e.at("ftrace_caller");
    code_.ftraceCall = e.at("ftrace_call");
    code_.ftraceRegsCaller = e.at("ftrace_regs_caller");
    code_.ftraceRegsCall = e.at("ftrace_regs_call");
    code_.ftraceStub = e.at("ftrace_stub");
    code_.ftraceGraphCall = e.at("ftrace_graph_call");
    code_.ftraceGraphCaller = e.at("ftrace_graph_caller");
    code_.returnToHandler = e.at("return_to_handler");
    code_.siteSize = arch.siteSize();
    callerEnd_ = e.at("ftrace_caller_end");
    regsCallerEnd_ = e.at("ftrace_regs_caller_end");
    callerCommon_ = e.at("ftrace_caller_common");

    std::vector<std::pair<std::uint64_t, std::string>> functions = {
        {code_.ftraceRegsCaller, "ftrace_regs_caller"},
        {code_.ftraceCaller, "ftrace_caller"},
        {code_.ftraceStub, "ftrace_stub"},
        {code_.ftraceGraphCaller, "ftrace_graph_caller"},
        {code_.returnToHandler, "return_to_handler"},
        {code_.listFuncStub, "ftrace_ops_list_func"},
        {code_.prepareReturnStub, "prepare_ftrace_return"},
        {code_.returnHandlerStub, "ftrace_return_to_handler"}};
    for (unsigned i = 0; i < code_.callbackStubs.size(); ++i)
      functions.emplace_back(code_.callbackStubs[i], fmt::format("ftrace_callback_{}", i));
    const std::uint64_t end = code_.base + code_.bytes.size();
    for (std::size_t i = 0; i < functions.size(); ++i) {
      const std::uint64_t next = i + 1 < functions.size() ? functions[i + 1].first : end;
      code_.symbols.push_back(
          {functions[i].second, functions[i].first, next - functions[i].first, true, false, false});
    }
  }

  const TrampolineCode &code() const override { return code_; }

  // At a trace-function stub: r3 = ip, r4 = parent_ip, r6 = &pt_regs (MSR 0 from ftrace_caller).
  // At the prepare_ftrace_return stub: r3 = parent, r4 = self_addr, r5 = B's stack pointer at the
  // site, whose 4(r5) is A's LR save word. prepare_ftrace_return returns the new parent in r3
  // (setReturnValue); the trampoline writes it to LR and to that word.
  CallbackArgs argsOf(const GuestContext &cpu) const override {
    CallbackArgs args;
    const bool prepare =
        cpu.pc() >= code_.prepareReturnStub && cpu.pc() < code_.prepareReturnStub + 16;
    if (prepare) {
      args.ip = cpu.reg(UC_PPC_REG_4);
      args.parentIp = cpu.reg(UC_PPC_REG_3);
      args.parentSlot = cpu.reg(UC_PPC_REG_5) + kLrSave;
      return args;
    }
    args.ip = cpu.reg(UC_PPC_REG_3);
    args.parentIp = cpu.reg(UC_PPC_REG_4);
    args.regs = cpu.reg(UC_PPC_REG_6);
    std::uint8_t msr[4] = {};
    args.fullRegs = cpu.readMemory(args.regs + MSR, msr) && ppc32::wordOf(msr) != 0;
    return args;
  }

  std::uint64_t returnFramePointer(const GuestContext &cpu) const override {
    return cpu.reg(UC_PPC_REG_3);
  }

  std::unique_ptr<GuestContext> ptRegs(GuestContext &cpu, std::uint64_t regs) const override {
    return std::make_unique<PtRegsContext>(cpu, regs);
  }

  void setReturnValue(GuestContext &cpu, std::uint64_t value) const override {
    cpu.setReg(UC_PPC_REG_3, value);
  }

  bool hasOpsTrampolines() const override { return true; }

  std::uint64_t opsTrampolineSize(bool saveRegs) const override {
    return opsTrampolineLayout(saveRegs).size;
  }

  // A per-ops trampoline on ppc32. Linux has none on powerpc (arch_ftrace_update_trampoline() is
  // x86's, f3bea491; powerpc got per-call-site ops pointers with CALL_OPS much later instead), so
  // this is x86's create_trampoline() (arch/x86/kernel/ftrace.c) ported to the ppc32 listing:
  // copy ftrace_caller (or ftrace_regs_caller) up to and including its closing
  // `b ftrace_caller_common`, re-encode that branch for the copy's address, and make the copied
  // ftrace_call `bl` the ops' own callback stub at the tail instead of ftrace_stub. The copy has
  // no other PC-relative instruction (the save/restore is r1-relative).
  //
  // Reach: every branch here and the sites' `bl` to the trampoline are I-form, LI 24 bits, ±32 MiB
  // (Power ISA v3.1 Book I 2.4). Linux's module_alloc() on powerpc first allocates within 32 MiB
  // of _etext for exactly this reason (2ec13df16704, v5.13), and the simulated kernel places its
  // trampoline memory there; a base out of reach is an error, never a truncated branch (a site
  // would otherwise need a long-branch stub per trampoline, as modules have for ftrace_caller in
  // module_32.c).
  OpsTrampolineCode makeOpsTrampoline(std::uint64_t base, bool saveRegs) const override {
    if (base % 64)
      fatal("ops trampoline base {:#x} is not 64-byte aligned", base);
    const Layout layout = opsTrampolineLayout(saveRegs);
    const std::uint64_t start = saveRegs ? code_.ftraceRegsCaller : code_.ftraceCaller;
    const std::uint64_t call = saveRegs ? code_.ftraceRegsCall : code_.ftraceCall;
    OpsTrampolineCode out;
    out.base = base;
    out.saveRegs = saveRegs;
    out.bytes.assign(code_.bytes.begin() + static_cast<std::ptrdiff_t>(start - code_.base),
                     code_.bytes.begin() +
                         static_cast<std::ptrdiff_t>(start - code_.base + layout.copied));
    out.bytes.resize(layout.size, 0); // 0x00000000: an illegal word, never executed
    out.callSite = base + (call - start);
    out.callbackStub = base + layout.stub;
    auto put = [&](std::uint64_t at, const EncodeResult &r, const char *what) {
      if (!r.ok)
        fatal("ops trampoline at {:#x}: {} {}", base, what, r.error);
      std::copy(r.bytes.begin(), r.bytes.end(),
                out.bytes.begin() + static_cast<std::ptrdiff_t>(at - base));
    };
    put(out.callSite, arch_.call(out.callSite, out.callbackStub), "bl to its callback:");
    const std::uint64_t back = base + layout.copied - 4;
    put(back, arch_.jump(back, callerCommon_), "b ftrace_caller_common:");
    put(out.callbackStub, EncodeResult{ppc32::wordBytes(0x7fe00008u), true, {}}, "");
    put(out.callbackStub + 4, EncodeResult{ppc32::wordBytes(0x4e800020u), true, {}}, "");
    return out;
  }

private:
  struct Layout {
    std::uint64_t copied = 0; // bytes of ftrace_caller copied, its closing branch included
    std::uint64_t stub = 0;   // offset of the callback stub (trap; blr)
    std::uint64_t size = 0;
  };
  Layout opsTrampolineLayout(bool saveRegs) const {
    Layout l;
    l.copied = saveRegs ? regsCallerEnd_ - code_.ftraceRegsCaller : callerEnd_ - code_.ftraceCaller;
    l.stub = (l.copied + 15) / 16 * 16;
    l.size = (l.stub + 8 + 15) / 16 * 16;
    return l;
  }

  const Arch &arch_;
  TrampolineCode code_;
  std::uint64_t callerEnd_ = 0;
  std::uint64_t regsCallerEnd_ = 0;
  std::uint64_t callerCommon_ = 0;
};

} // namespace

std::unique_ptr<FtraceTrampolines> makePpc32Trampolines(const Arch &arch,
                                                        const TrampolineRequest &request) {
  if (arch.name() != "ppc32")
    FTSIM_PANIC("ppc32 trampolines requested for {}", arch.name());
  return std::make_unique<Ppc32Trampolines>(arch, request);
}

} // namespace ftsim::arch
