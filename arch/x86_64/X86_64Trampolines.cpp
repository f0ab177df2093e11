// ftrace's x86-64 trampolines, generated as machine code at boot. The listing follows
// arch/x86/kernel/ftrace_64.S of Linux 5.x (before ftrace_regs became the callback argument and
// before the graph entry moved into an ftrace_ops), including the mcount flavour it supported
// until 562e14f72292 "ftrace/x86: Remove mcount support":
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
//  - function_trace_op is not loaded into %rdx by the trampoline (`movq function_trace_op(%rip)`):
//    the engine keeps it as host state published as one event, and the callback's hypercall reads
//    it when it runs. The window between that mov and the call is therefore not modelled.
//  - No CONFIG_FRAME_POINTER frame (MCOUNT_FRAME_SIZE = 0) and no ORIG_RAX direct-call return
//    (direct trampolines are not modelled).
//  - The C functions called from the trampolines are hypercall stubs (int3; ret) in the same text.

#include "X86_64Target.h"

#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

#include <climits>
#include <map>

namespace ftsim::arch {
namespace {

// struct pt_regs (arch/x86/include/asm/ptrace.h) offsets, as ftrace_64.S names them.
constexpr int R15 = 0, R14 = 8, R13 = 16, R12 = 24, RBP = 32, RBX = 40, R11 = 48, R10 = 56, R9 = 64,
              R8 = 72, RAX = 80, RCX = 88, RDX = 96, RSI = 104, RDI = 112, ORIG_RAX = 120,
              RIP = 128, CS = 136, EFLAGS = 144, RSP = 152, SS = 160;
constexpr int kPtRegsSize = 168;
constexpr int kMcountRegSize = kPtRegsSize; // MCOUNT_REG_SIZE without a frame-pointer frame
constexpr int kMcountInsnSize = 5;          // MCOUNT_INSN_SIZE
constexpr std::uint64_t kKernelCs = 0x10;   // __KERNEL_CS
constexpr std::uint64_t kKernelDs = 0x18;   // __KERNEL_DS

enum Reg { rax = 0, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };

// A tiny emitter for exactly the instruction forms ftrace_64.S uses.
class Emitter {
public:
  explicit Emitter(std::uint64_t base) : base_(base) {}

  std::uint64_t here() const { return base_ + bytes_.size(); }
  void align(unsigned n, std::uint8_t fill) {
    while (bytes_.size() % n)
      bytes_.push_back(fill);
  }
  void label(const std::string &name) { labels_[name] = here(); }
  std::uint64_t at(const std::string &name) const {
    auto it = labels_.find(name);
    if (it == labels_.end())
      FTSIM_PANIC("trampoline label {} undefined", name);
    return it->second;
  }

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
  void pushfq() { byte(0x9c); }
  void popfq() { byte(0x9d); }
  void ret() { byte(0xc3); }
  void int3() { byte(0xcc); }
  void jmpIndirect(Reg target) { // jmp *%reg (JMP_NOSPEC without retpolines)
    if (target >= r8)
      byte(0x41);
    byte(0xff);
    byte(0xe0 | (target & 7));
  }
  // 5-byte call / jmp rel32 to a label resolved in finish() (never relaxed, like the weak
  // ftrace_graph_call label that "keeps gas from relaxing the jumps").
  void call(const std::string &target) { rel32(0xe8, target); }
  void jmp(const std::string &target) { rel32(0xe9, target); }

  Bytes finish() {
    for (const auto &[offset, target] : fixups_) {
      const std::int64_t rel =
          static_cast<std::int64_t>(at(target)) - static_cast<std::int64_t>(base_ + offset + 4);
      for (unsigned i = 0; i < 4; ++i)
        bytes_[offset + i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(rel) >> (8 * i));
    }
    return bytes_;
  }

private:
  void byte(std::uint8_t b) { bytes_.push_back(b); }
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
  void rel32(std::uint8_t opcode, const std::string &target) {
    byte(opcode);
    fixups_.emplace_back(bytes_.size(), target);
    imm32(0);
  }

  std::uint64_t base_;
  Bytes bytes_;
  std::map<std::string, std::uint64_t> labels_;
  std::vector<std::pair<std::size_t, std::string>> fixups_;
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

void function(Emitter &e, const std::string &name) {
  e.align(16, 0xcc);
  e.label(name);
}

int ucRegister(Reg r) {
  static const int ids[] = {UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
                            UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
                            UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
                            UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15};
  return ids[r];
}

// pt_regs on the guest stack seen as a GuestContext.
class PtRegsContext final : public GuestContext {
public:
  PtRegsContext(GuestContext &cpu, std::uint64_t regs) : cpu_(cpu), regs_(regs) {}
  unsigned cpu() const override { return cpu_.cpu(); }
  int task() const override { return cpu_.task(); }
  std::uint64_t pc() const override { return load(RIP); }
  void setPc(std::uint64_t pc) override { store(RIP, pc); }
  std::uint64_t sp() const override { return load(RSP); }
  void setSp(std::uint64_t sp) override { store(RSP, sp); }
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
  std::uint64_t load(int off) const {
    std::uint8_t b[8] = {};
    if (!cpu_.readMemory(regs_ + off, b))
      FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
    std::uint64_t v = 0;
    for (unsigned i = 0; i < 8; ++i)
      v |= std::uint64_t{b[i]} << (8 * i);
    return v;
  }
  void store(int off, std::uint64_t v) {
    std::uint8_t b[8];
    for (unsigned i = 0; i < 8; ++i)
      b[i] = static_cast<std::uint8_t>(v >> (8 * i));
    if (!cpu_.writeMemory(regs_ + off, b))
      FTSIM_PANIC("pt_regs at {:#x} is not mapped", regs_);
  }

  GuestContext &cpu_;
  std::uint64_t regs_;
};

class X86_64Trampolines final : public FtraceTrampolines {
public:
  X86_64Trampolines(const Arch &arch, const TrampolineRequest &request) {
    if (request.base % 4096)
      fatal("trampoline base {:#x} is not page aligned", request.base);
    Emitter e(request.base);
    const SiteFlavour flavour = request.flavour;

    function(e, "ftrace_caller");
    saveMcountRegs(e, flavour, 0);
    // Stack - skipping return address of ftrace_caller.
    e.lea(rcx, rsp, kMcountRegSize + 8);
    e.movStore(rcx, rsp, RSP);
    e.lea(rcx, rsp, 0); // regs go into 4th parameter
    e.movImmMem(rsp, CS, 0);
    e.label("ftrace_call");
    e.call("ftrace_stub");
    // Handlers can change the RIP.
    e.movLoad(rax, rsp, RIP);
    e.movStore(rax, rsp, kMcountRegSize);
    restoreMcountRegs(e);
    e.label("ftrace_caller_end");
    e.jmp("ftrace_epilogue");

    e.label("ftrace_epilogue");
    e.label("ftrace_graph_call");
    e.jmp("ftrace_stub");
    e.label("ftrace_stub");
    e.ret();

    function(e, "ftrace_regs_caller");
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
    e.jmp("ftrace_epilogue");

    function(e, "ftrace_graph_caller");
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

    function(e, "return_to_handler");
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

    auto stub = [&](const std::string &name) {
      function(e, name);
      e.int3();
      e.ret();
      return e.at(name);
    };
    // ftrace_ops_list_func, optionally in two hypercalls: the first reads ftrace_ops_list
    // (rcu_dereference_raw), the second walks what it read (do_for_each_ftrace_op). Linux walks
    // with preemption disabled; another CPU can still unlink and free an ops between the read and
    // the walk, which is why ftrace_shutdown() must wait even when no code changed (0e792b89e680).
    function(e, "ftrace_ops_list_func");
    e.int3();
    if (request.splitListFunction) {
      e.label("ftrace_ops_list_walk");
      e.int3();
      code_.listFuncWalkStub = e.at("ftrace_ops_list_walk");
    }
    e.ret();
    code_.listFuncStub = e.at("ftrace_ops_list_func");
    code_.prepareReturnStub = stub("prepare_ftrace_return");
    code_.returnHandlerStub = stub("ftrace_return_to_handler");
    for (unsigned i = 0; i < request.callbackStubs; ++i)
      code_.callbackStubs.push_back(stub(fmt::format("ftrace_callback_{}", i)));
    e.align(16, 0xcc);

    code_.base = request.base;
    code_.bytes = e.finish();
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
    epilogue_ = e.at("ftrace_epilogue");

    // Function symbols, sized to the next one (kallsyms for %ps of trampoline addresses).
    std::vector<std::pair<std::uint64_t, std::string>> functions = {
        {code_.ftraceCaller, "ftrace_caller"},
        {e.at("ftrace_epilogue"), "ftrace_epilogue"},
        {code_.ftraceRegsCaller, "ftrace_regs_caller"},
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

  CallbackArgs argsOf(const GuestContext &cpu) const override {
    CallbackArgs args;
    args.ip = cpu.reg(UC_X86_REG_RDI);
    args.parentIp = cpu.reg(UC_X86_REG_RSI);
    args.parentSlot = cpu.reg(UC_X86_REG_RSI);
    args.regs = cpu.reg(UC_X86_REG_RCX);
    std::uint8_t cs[8] = {};
    args.fullRegs = cpu.readMemory(args.regs + CS, cs) && cs[0] == kKernelCs;
    return args;
  }

  std::uint64_t returnFramePointer(const GuestContext &cpu) const override {
    return cpu.reg(UC_X86_REG_RDI);
  }

  std::unique_ptr<GuestContext> ptRegs(GuestContext &cpu, std::uint64_t regs) const override {
    return std::make_unique<PtRegsContext>(cpu, regs);
  }

  void setReturnValue(GuestContext &cpu, std::uint64_t value) const override {
    cpu.setReg(ucRegister(rax), value);
  }

  bool hasOpsTrampolines() const override { return true; }

  std::uint64_t opsTrampolineSize(bool saveRegs) const override {
    return opsTrampolineLayout(saveRegs).size;
  }

  // create_trampoline() (arch/x86/kernel/ftrace.c, Linux 4.x-5.8): copy ftrace_caller (or
  // ftrace_regs_caller) up to its end label, append "jmp ftrace_epilogue" (the copy cannot reach
  // the shared epilogue by falling through), and make the copied ftrace_call call the ops' own
  // callback (ftrace_ops_get_func(ops)) instead of ftrace_stub. The copy holds no other
  // PC-relative instruction, so nothing else needs relocating.
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
    out.bytes.resize(layout.size, 0xcc);
    out.callSite = base + (call - start);
    out.callbackStub = base + layout.stub;
    auto rel32 = [&](std::uint64_t at, std::uint8_t opcode, std::uint64_t target) {
      const std::int64_t rel =
          static_cast<std::int64_t>(target) - static_cast<std::int64_t>(at + kMcountInsnSize);
      if (rel < INT32_MIN || rel > INT32_MAX)
        fatal("ops trampoline at {:#x} is out of rel32 reach of {:#x}", base, target);
      const std::size_t off = at - base;
      out.bytes[off] = opcode;
      for (unsigned i = 0; i < 4; ++i)
        out.bytes[off + 1 + i] =
            static_cast<std::uint8_t>(static_cast<std::uint64_t>(rel) >> (8 * i));
    };
    rel32(out.callSite, 0xe8, out.callbackStub);
    rel32(base + layout.copied, 0xe9, epilogue_);
    out.bytes[layout.stub] = 0xcc; // int3: the ops' callback
    out.bytes[layout.stub + 1] = 0xc3;
    return out;
  }

private:
  struct Layout {
    std::uint64_t copied = 0; // bytes of ftrace_caller copied
    std::uint64_t stub = 0;   // offset of the callback stub
    std::uint64_t size = 0;
  };
  Layout opsTrampolineLayout(bool saveRegs) const {
    Layout l;
    l.copied = saveRegs ? regsCallerEnd_ - code_.ftraceRegsCaller : callerEnd_ - code_.ftraceCaller;
    l.stub = (l.copied + kMcountInsnSize + 15) / 16 * 16;
    l.size = (l.stub + 2 + 15) / 16 * 16;
    return l;
  }

  TrampolineCode code_;
  std::uint64_t callerEnd_ = 0;
  std::uint64_t regsCallerEnd_ = 0;
  std::uint64_t epilogue_ = 0;
};

} // namespace

std::unique_ptr<FtraceTrampolines> makeX86_64Trampolines(const Arch &arch,
                                                         const TrampolineRequest &request) {
  return std::make_unique<X86_64Trampolines>(arch, request);
}

} // namespace ftsim::arch
