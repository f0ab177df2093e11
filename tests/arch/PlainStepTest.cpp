// The machine applies a patch site's instructions itself (GuestAbi::plainStep) instead of stepping
// them by Unicorn: each must leave pc, sp, the stack and the trap exactly as Unicorn's step by the
// trace flag leaves them, and every other instruction, or one it cannot complete, must be left to
// Unicorn untouched.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/GuestAbi.h"
#include "ftsim/arch/UnicornEngine.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace ftsim;

namespace {

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr std::uint64_t kStack = 0xffffc90000000000ull;
constexpr std::uint64_t kPc = kText + 0x800;
constexpr std::uint64_t kSp = kStack + 0x800;

// An x86-64 engine with one text and one stack page, the instruction at kPc.
struct Engine {
  uc_engine *uc = nullptr;
  std::intptr_t intno = -1;
  uc_hook hook = 0;
  explicit Engine(const std::vector<std::uint8_t> &insn) {
    EXPECT_EQ(arch::openUnicorn(UC_ARCH_X86, UC_MODE_64, &uc), UC_ERR_OK);
    EXPECT_EQ(uc_mem_map(uc, kText, 0x1000, UC_PROT_READ | UC_PROT_EXEC), UC_ERR_OK);
    EXPECT_EQ(uc_mem_map(uc, kStack, 0x1000, UC_PROT_READ | UC_PROT_WRITE), UC_ERR_OK);
    EXPECT_EQ(uc_mem_write(uc, kPc, insn.data(), insn.size()), UC_ERR_OK);
    for (int id : {UC_X86_REG_RIP, UC_X86_REG_RSP}) {
      const std::uint64_t v = id == UC_X86_REG_RIP ? kPc : kSp;
      EXPECT_EQ(uc_reg_write(uc, id, &v), UC_ERR_OK);
    }
    EXPECT_EQ(
        uc_hook_add(uc, &hook, UC_HOOK_INTR, reinterpret_cast<void *>(&onInterrupt), this, 1, 0),
        UC_ERR_OK);
  }
  ~Engine() { uc_close(uc); }
  static void onInterrupt(uc_engine *uc, std::uint32_t n, void *user) {
    static_cast<Engine *>(user)->intno = n;
    uc_emu_stop(uc);
  }
  std::uint64_t reg(int id) const {
    std::uint64_t v = 0;
    uc_reg_read(uc, id, &v);
    return v;
  }
  std::uint64_t stackWord() const {
    std::uint64_t v = 0;
    uc_mem_read(uc, reg(UC_X86_REG_RSP), &v, sizeof v);
    return v;
  }
  // One instruction by the trace flag, as the machine steps (#DB after it is the step's end).
  void traceStep() {
    std::uint64_t flags = reg(UC_X86_REG_EFLAGS) | 0x100;
    uc_reg_write(uc, UC_X86_REG_EFLAGS, &flags);
    EXPECT_EQ(uc_emu_start(uc, kPc, 0x8000000000000001ull, 0, 0), UC_ERR_OK);
    if (intno == 1)
      intno = -1;
  }
};

class EngineContext final : public arch::GuestContext {
public:
  explicit EngineContext(Engine &e) : e_(e) {}
  unsigned cpu() const override { return 0; }
  int task() const override { return 0; }
  std::uint64_t pc() const override { return e_.reg(UC_X86_REG_RIP); }
  void setPc(std::uint64_t pc) override { uc_reg_write(e_.uc, UC_X86_REG_RIP, &pc); }
  std::uint64_t sp() const override { return e_.reg(UC_X86_REG_RSP); }
  void setSp(std::uint64_t sp) override { uc_reg_write(e_.uc, UC_X86_REG_RSP, &sp); }
  std::uint64_t reg(int id) const override { return e_.reg(id); }
  void setReg(int id, std::uint64_t v) override { uc_reg_write(e_.uc, id, &v); }
  bool readMemory(std::uint64_t addr, std::span<std::uint8_t> out) const override {
    return uc_mem_read(e_.uc, addr, out.data(), out.size()) == UC_ERR_OK;
  }
  // Writable data only, as the machine's context: the stack page.
  bool writeMemory(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    if (addr < kStack || addr + bytes.size() > kStack + 0x1000)
      return false;
    return uc_mem_write(e_.uc, addr, bytes.data(), bytes.size()) == UC_ERR_OK;
  }

private:
  Engine &e_;
};

const arch::GuestAbi &x86() { return *arch::archByName("x86_64").guestAbi(); }

bool plainStep(Engine &e, const std::vector<std::uint8_t> &insn, std::size_t held, bool &trapped) {
  std::array<std::uint8_t, 16> window{};
  std::memcpy(window.data(), insn.data(), insn.size());
  EngineContext ctx(e);
  return x86().plainStep(kPc, {window.data(), held}, ctx, trapped);
}

TEST(PlainStep, EachSiteInstructionLeavesWhatUnicornsStepLeaves) {
  const std::vector<std::vector<std::uint8_t>> site{
      {0x0f, 0x1f, 0x44, 0x00, 0x00}, // nopl 0(%rax,%rax): the site disabled
      {0xf3, 0x0f, 0x1e, 0xfa},       // endbr64
      {0x90},                         // nop
      {0xcc, 0x1f, 0x44, 0x00, 0x00}, // int3 over the nop's tail: the patch under way
      {0xe8, 0x10, 0x20, 0x00, 0x00}, // call forward: the site enabled
      {0xe8, 0x00, 0xf0, 0xff, 0xff}, // call backward
      {0xe9, 0xfb, 0x00, 0x00, 0x00}, // jmp rel32
      {0xe9, 0x00, 0xf8, 0xff, 0xff}, // jmp rel32 backward
      {0xeb, 0x7f},                   // jmp rel8
      {0xeb, 0x80},                   // jmp rel8 backward
  };
  for (const auto &insn : site) {
    SCOPED_TRACE(testing::Message() << "first byte " << std::hex << unsigned{insn[0]});
    Engine byUnicorn(insn), byMachine(insn);
    byUnicorn.traceStep();
    bool trapped = false;
    ASSERT_TRUE(plainStep(byMachine, insn, 16, trapped));
    EXPECT_EQ(byMachine.reg(UC_X86_REG_RIP), byUnicorn.reg(UC_X86_REG_RIP));
    EXPECT_EQ(byMachine.reg(UC_X86_REG_RSP), byUnicorn.reg(UC_X86_REG_RSP));
    EXPECT_EQ(byMachine.stackWord(), byUnicorn.stackWord());
    EXPECT_EQ(trapped, byUnicorn.intno == static_cast<std::intptr_t>(x86().trapIntno));
    EXPECT_EQ(byMachine.reg(UC_X86_REG_EFLAGS) & ~0x100ull,
              byUnicorn.reg(UC_X86_REG_EFLAGS) & ~0x100ull);
    // A direct call or jump says where it goes: where Unicorn's step went.
    std::uint64_t target = 0;
    const bool direct = x86().directTarget(kPc, insn, target);
    EXPECT_EQ(direct, insn[0] == 0xe8 || insn[0] == 0xe9 || insn[0] == 0xeb);
    if (direct) {
      EXPECT_EQ(target, byUnicorn.reg(UC_X86_REG_RIP));
    }
  }
}

TEST(PlainStep, OtherInstructionsAreLeftToUnicornUntouched) {
  const std::vector<std::vector<std::uint8_t>> other{
      {0x0f, 0x1f, 0x2e, 0x00, 0x00}, // a torn site: nopl (%rsi), not the site's nop
      {0x0f, 0x1f, 0x40, 0x00},       // another nop: not one a site holds
      {0x48, 0x89, 0xe5},             // mov %rsp,%rbp
      {0x66, 0x90},                   // xchg %ax,%ax
      {0xc3},                         // ret
      {0xff, 0x15, 0, 0, 0, 0},       // call *(%rip)
  };
  for (const auto &insn : other) {
    SCOPED_TRACE(testing::Message() << "first bytes " << std::hex << unsigned{insn[0]} << " "
                                    << unsigned{insn[1 % insn.size()]});
    Engine e(insn);
    bool trapped = true;
    EXPECT_FALSE(plainStep(e, insn, 16, trapped));
    EXPECT_FALSE(trapped);
    EXPECT_EQ(e.reg(UC_X86_REG_RIP), kPc);
    EXPECT_EQ(e.reg(UC_X86_REG_RSP), kSp);
    std::uint64_t target = 0;
    EXPECT_FALSE(x86().directTarget(kPc, insn, target)); // ret, an indirect call: no fixed target
  }
}

TEST(PlainStep, AnInstructionNotWholeInTextIsLeftToUnicorn) {
  // The last bytes of text: the call's displacement would be read past its end.
  const std::vector<std::uint8_t> call{0xe8, 0x10, 0x20, 0x00, 0x00};
  for (std::size_t held = 1; held < call.size(); ++held) {
    Engine e(call);
    bool trapped = false;
    EXPECT_FALSE(plainStep(e, call, held, trapped)) << held << " bytes held";
    EXPECT_EQ(e.reg(UC_X86_REG_RIP), kPc);
    std::uint64_t target = 0;
    EXPECT_FALSE(x86().directTarget(kPc, std::span(call).first(held), target));
  }
  const std::vector<std::uint8_t> nop{0x0f, 0x1f, 0x44, 0x00, 0x00};
  Engine e(nop);
  bool trapped = false;
  EXPECT_FALSE(plainStep(e, nop, 4, trapped));
  EXPECT_TRUE(plainStep(e, nop, 5, trapped));
}

TEST(PlainStep, ACallWhoseReturnAddressCannotBePushedIsLeftToUnicorn) {
  const std::vector<std::uint8_t> call{0xe8, 0x10, 0x20, 0x00, 0x00};
  Engine e(call);
  const std::uint64_t sp = kStack + 4; // the push would cross below the stack page
  uc_reg_write(e.uc, UC_X86_REG_RSP, &sp);
  bool trapped = false;
  EXPECT_FALSE(plainStep(e, call, 16, trapped));
  EXPECT_EQ(e.reg(UC_X86_REG_RIP), kPc);
  EXPECT_EQ(e.reg(UC_X86_REG_RSP), sp);
}

TEST(PlainStep, PowerpcHasNone) {
  EXPECT_EQ(arch::archByName("ppc32").guestAbi()->directTarget, nullptr);
  EXPECT_EQ(arch::archByName("ppc32").guestAbi()->plainStep, nullptr);
}

} // namespace
