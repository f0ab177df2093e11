// How the simulator runs x86-64 guest code (GuestAbi.h).

#include "X86_64Target.h"

#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <bit>

namespace ftsim::arch {
namespace {

bool serialising(const std::uint8_t *b) {
  // Intel SDM vol. 3A 9.1.3 (cross-modifying code): a serialising instruction (cpuid) or an
  // exception return (iret) before executing modified code.
  if (b[0] == 0x0f && b[1] == 0xa2) // cpuid
    return true;
  if (b[0] == 0xcf) // iret
    return true;
  return b[0] == 0x48 && b[1] == 0xcf; // iretq
}

// What a first byte is to irqFlagMayChange: a prefix (legacy or REX), an instruction that may
// change EFLAGS.IF (cli, sti, popf, iret; int3, int n, into, int1: through an interrupt gate), the
// 0x0f escape, or none of these. A table: the machine asks at every step.
enum ByteClass : std::uint8_t { kOther, kPrefix, kMayChange, kEscape };
constexpr std::array<std::uint8_t, 256> kByteClass = [] {
  std::array<std::uint8_t, 256> t{};
  for (unsigned p : {0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65, 0x66, 0x67})
    t[p] = kPrefix;
  for (unsigned rex = 0x40; rex <= 0x4f; ++rex)
    t[rex] = kPrefix;
  for (unsigned op : {0xfa, 0xfb, 0x9d, 0xcf, 0xcc, 0xcd, 0xce, 0xf1})
    t[op] = kMayChange;
  t[0x0f] = kEscape;
  return t;
}();

// Where the opcode begins, past the prefixes (an instruction is at most 15 bytes).
unsigned opcodeAt(const std::uint8_t *b) {
  unsigned i = 0;
  while (kByteClass[b[i]] == kPrefix && i < 13)
    ++i;
  return i;
}

bool irqFlagMayChange(const std::uint8_t *b) {
  const unsigned i = opcodeAt(b);
  switch (kByteClass[b[i]]) {
  case kMayChange:
    return true;
  case kEscape: {
    // syscall (RFLAGS masked), sysret (RFLAGS from r11), sysenter, sysexit, rsm.
    const std::uint8_t op = b[i + 1];
    return op == 0x05 || op == 0x07 || op == 0x34 || op == 0x35 || op == 0xaa;
  }
  default:
    return false;
  }
}

// int1 (icebp) and int $1 raise the debug exception themselves, as EFLAGS.TF does after a step.
bool raisesTraceIntno(const std::uint8_t *b) {
  const unsigned i = opcodeAt(b);
  return b[i] == 0xf1 || (b[i] == 0xcd && b[i + 1] == 0x01);
}

// pushf, pushfq (with an operand-size or REX prefix: 16 or 64 bits) copy EFLAGS to the word at
// the stack pointer; little-endian, bit b is bit b % 8 of its byte b / 8, whatever the width.
void hideTraceFlag(const std::uint8_t *b, GuestContext &ctx, std::uint64_t bit) {
  if (b[opcodeAt(b)] != 0x9c)
    return;
  const int n = std::countr_zero(bit);
  std::uint8_t byte = 0;
  if (ctx.readMemory(ctx.sp() + n / 8, std::span(&byte, 1))) {
    byte &= static_cast<std::uint8_t>(~(1u << (n % 8)));
    ctx.writeMemory(ctx.sp() + n / 8, std::span(&byte, 1));
  }
}

std::uint64_t returnAddress(const GuestAbi &, GuestContext &ctx) {
  std::uint8_t b[8];
  std::uint64_t ret = 0;
  if (ctx.readMemory(ctx.sp(), b))
    for (unsigned i = 0; i < 8; ++i)
      ret |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  return ret;
}

// A direct call (isCall) or jump whole in `b`, and where it goes.
bool directBranch(std::uint64_t pc, std::span<const std::uint8_t> b, std::uint64_t &target,
                  bool &isCall) {
  if (b.empty())
    return false;
  isCall = b[0] == 0xe8;
  if ((b[0] == 0xe8 || b[0] == 0xe9) && b.size() >= 5) {
    target = pc + 5 + static_cast<std::uint64_t>(std::int64_t{x86Rel32(&b[1])});
    return true;
  }
  if (b[0] == 0xeb && b.size() >= 2) {
    target = pc + 2 + static_cast<std::uint64_t>(static_cast<std::int8_t>(b[1]));
    return true;
  }
  return false;
}

bool directTarget(std::uint64_t pc, std::span<const std::uint8_t> b, std::uint64_t &target) {
  bool isCall = false;
  return directBranch(pc, b, target, isCall);
}

bool plainStep(std::uint64_t pc, std::span<const std::uint8_t> b, GuestContext &ctx,
               bool &trapped) {
  static constexpr std::array<std::uint8_t, 5> kNop5{0x0f, 0x1f, 0x44, 0x00, 0x00};
  static constexpr std::array<std::uint8_t, 4> kEndbr64{0xf3, 0x0f, 0x1e, 0xfa};
  const auto is = [&](std::span<const std::uint8_t> insn) {
    return b.size() >= insn.size() && std::equal(insn.begin(), insn.end(), b.begin());
  };
  trapped = false;
  std::uint64_t next = 0;
  bool isCall = false;
  if (directBranch(pc, b, next, isCall)) {
    if (isCall) {
      const std::uint64_t ret = pc + 5, sp = ctx.sp() - 8;
      std::array<std::uint8_t, 8> word{};
      for (unsigned i = 0; i < 8; ++i)
        word[i] = static_cast<std::uint8_t>(ret >> (8 * i));
      if (!ctx.writeMemory(sp, word))
        return false;
      ctx.setSp(sp);
    }
  } else if (!b.empty() && (b[0] == 0x90 || b[0] == 0xcc)) {
    trapped = b[0] == 0xcc;
    next = pc + 1;
  } else if (is(kNop5)) {
    next = pc + kNop5.size();
  } else if (is(kEndbr64)) {
    next = pc + kEndbr64.size();
  } else {
    return false;
  }
  ctx.setPc(next);
  return true;
}

} // namespace

const GuestAbi &x86_64GuestAbi() {
  static const GuestAbi abi{
      UC_X86_REG_RIP,
      UC_X86_REG_RSP,
      UC_X86_REG_RDI,
      UC_X86_REG_RAX,
      -1,
      3,
      -1,
      {0x0f, 0x0b},
      0xffffffffa0000000ull,
      0xffffffffc0000000ull,
      0x8000000000000001ull,
      serialising,
      returnAddress,
      UC_X86_REG_EFLAGS,
      0x200, // EFLAGS.IF
      irqFlagMayChange,
      UC_X86_REG_GS_BASE,
      {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX,    UC_X86_REG_RDX,     UC_X86_REG_RSI,
       UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP,    UC_X86_REG_R8,      UC_X86_REG_R9,
       UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12,    UC_X86_REG_R13,     UC_X86_REG_R14,
       UC_X86_REG_R15, UC_X86_REG_RIP, UC_X86_REG_EFLAGS, UC_X86_REG_GS_BASE, UC_X86_REG_FS_BASE},
      UC_X86_REG_EFLAGS,
      0x100, // EFLAGS.TF
      1,     // #DB
      raisesTraceIntno,
      hideTraceFlag,
      {0x48, 0xff, 0xc0}, // inc %rax
      plainStep,
      directTarget,
  };
  return abi;
}

} // namespace ftsim::arch
