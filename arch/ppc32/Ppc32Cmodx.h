#pragma once
// The powerpc live-patching rule, after the Power ISA's cross-modifying-code section: Book II,
// section "Instruction Storage", subsection "Concurrent Modification and Execution of
// Instructions" (CMODX; 1.8.1 in Power ISA Version 2.03). The results of executing a location
// that was modified after software last made instruction storage consistent with data storage
// are defined only when every value it held meanwhile is of the "patch class": the I-form
// branch (b[l][a]) and the preferred no-op (ori 0,0,0). While other processors may execute the
// text:
//
//  1. Only a patch-class instruction (b, bl, the preferred nop) may be written over a patch-class
//     instruction; another processor then executes either the old or the new one, and may keep
//     executing the old one until it context-synchronises (isync, an interrupt and its rfi).
//     Any other write is a violation: the architecture does not say what the other processor
//     executes.
//  2. A multi-instruction sequence must never be observable half-updated in a way that neither
//     the old nor the new sequence allows. The two-instruction site `mflr r0; bl` is the case
//     ftrace has (Ppc32MflrPatch.cpp; the 2019 RFC https://lkml.org/lkml/2019/5/20/293):
//      - `nop` <-> `mflr r0` at A is admitted while the word at A+4 is a `nop`: whichever word a
//        CPU executes at A, its only effect is on r0, which nothing reads before the next call.
//        It is the only non-patch-class write the rule admits, justified by the *state of the
//        next word*, not by the write being atomic;
//      - writing `bl` at A+4 requires the slot to hold `mflr r0` and an RCU-tasks grace period
//        to have completed since the slot was last written (no task is stopped between the two
//        words having executed the old nop; a preempted task holds the grace period);
//      - nopping the slot requires the `bl` at A+4 to be a nop already and every other CPU to
//        have context-synchronised since (no CPU still fetches the stale bl after a nopped mflr).
//  3. Nothing may rely on another processor having seen the new word before it context-
//     synchronised. What the patcher does that relies on it is freeing text: freeing a range
//     that an overwritten `b`/`bl` reached is a violation unless every other CPU context-
//     synchronised after that store. The events that make every other CPU context-synchronise
//     are syncCores() (an IPI: the interrupt and its rfi) and scheduleOnEachCpu() (each CPU's
//     worker is woken by an interrupt and runs after its rfi; synchronize_rcu_tasks_rude() in
//     Linux). An RCU-tasks grace period alone is not counted: the rule does not assume that a
//     voluntary context switch context-synchronises a CPU.
//
// Linux's protocol (patch_instruction(): the store and `dcbst; sync; icbi; sync; isync` on the
// patching CPU only, no IPI, since c96f83856f56) satisfies 1 by writing only b/bl/nop, and 3
// because ftrace_shutdown() runs synchronize_rcu_tasks_rude() before it frees a trampoline.
//
// CmodxCheckedPort wraps the MachinePort the patcher uses and records violations; it forwards
// everything unchanged. A verification oracle reads violations() (or findings(), the ISA-neutral
// LivePatchingRule view) after the run: `ftsim check` runs it as the `live-patching` oracle on
// every ppc32 scenario, `ftsim mutants` as a checker (Ppc32CmodxRule.cpp).

#include "ftsim/arch/LivePatchingRule.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ftsim::arch {

struct CmodxViolation {
  std::uint64_t addr = 0;
  std::uint32_t oldWord = 0;
  std::uint32_t newWord = 0;
  std::string reason; // one line, with the words decoded
};

class CmodxCheckedPort final : public RuleCheckedPort {
public:
  using RuleCheckedPort::RuleCheckedPort;

  const std::vector<CmodxViolation> &violations() const { return violations_; }
  std::vector<std::string> findings() const override;
  void setLive(bool live) override { live_ = live; }

  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override;
  void syncCores() override {
    inner().syncCores();
    contextSynchronised(); // the IPI: every other CPU took an interrupt and its rfi
  }
  void freeText(std::uint64_t addr, std::size_t size) override;
  void synchronizeRcuTasks() override {
    inner().synchronizeRcuTasks();
    ++gracePeriods_;
  }
  void scheduleOnEachCpu() override {
    inner().scheduleOnEachCpu();
    contextSynchronised(); // every CPU ran its worker after an interrupt and its rfi
  }

private:
  struct Written {
    std::uint64_t gracePeriods = 0; // completed grace periods when the word was written
    std::uint64_t syncs = 0;
  };
  // An overwritten b/bl since the last context synchronisation of every CPU: the text it reached
  // may still be entered by a CPU that runs the stale word.
  struct OldBranch {
    std::uint64_t site = 0;
    std::uint32_t oldWord = 0;
    std::uint64_t target = 0;
  };
  void contextSynchronised() {
    ++syncs_;
    oldBranches_.clear();
  }
  void check(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord);
  void flag(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord, std::string why);
  std::uint32_t wordAt(std::uint64_t addr, bool &ok);

  bool live_ = true;
  std::uint64_t gracePeriods_ = 0;
  std::uint64_t syncs_ = 0;
  std::map<std::uint64_t, Written> written_;
  std::vector<OldBranch> oldBranches_;
  std::vector<CmodxViolation> violations_;
};

} // namespace ftsim::arch
