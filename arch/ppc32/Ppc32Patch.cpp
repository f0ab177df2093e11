// powerpc live patching as Linux does it (patch-instruction, patch-instruction-ipi): one aligned
// 4-byte store per instruction (patch_instruction() in arch/powerpc/lib/code-patching.c), then
// `dcbst; sync; icbi; sync; isync` on the patching CPU only. Since c96f83856f56 (v4.6) nothing
// makes the other CPUs context-synchronise: they see the new word once they do, and until then,
// under the `stale` fetch model, may still execute the old one. That is safe because ftrace writes
// patch-class instructions (b, bl, nop; Power ISA Book II, "Concurrent Modification and Execution
// of Instructions"), for which either the old or the new word is a correct execution, and because
// ftrace's core synchronises every CPU before it frees what an old word reached (Ppc32Cmodx.h).
// `syncAtFinish` adds the IPI after each batch (the pre-v4.6 stop_machine()'s effect).

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"

namespace ftsim::arch {
namespace {

class Ppc32WordPatch final : public PatchProtocol {
public:
  Ppc32WordPatch(std::string name, std::string difference, bool syncAtFinish)
      : name_(std::move(name)), difference_(std::move(difference)), syncAtFinish_(syncAtFinish) {}

  std::string_view name() const override { return name_; }
  std::string_view difference() const override { return difference_; }
  const PatchStats &stats() const override { return stats_; }

  void attach(MachinePort &port) override {
    port_ = &port;
    // No breakpoints: a trap at a site is never ours.
    port.setTrapHandler([](GuestContext &, std::uint64_t) { return TrapVerdict::NotMine; });
  }

  void queue(const PatchRequest &request) override {
    store(request);
    pending_ = true;
  }

  void finish() override {
    if (!pending_)
      return;
    pending_ = false;
    stats_.batches++;
    if (syncAtFinish_) {
      stats_.syncs++;
      port_->syncCores();
    }
  }

  void pokeNow(const PatchRequest &request) override {
    queue(request);
    finish();
  }

private:
  void store(const PatchRequest &request) {
    if (!port_)
      FTSIM_PANIC("patch protocol {} used before attach()", name_);
    if (request.newBytes.size() != 4 || request.addr % 4 != 0)
      FTSIM_PANIC("patch_instruction: {} bytes at {:#x}; powerpc patches aligned words",
                  request.newBytes.size(), request.addr);
    stats_.sites++;
    stats_.stores++;
    if (!port_->writeText(request.addr, request.newBytes))
      FTSIM_PANIC("patch_instruction: write fault at {:#x}", request.addr);
  }

  std::string name_;
  std::string difference_;
  bool syncAtFinish_;
  bool pending_ = false;
  MachinePort *port_ = nullptr;
  PatchStats stats_;
};

} // namespace

std::unique_ptr<PatchProtocol> makePpc32WordPatch(std::string name, std::string difference,
                                                  bool syncAtFinish) {
  return std::make_unique<Ppc32WordPatch>(std::move(name), std::move(difference), syncAtFinish);
}

} // namespace ftsim::arch
