#pragma once
// The x86-64 #BP entry and exit around a tree's poke_int3_handler() (linux/README.md), as
// arch/x86/entry/entry_64.S and do_int3() do it, reduced to what the handler can observe: the
// trapping CPU's registers saved as a struct pt_regs on that CPU's exception stack (ip past the
// int3, kernel cs, IF set in the saved flags), interrupts off, and a call of
// poke_int3_handler(regs) whose return lands on an exception-return stub. There, a non-zero
// result restores the (possibly emulated: ip, sp, a pushed return address) registers as iret
// does; zero means Linux would go on to die("int3").

#include "ftsim/arch/MachinePort.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ftsim::linuxk {

inline constexpr std::uint64_t kPtRegsSize = 168; // 21 registers, r15 first, ss last
using PtRegs = std::array<std::uint64_t, 21>;
inline constexpr std::size_t kPtRegsIp = 16, kPtRegsSp = 19; // their indexes in PtRegs

// The words the #BP entry sets for an int3 at `trapAddress` in kernel mode: ip past the int3,
// kernel cs and ss, orig_ax -1, flags with IF set (the rest of `regs` is the trapped context).
void setInt3Entry(PtRegs &regs, std::uint64_t trapAddress);

struct Int3Frame {
  std::uint64_t regs = 0; // the struct pt_regs
};

// Saves the context into a pt_regs below `stackTop` and points the CPU at `handler(regs)` with
// `returnStub` as its return address. `trapAddress` is the int3's own address.
Int3Frame enterInt3Handler(arch::GuestContext &ctx, std::uint64_t trapAddress,
                           std::uint64_t stackTop, std::uint64_t handler, std::uint64_t returnStub);
// The handler's return value (rax at the return stub).
std::uint64_t int3HandlerResult(const arch::GuestContext &ctx);
// iret: every register from the frame's pt_regs (ip, sp and flags included).
void returnFromInt3(arch::GuestContext &ctx, const Int3Frame &frame);

} // namespace ftsim::linuxk
