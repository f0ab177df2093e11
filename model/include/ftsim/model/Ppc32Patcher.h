#pragma once
// The ppc32 ArchPatcher: arch/powerpc/kernel/trace/ftrace.c on top of a ppc32 PatchProtocol
// (word, word-nosync, word-mflr, ...). What it adds to ProtocolPatcher:
//  - ftrace_init_nop() for both call-site layouts: gcc -pg (`mflr r0; stw r0,4(r1); bl _mcount`,
//    verify the two words before the site, nop the bl) and -fpatchable-function-entry=2 (verify
//    two nops, patch `mflr r0` in over the first; the site is the second: ftrace_call_adjust());
//  - records in modules (rec->arch.mod, dyn_arch_ftrace): a module loaded more than 32 MiB from
//    ftrace_caller calls it through the module's long-branch stubs (mod->arch.tramp,
//    mod->arch.tramp_regs, set up at load by module_finalize_ftrace() in module_32.c); a `bl` that
//    cannot reach its target is an error (-EINVAL, "REL24 out of range!"), never truncated.
// Who calls what: as ArchPatcher.h says; addModule() once per module, before the core boots or
// updates records of that module (the module loader, after writing the stubs).

#include "ftsim/arch/Image.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/model/ProtocolPatcher.h"

#include <map>
#include <memory>
#include <string>

namespace ftsim::model {

enum class Ppc32SiteLayout {
  Mcount,         // gcc -pg: mflr r0; stw r0,4(r1); bl _mcount (the site is the bl)
  PatchableEntry, // -fpatchable-function-entry=2: nop; nop (mflr r0 patched in; the site: word 2)
};

// The layout of an image's call sites, from the words at its first __mcount_loc entry.
// FatalError when they are neither layout.
Ppc32SiteLayout ppc32SiteLayout(const arch::Image &image);

// ftrace_call_adjust(): with -fpatchable-function-entry the table holds the function entry and
// the site is the second nop (arch/powerpc/include/asm/ftrace.h, Linux v6.6).
std::uint64_t ppc32CallAdjust(std::uint64_t addr, Ppc32SiteLayout layout);

// mod->arch.tramp / tramp_regs / the module's PLT entry for _mcount: long-branch stubs in module
// memory (ftsim::arch::ppc32::longBranchStub).
struct Ppc32ModuleStubs {
  std::uint64_t tramp = 0;     // -> ftrace_caller
  std::uint64_t trampRegs = 0; // -> ftrace_regs_caller (0: use tramp)
  std::uint64_t mcount = 0;    // -> _mcount (what the module's sites call before boot)
};

struct Ppc32Targets {
  std::uint64_t ftraceCaller = 0;     // FTRACE_ADDR
  std::uint64_t ftraceRegsCaller = 0; // FTRACE_REGS_ADDR
};

class Ppc32Patcher final : public ProtocolPatcher {
public:
  Ppc32Patcher(const arch::Arch &isa, arch::MachinePort &port, arch::PatchProtocol &protocol,
               Ppc32SiteLayout layout, Ppc32Targets targets = {},
               std::function<std::uint64_t(const TraceFunction &)> functionAddress = {},
               std::vector<std::uint64_t> ftraceCallSites = {});

  Ppc32SiteLayout layout() const { return layout_; }
  void addModule(const std::string &name, Ppc32ModuleStubs stubs);

  // ftrace_call_replace(): `bl target` when in reach, else `bl` to the record's module stub for
  // that target; empty (matches no site, so verification reports it) when neither exists.
  arch::Bytes callBytes(const DynFtrace &rec, std::uint64_t target) const override;
  PatchOutcome initNop(DynFtrace &rec, std::uint64_t mcountAddr) override;
  PatchOutcome makeCall(const DynFtrace &rec, std::uint64_t addr) override;
  PatchOutcome modifyCall(const DynFtrace &rec, std::uint64_t oldAddr, std::uint64_t addr) override;

  // The `bl` at rec.ip for `target`, or why there is none.
  arch::EncodeResult encodeCall(const DynFtrace &rec, std::uint64_t target) const;

private:
  PatchOutcome expectWord(std::uint64_t addr, std::uint32_t word);

  arch::MachinePort &port_;
  Ppc32SiteLayout layout_;
  Ppc32Targets targets_;
  bool mflrSlot_; // the protocol keeps the word before the site a nop while disabled
  std::map<std::string, Ppc32ModuleStubs, std::less<>> modules_;
};

// The ArchPatcher `ftsim boot` and the simulated kernel use for `image`: a Ppc32Patcher for
// ppc32 (layout from the image), a ProtocolPatcher otherwise.
std::unique_ptr<ArchPatcher>
makeArchPatcher(const arch::Arch &isa, arch::MachinePort &port, arch::PatchProtocol &protocol,
                const arch::Image &image, Ppc32Targets targets = {},
                std::function<std::uint64_t(const TraceFunction &)> functionAddress = {},
                std::vector<std::uint64_t> ftraceCallSites = {});

} // namespace ftsim::model
