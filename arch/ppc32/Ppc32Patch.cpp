// powerpc live patching as protocol programs (ProtocolProgram.h): every store is one aligned word,
// patch_instruction() of arch/powerpc/lib/code-patching.c (the store, then `dcbst; sync; icbi;
// sync; isync` on the patching CPU only). Since c96f83856f56 (v4.6) nothing makes the other CPUs
// context-synchronise: they see the new word once they do, and until then, under the `stale`
// fetch model, may still execute the old one. That is safe because ftrace writes patch-class
// instructions (b, bl, nop; Power ISA Book II, "Concurrent Modification and Execution of
// Instructions"), for which either the old or the new word is a correct execution, and because
// ftrace's core synchronises every CPU before it frees what an old word reached (Ppc32Cmodx.h).
//
// With `mflr_slot`, an enabled site is two words, `mflr r0` at site-4 and `bl` at the site, and a
// request that turns a nop into a bl (or back) becomes two word writes whose parts the program
// orders (word-mflr: restore the mflr, grace period, then the bl; the reverse to disable):
//
//   CPU 1 (task T in f)                       CPU 0 (patcher, wrong order or no grace period)
//   executes site-4: nop (r0 = stale)
//   <preempted, or merely slow>
//                                             writes site: bl ftrace_caller
//   executes site: bl ftrace_caller
//   ftrace_caller: link = r0 (stale), lr = r0 on exit -> f returns to garbage
//
// The stores of an update are made in queue order when it finishes; between queueing two records
// the ftrace core does nothing another CPU can see, so this is the order of Linux's per-record
// patch_instruction() calls.

#include "Ppc32Code.h"
#include "Ppc32Protocols.h"
#include "ftsim/arch/Error.h"

#include <vector>

namespace ftsim::arch {
namespace {

struct WordWrite {
  Ppc32Part part;
  std::uint64_t addr;
  std::uint32_t word;
};

class Ppc32Patch final : public PatchProtocol {
public:
  Ppc32Patch(std::string name, std::string difference, Ppc32Program program)
      : name_(std::move(name)), difference_(std::move(difference)), program_(std::move(program)) {}

  std::string_view name() const override { return name_; }
  std::string_view difference() const override { return difference_; }
  const PatchStats &stats() const override { return stats_; }
  bool mflrSlot() const { return program_.mflrSlot; }

  void attach(MachinePort &port) override {
    port_ = &port;
    // No breakpoints: a trap at a site is never ours.
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
    const bool pair = program_.mflrSlot && (enable || disable) &&
                      port_->readText(slot, slotBytes) &&
                      ppc32::wordOf(slotBytes) == (enable ? ppc32::kNop : ppc32::kMflrR0);
    if (!pair) {
      // bl -> bl (ftrace_modify_call), a trampoline's own site, a site without a nopped mflr
      // before it (a -pg `stw r0,4(r1)`, or `mflr r0` patched in at boot), or no mflr slot at
      // all: one patch-class word.
      queued_.push_back({Ppc32Part::Site, request.addr, newWord});
      return;
    }
    if (enable) {
      queued_.push_back({Ppc32Part::MflrRestore, slot, ppc32::kMflrR0});
      queued_.push_back({Ppc32Part::BlWrite, request.addr, newWord});
    } else {
      queued_.push_back({Ppc32Part::BlRemove, request.addr, newWord});
      queued_.push_back({Ppc32Part::MflrRemove, slot, ppc32::kNop});
    }
  }

  void finish() override {
    if (queued_.empty())
      return;
    stats_.batches++;
    bool unsynced = false;
    for (std::size_t i = 0; i < program_.steps.size(); ++i) {
      const Ppc32Step &step = program_.steps[i];
      switch (step.op) {
      case Ppc32Step::Op::Write:
        for (const WordWrite &w : queued_)
          if (step.writes(w.part)) {
            store(w);
            unsynced = true;
          }
        break;
      case Ppc32Step::Op::Sync:
        if (unsynced) {
          stats_.syncs++;
          port_->syncCores();
          unsynced = false;
        }
        break;
      case Ppc32Step::Op::GracePeriod:
        if (writesAfter(i))
          port_->synchronizeRcuTasks();
        break;
      }
    }
    queued_.clear();
  }

  void pokeNow(const PatchRequest &request) override {
    queue(request);
    finish();
  }

private:
  bool writesAfter(std::size_t index) const {
    for (std::size_t i = index + 1; i < program_.steps.size(); ++i)
      if (program_.steps[i].op == Ppc32Step::Op::Write)
        for (const WordWrite &w : queued_)
          if (program_.steps[i].writes(w.part))
            return true;
    return false;
  }

  void store(const WordWrite &w) {
    stats_.stores++;
    if (!port_->writeText(w.addr, ppc32::wordBytes(w.word)))
      FTSIM_PANIC("patch_instruction: write fault at {:#x}", w.addr);
  }

  std::string name_;
  std::string difference_;
  Ppc32Program program_;
  MachinePort *port_ = nullptr;
  std::vector<WordWrite> queued_;
  PatchStats stats_;
};

} // namespace

bool patchesMflrSlot(const PatchProtocol &protocol) {
  const auto *p = dynamic_cast<const Ppc32Patch *>(&protocol);
  return p && p->mflrSlot();
}

std::unique_ptr<PatchProtocol> makePpc32Patch(std::string name, std::string difference,
                                              Ppc32Program program) {
  return std::make_unique<Ppc32Patch>(std::move(name), std::move(difference), std::move(program));
}

} // namespace ftsim::arch
