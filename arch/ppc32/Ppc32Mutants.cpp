// ppc32 mutants that are not entries of the protocol table: protocols Linux never ran on powerpc,
// built only for the mutation score to kill.

#include "Ppc32Code.h"
#include "Ppc32Target.h"
#include "ftsim/arch/Error.h"

namespace ftsim::arch {
namespace {

namespace ppc = ppc32;

// x86's breakpoint idea on powerpc: a trap (`tw 31,0,0`) first, sync, then the new word, sync.
// `tw` is not a patch-class instruction (Power ISA Book II, CMODX): written over a word another
// CPU may be executing, the architecture does not say what that CPU executes. Linux never does it
// on powerpc (patch_instruction() writes the final word at once).
class Ppc32TrapFirst final : public PatchProtocol {
public:
  std::string_view name() const override { return "word-trap-first"; }
  std::string_view difference() const override { return kDifference; }
  const PatchStats &stats() const override { return stats_; }
  void attach(MachinePort &port) override {
    port_ = &port;
    port.setTrapHandler([](GuestContext &, std::uint64_t) {
      return TrapVerdict::NotMine; // no handler: powerpc has none for ftrace sites
    });
  }
  void queue(const PatchRequest &request) override { queued_.push_back(request); }
  void finish() override {
    if (queued_.empty())
      return;
    for (const PatchRequest &r : queued_)
      store(r.addr, ppc::wordBytes(0x7fe00008u)); // tw 31,0,0
    port_->syncCores();
    for (const PatchRequest &r : queued_)
      store(r.addr, r.newBytes);
    port_->syncCores();
    stats_.batches++;
    stats_.syncs += 2;
    queued_.clear();
  }
  void pokeNow(const PatchRequest &request) override {
    queue(request);
    finish();
  }
  static constexpr const char *kDifference =
      "writes the trap tw 31,0,0 over the site first, then the new word (x86's int3 idea; a "
      "trap is not a patch-class instruction)";

private:
  void store(std::uint64_t addr, const Bytes &word) {
    stats_.stores++;
    if (!port_->writeText(addr, word))
      FTSIM_PANIC("word-trap-first: write fault at {:#x}", addr);
  }
  MachinePort *port_ = nullptr;
  PatchStats stats_;
  std::vector<PatchRequest> queued_;
};

// The branch-range encoder bug: the offset masked into LI without a range check (what
// create_branch() refuses with "Branch out of range"). Returns a `bl` for every aligned pair.
EncodeResult truncatingBl(std::uint64_t site, std::uint64_t target) {
  const auto delta = static_cast<std::uint32_t>(target - site);
  return {ppc::wordBytes(0x48000001u | (delta & 0x03fffffcu)), true, {}};
}

} // namespace

const std::vector<MutantEntry> &ppc32Mutants() {
  // A kernel-text site; the offsets are the edges of the +-32 MiB range and the distance from it
  // down to the module area (0xb0000000), where a truncated bl misbranches.
  constexpr std::uint64_t kSite = 0xc0001008;
  static const std::vector<MutantEntry> entries = {
      {{"word-trap-first", "ppc32", Ppc32TrapFirst::kDifference, false},
       [](const Arch &, const ProtocolInfo &) { return std::make_unique<Ppc32TrapFirst>(); },
       {},
       {},
       0,
       {}},
      {{"bl-truncate", "ppc32",
        "the bl encoder masks the offset into LI without a range check; patching protocol "
        "patch-instruction (only the z3:bl-range rule sees it: check runs the real encoder)",
        false},
       [](const Arch &arch, const ProtocolInfo &) {
         return makePatchProtocol(arch, "patch-instruction");
       },
       truncatingBl,
       "bl-range",
       kSite,
       {0x1fffffcll, 0x2000000ll, -0x2000000ll, -0x2000004ll,
        static_cast<std::int64_t>(0xb0000000ll - static_cast<std::int64_t>(kSite))}},
  };
  return entries;
}

} // namespace ftsim::arch
