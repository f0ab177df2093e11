// The machine reads the interrupt-enable bit again after a step only when the instruction stepped
// may change it (GuestAbi::irqFlagMayChange): a missed one would leave IPIs and timer interrupts
// offered inside a cli region, or withheld after sti.

#include "ftsim/arch/GuestAbi.h"
#include "ftsim/arch/Arch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>

using namespace ftsim;

namespace {

bool mayChange(const arch::GuestAbi &abi, std::initializer_list<std::uint8_t> bytes) {
  std::array<std::uint8_t, 16> window{};
  std::copy(bytes.begin(), bytes.end(), window.begin());
  return abi.irqFlagMayChange(window.data());
}

const arch::GuestAbi &abiOf(const char *name) { return *arch::archByName(name).guestAbi(); }

TEST(GuestAbi, X86InstructionsThatMayChangeTheInterruptFlagAreRecognised) {
  const arch::GuestAbi &abi = abiOf("x86_64");
  EXPECT_TRUE(mayChange(abi, {0xfa}));             // cli
  EXPECT_TRUE(mayChange(abi, {0xfb}));             // sti
  EXPECT_TRUE(mayChange(abi, {0x9d}));             // popfq
  EXPECT_TRUE(mayChange(abi, {0x66, 0x9d}));       // popfw
  EXPECT_TRUE(mayChange(abi, {0x48, 0xcf}));       // iretq
  EXPECT_TRUE(mayChange(abi, {0xcf}));             // iretd
  EXPECT_TRUE(mayChange(abi, {0x0f, 0x05}));       // syscall
  EXPECT_TRUE(mayChange(abi, {0x48, 0x0f, 0x07})); // sysretq
  EXPECT_TRUE(mayChange(abi, {0x0f, 0x34}));       // sysenter
  EXPECT_TRUE(mayChange(abi, {0xcc}));             // int3
  EXPECT_TRUE(mayChange(abi, {0xcd, 0x80}));       // int $0x80
  // Prefixes the CPU ignores or repeats do not hide the opcode.
  EXPECT_TRUE(mayChange(abi, {0x2e, 0x3e, 0xfa}));
  EXPECT_TRUE(mayChange(abi, {0xf3, 0x48, 0x9d}));
}

TEST(GuestAbi, X86OrdinaryInstructionsLeaveTheInterruptFlagAlone) {
  const arch::GuestAbi &abi = abiOf("x86_64");
  EXPECT_FALSE(mayChange(abi, {0x0f, 0x1f, 0x44, 0x00, 0x00}));       // nopl 0(%rax,%rax)
  EXPECT_FALSE(mayChange(abi, {0xe8, 0x00, 0x00, 0x00, 0x00}));       // call
  EXPECT_FALSE(mayChange(abi, {0x48, 0x01, 0xc8}));                   // add %rcx,%rax
  EXPECT_FALSE(mayChange(abi, {0x9c}));                               // pushfq
  EXPECT_FALSE(mayChange(abi, {0xc3}));                               // ret
  EXPECT_FALSE(mayChange(abi, {0x65, 0xff, 0x04, 0x25, 0, 0, 0, 0})); // incl %gs:0
  EXPECT_FALSE(mayChange(abi, {0x0f, 0xa2}));                         // cpuid
  EXPECT_FALSE(mayChange(abi, {0x0f, 0x0b}));                         // ud2: it faults instead
}

TEST(GuestAbi, PowerpcInstructionsThatWriteTheMsrAreRecognised) {
  const arch::GuestAbi &abi = abiOf("ppc32");
  EXPECT_TRUE(mayChange(abi, {0x7c, 0x00, 0x01, 0x24}));  // mtmsr r0
  EXPECT_TRUE(mayChange(abi, {0x7c, 0xa0, 0x01, 0x64}));  // mtmsrd r5
  EXPECT_TRUE(mayChange(abi, {0x7c, 0x80, 0x01, 0x06}));  // wrtee r4
  EXPECT_TRUE(mayChange(abi, {0x7c, 0x00, 0x81, 0x46}));  // wrteei 1
  EXPECT_TRUE(mayChange(abi, {0x4c, 0x00, 0x00, 0x64}));  // rfi
  EXPECT_TRUE(mayChange(abi, {0x4c, 0x00, 0x00, 0x24}));  // rfid
  EXPECT_FALSE(mayChange(abi, {0x60, 0x00, 0x00, 0x00})); // nop
  EXPECT_FALSE(mayChange(abi, {0x7c, 0xa0, 0x00, 0xa6})); // mfmsr r5: reads it
  EXPECT_FALSE(mayChange(abi, {0x4c, 0x00, 0x01, 0x2c})); // isync
  EXPECT_FALSE(mayChange(abi, {0x7c, 0x08, 0x03, 0xa6})); // mtlr r0
  EXPECT_FALSE(mayChange(abi, {0x4e, 0x80, 0x00, 0x20})); // blr
  EXPECT_FALSE(mayChange(abi, {0x38, 0x63, 0x00, 0x01})); // addi r3,r3,1
}

} // namespace
