#pragma once
// The ISA-neutral half of the targets' ftrace trampolines (x86_64/X86_64Trampolines.cpp,
// ppc32/Ppc32Trampolines.cpp). A target writes its listing into a TrampolineAssembler with its own
// instruction forms; the assembler keeps the labels and the kallsyms symbols, encodes the direct
// branches between labels with the Arch's call/jump, and appends the hypercall stubs.
// AssembledTrampolines then serves the finished code and makes the per-ops trampolines: copies of
// ftrace_caller or ftrace_regs_caller whose patchable call and closing jump are re-encoded for the
// copy's address.
//
// The listing names its labels as ftrace_64.S does: ftrace_caller, ftrace_call, ftrace_regs_caller,
// ftrace_regs_call, ftrace_stub, ftrace_graph_call, ftrace_graph_caller, return_to_handler, and
// ftrace_caller_end / ftrace_regs_caller_end at the closing jump of each caller.

#include "PtRegsContext.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Trampolines.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ftsim::arch {

// What a per-ops trampoline is copied from, besides the shared trampolines' code.
struct OpsTrampolineSource {
  std::uint64_t callerEnd = 0;     // ftrace_caller's closing jump or return
  std::uint64_t regsCallerEnd = 0; // ftrace_regs_caller's closing jump or return
  std::uint64_t tail = 0;          // where both jump (the shared epilogue); 0: they return
  unsigned closingSize = 0;        // bytes of the closing instruction
  std::uint8_t fill = 0;           // padding, never executed
  Bytes callbackStub;              // the ISA's hypercall stub: trap, return
};

struct AssembledListing {
  TrampolineCode code;
  OpsTrampolineSource ops;
};

class TrampolineAssembler {
public:
  // `base` must be page aligned (FatalError). `fill` pads alignment gaps; Arch::trap() and `ret`
  // (the ISA's return) make the hypercall stubs.
  TrampolineAssembler(const Arch &arch, std::uint64_t base, std::uint8_t fill, Bytes ret);

  std::uint64_t here() const { return base_ + bytes_.size(); }
  void align(unsigned n);
  void label(const std::string &name) { labels_[name] = here(); }
  // The instruction at here() loads function_trace_op (TrampolineCode::opLoads).
  void opLoad() { opLoads_.push_back(here()); }
  // A kallsyms function symbol at here(), sized up to the next one.
  void symbol(const std::string &name);
  // A function: 16-byte aligned, with its symbol.
  void function(const std::string &name);
  std::uint64_t at(const std::string &name) const;

  // A call / jump to a label, encoded with Arch::call / Arch::jump once every label is known.
  void call(const std::string &target) { branch(target, true); }
  void jump(const std::string &target) { branch(target, false); }

  // The C functions as hypercall stubs (trap; return), 16-byte aligned: ftrace_ops_list_func
  // (with its second hypercall ftrace_ops_list_walk when the request splits it, both inside a
  // non-preemptible region),
  // prepare_ftrace_return, ftrace_return_to_handler and request.callbackStubs ftrace_callback_<i>.
  // `preemptDisable` / `preemptEnable`: the ISA's increment and decrement of the preempt count
  // (sim/README.md, "Regions") around a split list function's read and walk.
  void hypercallStubs(const TrampolineRequest &request,
                      std::span<const std::uint8_t> preemptDisable,
                      std::span<const std::uint8_t> preemptEnable);

  // The finished trampolines; `tail` is the label the callers' closing jumps go to (graph entry
  // by the patched ftrace_graph_call).
  AssembledListing finish(const std::string &tail);
  // The same for callers that end in a return of `closingSize` bytes (graph entry via ops).
  AssembledListing finishReturning(unsigned closingSize);

protected:
  void emit(std::span<const std::uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  void emit(std::initializer_list<std::uint8_t> bytes) {
    emit(std::span<const std::uint8_t>(bytes.begin(), bytes.size()));
  }

private:
  void branch(const std::string &target, bool link);
  AssembledListing finishListing();
  std::uint64_t atIfAny(const std::string &name) const;
  std::uint64_t stub(const std::string &name);

  const Arch &arch_;
  std::uint64_t base_;
  std::uint8_t fill_;
  Bytes ret_;
  Bytes bytes_;
  std::map<std::string, std::uint64_t> labels_;
  std::vector<std::uint64_t> opLoads_;
  std::vector<std::pair<std::string, std::uint64_t>> symbols_;
  struct Branch {
    std::size_t offset;
    std::string target;
    bool link;
  };
  std::vector<Branch> branches_;
  TrampolineCode code_; // the stubs until finish()
};

// Where the C functions called from the trampolines find their arguments and leave their result.
struct TrampolineAbi {
  PtRegsLayout ptRegs;
  int firstArgReg = 0;    // Unicorn id: ftrace_return_to_handler's frame pointer
  int returnValueReg = 0; // Unicorn id: a stub's C return value
};

// The shared trampolines of an assembled listing, with per-ops trampolines. A target derives and
// reads a trace or graph callback's arguments (argsOf).
class AssembledTrampolines : public FtraceTrampolines {
public:
  const TrampolineCode &code() const override { return code_; }
  std::uint64_t returnFramePointer(const GuestContext &cpu) const override {
    return cpu.reg(abi_.firstArgReg);
  }
  std::unique_ptr<GuestContext> ptRegs(GuestContext &cpu, std::uint64_t regs) const override {
    return std::make_unique<PtRegsContext>(arch_, abi_.ptRegs, cpu, regs);
  }
  void setReturnValue(GuestContext &cpu, std::uint64_t value) const override {
    cpu.setReg(abi_.returnValueReg, value);
  }
  bool hasOpsTrampolines() const override { return true; }
  std::uint64_t opsTrampolineSize(bool saveRegs) const override { return opsLayout(saveRegs).size; }
  // create_trampoline() (arch/x86/kernel/ftrace.c): copy the caller up to and including its
  // closing jump, re-encode that jump for the copy's address, and make the copied ftrace_call call
  // the ops' own callback stub at the tail instead of ftrace_stub. The copy holds no other
  // PC-relative instruction. A base out of direct-branch reach is a FatalError.
  OpsTrampolineCode makeOpsTrampoline(std::uint64_t base, bool saveRegs) const override;

protected:
  AssembledTrampolines(const Arch &arch, AssembledListing listing, const TrampolineAbi &abi)
      : arch_(arch), abi_(abi), code_(std::move(listing.code)), ops_(std::move(listing.ops)) {}

private:
  struct Layout {
    std::uint64_t start = 0; // the caller copied
    std::uint64_t call = 0;  // its ftrace_call / ftrace_regs_call
    std::uint64_t jump = 0;  // offset of the closing jump
    std::uint64_t stub = 0;  // offset of the callback stub
    std::uint64_t size = 0;
  };
  Layout opsLayout(bool saveRegs) const;

  const Arch &arch_;
  TrampolineAbi abi_;
  TrampolineCode code_;
  OpsTrampolineSource ops_;
};

} // namespace ftsim::arch
