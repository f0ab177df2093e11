// The two-instruction ppc32 protocols (see ftsim/arch/Ppc32Protocols.h). Every store is still one
// aligned word (patch_instruction()) followed by the icache protocol; what changes is that an
// enabled site is two words, `mflr r0` at site-4 and `bl` at the site, written in two phases with
// an RCU-tasks grace period between them:
//
//   enable:  phase 1  site-4: nop -> mflr r0     (harmless alone: r0 is volatile at entry)
//            sync; synchronize_rcu_tasks()
//            phase 2  site:   nop -> bl
//   disable: phase 1  site:   bl -> nop
//            sync; synchronize_rcu_tasks()
//            phase 2  site-4: mflr r0 -> nop
//
// The hazard the order and the grace period close (enable, wrong order or no grace period):
//
//   CPU 1 (task T in f)                       CPU 0 (patcher)
//   executes site-4: nop (r0 = stale)
//   <preempted, or merely slow>
//                                             writes site: bl ftrace_caller
//   executes site: bl ftrace_caller
//   ftrace_caller: link = r0 (stale), lr = r0 on exit -> f returns to garbage
//
// With the correct order a task between the two words has executed either the new mflr (r0 is
// its return address) or the old nop while the `bl` is still a nop; the grace period makes sure
// no task that executed the old nop is still stopped at the site when the `bl` appears (a
// preempted task is not quiescent, so the grace period waits for it to run on).

#include "Ppc32Code.h"
#include "Ppc32Protocols.h"
#include "ftsim/arch/Error.h"

#include <vector>

namespace ftsim::arch {
namespace {

struct MflrOptions {
  bool wrongOrder = false; // enable: bl before mflr; disable: mflr nopped before bl
  bool gracePeriod = true; // synchronize_rcu_tasks() between the phases
};

class Ppc32MflrPatch final : public PatchProtocol {
public:
  Ppc32MflrPatch(std::string name, std::string difference, MflrOptions options)
      : name_(std::move(name)), difference_(std::move(difference)), options_(options) {}

  std::string_view name() const override { return name_; }
  std::string_view difference() const override { return difference_; }
  const PatchStats &stats() const override { return stats_; }

  void attach(MachinePort &port) override {
    port_ = &port;
    port.setTrapHandler([](GuestContext &, std::uint64_t) { return TrapVerdict::NotMine; });
  }

  void queue(const PatchRequest &request) override {
    if (!port_)
      FTSIM_PANIC("patch protocol {} used before attach()", name_);
    if (request.newBytes.size() != 4 || request.oldBytes.size() != 4 || request.addr % 4 != 0)
      FTSIM_PANIC("patch_instruction: {} bytes at {:#x}; powerpc patches aligned words",
                  request.newBytes.size(), request.addr);
    stats_.sites++;
    const std::uint32_t oldWord = ppc32::wordOf(request.oldBytes);
    const std::uint32_t newWord = ppc32::wordOf(request.newBytes);
    const bool enable = oldWord == ppc32::kNop && ppc32::isBl(newWord);
    const bool disable = ppc32::isBl(oldWord) && newWord == ppc32::kNop;
    const std::uint64_t slot = request.addr - 4;
    Bytes slotBytes(4);
    const bool slotReadable = (enable || disable) && port_->readText(slot, slotBytes);
    const std::uint32_t expected = enable ? ppc32::kNop : ppc32::kMflrR0;
    if (!slotReadable || ppc32::wordOf(slotBytes) != expected) {
      // bl -> bl (ftrace_modify_call), a trampoline's own site, or a site without a nopped mflr
      // before it (a -pg `stw r0,4(r1)`, or `mflr r0` patched in at boot): one patch-class word.
      first_.push_back(request);
      return;
    }
    const PatchRequest slotRequest{slot, slotBytes,
                                   ppc32::wordBytes(enable ? ppc32::kMflrR0 : ppc32::kNop)};
    // Correct order: enabling restores the mflr first, disabling removes the bl first.
    const bool slotFirst = enable != options_.wrongOrder;
    (slotFirst ? first_ : second_).push_back(slotRequest);
    (slotFirst ? second_ : first_).push_back(request);
  }

  void finish() override {
    if (first_.empty() && second_.empty())
      return;
    stats_.batches++;
    storeAll(first_);
    if (!second_.empty()) {
      if (options_.gracePeriod)
        port_->synchronizeRcuTasks();
      storeAll(second_);
    }
    first_.clear();
    second_.clear();
  }

  void pokeNow(const PatchRequest &request) override {
    queue(request);
    finish();
  }

private:
  void storeAll(const std::vector<PatchRequest> &requests) {
    for (const PatchRequest &r : requests) {
      stats_.stores++;
      if (!port_->writeText(r.addr, r.newBytes))
        FTSIM_PANIC("patch_instruction: write fault at {:#x}", r.addr);
    }
    stats_.syncs++;
    port_->syncCores();
  }

  std::string name_;
  std::string difference_;
  MflrOptions options_;
  MachinePort *port_ = nullptr;
  std::vector<PatchRequest> first_, second_;
  PatchStats stats_;
};

} // namespace

bool patchesMflrSlot(const PatchProtocol &protocol) {
  return dynamic_cast<const Ppc32MflrPatch *>(&protocol) != nullptr;
}

std::unique_ptr<PatchProtocol> makePpc32MflrPatch(std::string name, std::string difference,
                                                  bool wrongOrder, bool gracePeriod) {
  return std::make_unique<Ppc32MflrPatch>(std::move(name), std::move(difference),
                                          MflrOptions{wrongOrder, gracePeriod});
}

} // namespace ftsim::arch
