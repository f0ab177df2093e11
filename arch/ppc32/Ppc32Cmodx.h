#pragma once
// The CMODX check (Power ISA v3.1 Book II 1.6, "Concurrent Modification and Execution of
// Instructions"): while other processors may execute the text, only patch-class instructions
// (b, bl, the preferred nop) may be written over patch-class instructions; for those the executing
// processor sees either the old or the new word. Anything else written live may execute as
// neither, so it is a violation, with one exception that encodes Linux's argument for the
// two-instruction ftrace site (Ppc32MflrPatch.cpp; https://lkml.org/lkml/2019/5/20/293):
//
//  - `nop` <-> `mflr r0` at A is allowed while the word at A+4 is a `nop`: whichever word a CPU
//    executes at A, its only effect is on r0, which nothing reads before the next call (a lone
//    mflr r0 is harmless). This is the only non-patch-class write the rule admits, and it is
//    justified by the *state of the next word*, not by the write being atomic.
//  - writing `bl` at A+4 after such a slot requires that the slot holds `mflr r0` and that an
//    RCU-tasks grace period completed after the slot was last written: every task that executed
//    the old nop at A has passed a voluntary schedule since, so none is stopped between the two
//    words (a preempted task holds the grace period). Without the grace period, or with the slot
//    still a nop, the `bl` would run with r0 not holding the return address.
//  - nopping the slot requires the `bl` at A+4 to be a nop already and the CPUs to have been
//    synchronised since (so no CPU still fetches the stale bl after a nopped mflr).
//
// CmodxCheckedPort wraps the MachinePort the patcher uses and records violations; it forwards
// everything unchanged. A verification oracle reads violations() (or findings(), the ISA-neutral
// LivePatchingRule view) after the run. The ppc32 target's live-patching rule (Ppc32CmodxRule.cpp).

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
  explicit CmodxCheckedPort(MachinePort &inner) : inner_(inner) {}

  const std::vector<CmodxViolation> &violations() const { return violations_; }
  std::vector<std::string> findings() const override;
  void setLive(bool live) override { live_ = live; }

  bool readText(std::uint64_t addr, std::span<std::uint8_t> out) override {
    return inner_.readText(addr, out);
  }
  bool writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) override;
  void syncCores() override {
    inner_.syncCores();
    ++syncs_;
  }
  std::uint64_t allocText(std::size_t size, std::uint64_t nearAddress) override {
    return inner_.allocText(size, nearAddress);
  }
  void freeText(std::uint64_t addr, std::size_t size) override { inner_.freeText(addr, size); }
  void synchronizeRcuTasks() override {
    inner_.synchronizeRcuTasks();
    ++gracePeriods_;
  }
  void scheduleOnEachCpu() override { inner_.scheduleOnEachCpu(); }
  void publish(std::string_view what, const std::function<void()> &write) override {
    inner_.publish(what, write);
  }
  void setTrapHandler(TrapHandler handler) override { inner_.setTrapHandler(std::move(handler)); }
  void setHypercall(std::uint64_t stubAddress, Hypercall callback) override {
    inner_.setHypercall(stubAddress, std::move(callback));
  }

private:
  struct Written {
    std::uint64_t gracePeriods = 0; // completed grace periods when the word was written
    std::uint64_t syncs = 0;
  };
  void check(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord);
  void flag(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord, std::string why);
  std::uint32_t wordAt(std::uint64_t addr, bool &ok);

  MachinePort &inner_;
  bool live_ = true;
  std::uint64_t gracePeriods_ = 0;
  std::uint64_t syncs_ = 0;
  std::map<std::uint64_t, Written> written_;
  std::vector<CmodxViolation> violations_;
};

} // namespace ftsim::arch
