// The #BP entry and exit around poke_int3_handler() (Int3Entry.h).

#include "ftsim/linux/Int3Entry.h"

#include "ftsim/arch/Error.h"

#include <unicorn/unicorn.h>

#include <array>
#include <cstring>

namespace ftsim::linuxk {
namespace {

// struct pt_regs (arch/x86/include/asm/ptrace.h), in order; -1 marks orig_ax, cs and ss.
constexpr std::array<int, 21> kPtRegs{UC_X86_REG_R15,    UC_X86_REG_R14, UC_X86_REG_R13,
                                      UC_X86_REG_R12,    UC_X86_REG_RBP, UC_X86_REG_RBX,
                                      UC_X86_REG_R11,    UC_X86_REG_R10, UC_X86_REG_R9,
                                      UC_X86_REG_R8,     UC_X86_REG_RAX, UC_X86_REG_RCX,
                                      UC_X86_REG_RDX,    UC_X86_REG_RSI, UC_X86_REG_RDI,
                                      -1 /* orig_ax */,  UC_X86_REG_RIP, -1 /* cs */,
                                      UC_X86_REG_EFLAGS, UC_X86_REG_RSP, -1 /* ss */};
constexpr std::size_t kIp = kPtRegsIp, kCs = 17, kFlags = 18, kSp = kPtRegsSp, kSs = 20,
                      kOrigAx = 15;
constexpr std::uint64_t kKernelCs = 0x10, kKernelSs = 0x18, kFlagsIf = 0x200, kFlagsFixed = 0x2;

} // namespace

void setInt3Entry(PtRegs &regs, std::uint64_t trapAddress) {
  regs[kIp] = trapAddress + 1; // the #BP trap: ip past the int3
  regs[kCs] = kKernelCs;
  regs[kSs] = kKernelSs;
  regs[kOrigAx] = ~0ull;
  regs[kFlags] = (regs[kFlags] & 0xffff) | kFlagsIf | kFlagsFixed; // interrupted with IF set
}

Int3Frame enterInt3Handler(arch::GuestContext &ctx, std::uint64_t trapAddress,
                           std::uint64_t stackTop, std::uint64_t handler,
                           std::uint64_t returnStub) {
  PtRegs regs{};
  for (std::size_t i = 0; i < kPtRegs.size(); ++i)
    if (kPtRegs[i] >= 0)
      regs[i] = ctx.reg(kPtRegs[i]);
  setInt3Entry(regs, trapAddress);
  const std::uint64_t frame = (stackTop & ~0xfull) - 176; // 16-aligned, >= sizeof(pt_regs)
  std::uint8_t raw[kPtRegsSize];
  std::memcpy(raw, regs.data(), kPtRegsSize);
  if (!ctx.writeMemory(frame, raw))
    FTSIM_PANIC("int3 entry: exception stack {:#x} is not mapped", frame);
  const std::uint64_t sp = frame - 8;
  if (!ctx.writeMemory(sp, {reinterpret_cast<const std::uint8_t *>(&returnStub), 8}))
    FTSIM_PANIC("int3 entry: exception stack {:#x} is not mapped", sp);
  ctx.setSp(sp);
  ctx.setReg(UC_X86_REG_RDI, frame);
  ctx.setReg(UC_X86_REG_EFLAGS, kFlagsFixed); // IF clear, DF clear
  ctx.setPc(handler);
  return {frame};
}

std::uint64_t int3HandlerResult(const arch::GuestContext &ctx) {
  return ctx.reg(UC_X86_REG_RAX) & 0xffffffffu; // int poke_int3_handler(...)
}

void returnFromInt3(arch::GuestContext &ctx, const Int3Frame &frame) {
  std::uint8_t raw[kPtRegsSize];
  if (!ctx.readMemory(frame.regs, raw))
    FTSIM_PANIC("int3 exit: pt_regs at {:#x} is not mapped", frame.regs);
  std::array<std::uint64_t, 21> regs{};
  std::memcpy(regs.data(), raw, kPtRegsSize);
  for (std::size_t i = 0; i < kPtRegs.size(); ++i)
    if (kPtRegs[i] >= 0 && i != kIp && i != kSp)
      ctx.setReg(kPtRegs[i], regs[i]);
  ctx.setSp(regs[kSp]);
  ctx.setPc(regs[kIp]);
}

} // namespace ftsim::linuxk
