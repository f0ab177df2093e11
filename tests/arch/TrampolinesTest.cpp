// The generated x86-64 trampolines as Capstone reads them: real machine code whose patchable sites
// are 5-byte call/jmp instructions at the addresses the engine patches, with the shape of
// arch/x86/kernel/ftrace_64.S.

#include "ftsim/arch/Trampolines.h"
#include "ftsim/arch/Arch.h"

#include <gtest/gtest.h>

#include <map>

using namespace ftsim::arch;

namespace {

constexpr std::uint64_t kBase = 0xffffffff80ff0000ull;

struct Listing {
  std::map<std::uint64_t, Arch::Insn> byAddress;
  std::string textBetween(std::uint64_t from, std::uint64_t to) const {
    std::string out;
    for (auto it = byAddress.lower_bound(from); it != byAddress.end() && it->first < to; ++it)
      out += it->second.text + "\n";
    return out;
  }
};

Listing listing(const Arch &arch, const TrampolineCode &code) {
  Listing l;
  std::size_t undecoded = 0;
  for (const auto &insn : arch.disassemble(code.bytes, code.base, &undecoded))
    l.byAddress[insn.address] = insn;
  EXPECT_EQ(undecoded, code.bytes.size()) << "undecodable byte in the trampolines";
  return l;
}

std::uint64_t symbolEnd(const TrampolineCode &code, const std::string &name) {
  for (const auto &s : code.symbols)
    if (s.name == name)
      return s.addr + s.size;
  ADD_FAILURE() << name;
  return 0;
}

} // namespace

TEST(X86Trampolines, PatchableSitesAreFiveByteCallsAndJumpsToFtraceStub) {
  const Arch &x86 = archByName("x86_64");
  for (auto flavour : {SiteFlavour::Fentry, SiteFlavour::Mcount}) {
    auto tramps = makeFtraceTrampolines(x86, {kBase, flavour, 4});
    const TrampolineCode &code = tramps->code();
    const Listing l = listing(x86, code);
    EXPECT_EQ(code.siteSize, 5u);
    auto bytesAt = [&](std::uint64_t addr) {
      return Bytes(code.bytes.begin() + static_cast<long>(addr - code.base),
                   code.bytes.begin() + static_cast<long>(addr - code.base + 5));
    };
    // ftrace_call / ftrace_regs_call: `call ftrace_stub` until a tracer is installed.
    for (std::uint64_t site : {code.ftraceCall, code.ftraceRegsCall}) {
      ASSERT_TRUE(l.byAddress.count(site));
      EXPECT_EQ(l.byAddress.at(site).size, 5u);
      EXPECT_EQ(x86.callTarget(site, bytesAt(site)), code.ftraceStub);
    }
    // ftrace_graph_call: `jmp ftrace_stub` until function_graph is on.
    EXPECT_EQ(bytesAt(code.ftraceGraphCall)[0], 0xe9);
    EXPECT_EQ(l.byAddress.at(code.ftraceStub).text, "retq");
    // Both callers fall into ftrace_epilogue, whose first instruction is the graph site.
    EXPECT_NE(l.textBetween(code.ftraceCaller, code.ftraceRegsCaller).find("jmp 0x"),
              std::string::npos);
    // ftrace_regs_caller saves flags first and restores them last (pushfq ... popfq).
    EXPECT_EQ(l.byAddress.at(code.ftraceRegsCaller).text, "pushfq");
    EXPECT_NE(l.textBetween(code.ftraceRegsCaller, symbolEnd(code, "ftrace_regs_caller"))
                  .find("popfq\njmp"),
              std::string::npos);
    // The site's address is the return address minus MCOUNT_INSN_SIZE.
    EXPECT_NE(l.textBetween(code.ftraceCaller, code.ftraceCall).find("subq $5, %rdi"),
              std::string::npos);
    // return_to_handler ends with an indirect jump to the original return address.
    EXPECT_NE(l.textBetween(code.returnToHandler, symbolEnd(code, "return_to_handler"))
                  .find("jmpq *%rdi"),
              std::string::npos);
    // Every host callback is a hypercall stub: int3, then ret.
    std::vector<std::uint64_t> stubs = code.callbackStubs;
    stubs.insert(stubs.end(), {code.listFuncTrap, code.prepareReturnStub, code.returnHandlerStub});
    EXPECT_EQ(code.listFuncTrap, code.listFuncStub);
    for (std::uint64_t stub : stubs) {
      EXPECT_EQ(l.byAddress.at(stub).text, "int3");
      EXPECT_EQ(l.byAddress.at(stub + 1).text, "retq");
    }
    // fentry finds the parent above the return address; mcount in the frame (8(%rbp)).
    const std::string prologue = l.textBetween(code.ftraceCaller, code.ftraceCall);
    if (flavour == SiteFlavour::Mcount)
      EXPECT_NE(prologue.find("movq %rbp, %rdx\nmovq %rdx, 0x20(%rsp)\nmovq 8(%rdx), %rsi"),
                std::string::npos)
          << prologue;
    else
      EXPECT_NE(prologue.find("0xb0(%rsp), %rsi"), std::string::npos) << prologue;
  }
}

// v6.x's shape (TrampolineRequest::graphViaOps): both callers return right after restoring
// (`ftrace_caller_end: RET`), with no ftrace_epilogue, ftrace_graph_call, ftrace_graph_caller or
// prepare_ftrace_return, and a per-ops trampoline copy ends in that same ret. Its graph entry
// reads the parent at regs->sp, the fentry layout, so mcount sites are refused.
TEST(X86Trampolines, V6CallersReturnWithoutAGraphCallSite) {
  const Arch &x86 = archByName("x86_64");
  TrampolineRequest request{kBase, SiteFlavour::Fentry, 4};
  request.graphViaOps = true;
  auto tramps = makeFtraceTrampolines(x86, request);
  const TrampolineCode &code = tramps->code();
  const Listing l = listing(x86, code);
  EXPECT_EQ(code.ftraceGraphCall, 0u);
  EXPECT_EQ(code.ftraceGraphCaller, 0u);
  EXPECT_EQ(code.prepareReturnStub, 0u);
  for (const auto &s : code.symbols)
    EXPECT_NE(s.name, "ftrace_epilogue");
  const std::string caller = l.textBetween(code.ftraceCall, symbolEnd(code, "ftrace_caller"));
  EXPECT_NE(caller.find("retq"), std::string::npos) << caller;
  EXPECT_EQ(caller.find("jmp"), std::string::npos) << caller;
  const std::string regs =
      l.textBetween(code.ftraceRegsCall, symbolEnd(code, "ftrace_regs_caller"));
  EXPECT_NE(regs.find("popfq\nretq"), std::string::npos) << regs;

  const OpsTrampolineCode ops = tramps->makeOpsTrampoline(kBase + 0x100000, false);
  std::size_t undecoded = 0;
  std::string copy;
  for (const auto &insn : x86.disassemble(ops.bytes, ops.base, &undecoded))
    if (insn.address < ops.callbackStub)
      copy += insn.text + "\n";
  EXPECT_NE(copy.find("retq"), std::string::npos) << copy;
  EXPECT_EQ(copy.find("jmp"), std::string::npos) << copy;

  request.flavour = SiteFlavour::Mcount;
  EXPECT_THROW(makeFtraceTrampolines(x86, request), ftsim::FatalError);
}
