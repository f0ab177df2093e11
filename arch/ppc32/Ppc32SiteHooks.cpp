// The ppc32 SiteHooks: arch/powerpc/kernel/trace/ftrace.c (Linux v6.6, and before it where
// SiteHooksRequest::ftraceInitNop is off: v6.1's and v4.19's ftrace_make_nop()) and the ftrace part
// of the module loader (module_finalize_ftrace() in arch/powerpc/kernel/module_32.c).
//  - ftrace_init_nop() for both call-site layouts: gcc -pg (`mflr r0; stw r0,4(r1); bl _mcount`,
//    verify the two words before the site, nop the bl) and -fpatchable-function-entry=2 (verify
//    two nops, patch `mflr r0` in over the first; the site is the second: ftrace_call_adjust());
//  - records in modules (rec->arch.mod, dyn_arch_ftrace; the datum is the module's index + 1): a
//    module loaded more than 32 MiB from ftrace_caller calls it through the module's long-branch
//    stubs (mod->arch.tramp, mod->arch.tramp_regs); a `bl` that cannot reach its target is an
//    error (-EINVAL, "REL24 out of range!"), never truncated;
//  - the `mflr r0` slot the two-instruction protocols write (Ppc32Protocols.h).

#include "Ppc32Code.h"
#include "Ppc32Protocols.h"
#include "Ppc32Target.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim::arch {
namespace {

namespace ppc = ppc32;

enum class SiteLayout {
  Mcount,         // gcc -pg: mflr r0; stw r0,4(r1); bl _mcount (the site is the bl)
  PatchableEntry, // -fpatchable-function-entry=2: nop; nop (mflr r0 patched in; the site: word 2)
};

// The layout of an image's call sites, from the words at its first __mcount_loc entry.
SiteLayout siteLayout(const Image &image) {
  if (image.mcountLocs.empty())
    fatal("{}: no __mcount_loc entries to tell the call-site layout from", image.name);
  std::uint64_t first = UINT64_MAX;
  for (std::uint64_t loc : image.mcountLocs)
    if (loc)
      first = std::min(first, loc);
  std::uint8_t words[8] = {};
  if (first == UINT64_MAX || !image.read(first, words))
    fatal("{}: the first __mcount_loc entry does not point into the image", image.name);
  const std::uint32_t w0 = ppc::wordOf(std::span(words, 4));
  const std::uint32_t w1 = ppc::wordOf(std::span(words + 4, 4));
  if (w0 == ppc::kNop && w1 == ppc::kNop)
    return SiteLayout::PatchableEntry;
  if (ppc::isBl(w0))
    return SiteLayout::Mcount;
  fatal("{}: the site at {:#x} is neither `bl _mcount` (-pg) nor two nops "
        "(-fpatchable-function-entry=2): {:08x} {:08x}",
        image.name, first, w0, w1);
}

// mod->arch.tramp / tramp_regs / the module's PLT entry for _mcount.
struct ModuleStubs {
  std::string name;
  std::uint64_t tramp = 0;     // -> ftrace_caller
  std::uint64_t trampRegs = 0; // -> ftrace_regs_caller (0: use tramp)
  std::uint64_t mcount = 0;    // -> _mcount (what the module's sites call before boot)
};

class Ppc32SiteHooks final : public SiteHooks {
public:
  Ppc32SiteHooks(const Arch &arch, const SiteHooksRequest &request)
      : SiteHooks(arch), request_(request),
        mflrSlot_(request.protocol && patchesMflrSlot(*request.protocol)) {
    if (!request.image)
      FTSIM_PANIC("ppc32 site hooks need the kernel image for its call-site layout");
    layout_ = siteLayout(*request.image);
    if (layout_ == SiteLayout::PatchableEntry && !request.ftraceInitNop)
      fatal("{}: -fpatchable-function-entry sites, which powerpc ftrace takes only since "
            "ftrace_init_nop() (v6.6)",
            request.image->name);
  }

  std::uint64_t recordDatum(std::string_view module) const override {
    auto it = std::find_if(modules_.begin(), modules_.end(),
                           [&](const ModuleStubs &m) { return m.name == module; });
    return it == modules_.end() ? 0 : static_cast<std::uint64_t>(it - modules_.begin()) + 1;
  }

  EncodeResult encodeCall(std::uint64_t ip, std::uint64_t datum,
                          std::uint64_t target) const override;
  PatchOutcome initNop(MachinePort &port, std::uint64_t &ip, std::uint64_t datum,
                       std::uint64_t mcountAddr) override;
  ModuleLoad loadModule(const Image &module) override;

  std::vector<ExtraSite> extraSites(std::uint64_t ip) const override {
    if (!mflrSlot_)
      return {};
    // The `mflr r0` before the site, between a nop and mflr r0.
    return {{ip - 4, 4, {ppc::wordBytes(ppc::kNop), ppc::wordBytes(ppc::kMflrR0)}, " (mflr)"}};
  }

private:
  const ModuleStubs *moduleOf(std::uint64_t datum) const {
    return datum && datum <= modules_.size() ? &modules_[datum - 1] : nullptr;
  }
  PatchOutcome initPatchableEntry(MachinePort &port, std::uint64_t &ip);
  PatchOutcome initModuleMcount(MachinePort &port, std::uint64_t ip, std::uint64_t datum,
                                std::uint64_t mcountAddr);

  SiteHooksRequest request_;
  SiteLayout layout_ = SiteLayout::Mcount;
  bool mflrSlot_; // the protocol keeps the word before the site a nop while disabled
  std::vector<ModuleStubs> modules_;
};

EncodeResult Ppc32SiteHooks::encodeCall(std::uint64_t ip, std::uint64_t datum,
                                        std::uint64_t target) const {
  EncodeResult direct = arch().call(ip, target);
  if (direct.ok)
    return direct;
  // __ftrace_make_call(): out of reach, so through the module's trampoline (rec->arch.mod).
  const ModuleStubs *mod = moduleOf(datum);
  if (!mod)
    return {{}, false, direct.error + " (and the record has no module: rec->arch.mod is NULL)"};
  std::uint64_t stub = 0;
  if (target == request_.ftraceRegsCaller && target)
    stub = mod->trampRegs ? mod->trampRegs : mod->tramp;
  else if (target == request_.ftraceCaller && target)
    stub = mod->tramp;
  if (!stub)
    return {
        {},
        false,
        fmt::format("{}; module {} has no trampoline to {:#x}", direct.error, mod->name, target)};
  EncodeResult viaStub = arch().call(ip, stub);
  if (!viaStub.ok)
    viaStub.error = "REL24 out of range! " + viaStub.error;
  return viaStub;
}

// ftrace_validate_inst()
PatchOutcome expectWord(MachinePort &port, std::uint64_t addr, std::uint32_t word) {
  std::uint8_t b[4] = {};
  if (!port.readText(addr, b))
    return {PatchStatus::ReadFault, ppc::wordBytes(word)};
  if (ppc::wordOf(b) != word)
    return {PatchStatus::Mismatch, ppc::wordBytes(word)};
  return {};
}

PatchOutcome Ppc32SiteHooks::initPatchableEntry(MachinePort &port, std::uint64_t &ip) {
  // ftrace_call_adjust() belongs in ftrace_process_locs(), before the record exists; the core
  // has no such hook, so the site moves to the second nop here (MCOUNT_INSN_SIZE). Records stay
  // sorted (all +4).
  ip += 4;
  if (PatchOutcome o = expectWord(port, ip - 4, ppc::kNop); !o.ok())
    return o;
  if (PatchOutcome o = expectWord(port, ip, ppc::kNop); !o.ok())
    return o;
  if (mflrSlot_)
    return {}; // both words stay nops; enabling restores the mflr (Ppc32Protocols.h)
  return modifyCodeDirect(port, ip - 4, ppc::wordBytes(ppc::kNop), ppc::wordBytes(ppc::kMflrR0));
}

// A module site calls _mcount through the module's PLT entry: the bl must reach a stub whose
// target is _mcount (module_trampoline_target(), __ftrace_make_nop() for modules).
PatchOutcome Ppc32SiteHooks::initModuleMcount(MachinePort &port, std::uint64_t ip,
                                              std::uint64_t datum, std::uint64_t mcountAddr) {
  const ModuleStubs *mod = moduleOf(datum);
  if (!mod)
    return {PatchStatus::Mismatch, {}}; // "No module provided for non-kernel address"
  Bytes site(4);
  if (!port.readText(ip, site))
    return {PatchStatus::ReadFault, {}};
  const std::optional<std::uint64_t> stub = arch().callTarget(ip, site);
  Bytes stubBytes(ppc::kLongBranchStubSize);
  if (!stub || !port.readText(*stub, stubBytes) ||
      ppc::longBranchTarget(stubBytes) != std::optional<std::uint64_t>(mcountAddr))
    return {PatchStatus::Mismatch, site};
  if (mod->mcount && mod->mcount != *stub)
    return {PatchStatus::Mismatch, site};
  return modifyCodeDirect(port, ip, site, ppc::wordBytes(ppc::kNop));
}

// ftrace_init_nop(): verify the instructions around the site, then make the site a nop (-pg) or
// patch `mflr r0` in before it (pfe). Boot text is not live, so the writes are plain
// (patch_instruction at boot).
PatchOutcome Ppc32SiteHooks::initNop(MachinePort &port, std::uint64_t &ip, std::uint64_t datum,
                                     std::uint64_t mcountAddr) {
  if (layout_ == SiteLayout::PatchableEntry)
    return initPatchableEntry(port, ip);
  // Expected sequence: 'mflr r0', 'stw r0,4(r1)', 'bl _mcount' (v6.6 on; before, ftrace_make_nop()
  // at boot reads the bl alone: ftrace_modify_code() or, in a module, __ftrace_make_nop()).
  if (request_.ftraceInitNop) {
    if (PatchOutcome o = expectWord(port, ip - 8, ppc::kMflrR0); !o.ok())
      return o;
    if (PatchOutcome o = expectWord(port, ip - 4, ppc::kStwR0_4R1); !o.ok())
      return o;
  }
  const EncodeResult direct = arch().call(ip, mcountAddr);
  if (direct.ok)
    return modifyCodeDirect(port, ip, direct.bytes, ppc::wordBytes(ppc::kNop));
  return initModuleMcount(port, ip, datum, mcountAddr);
}

// module_finalize_ftrace(): mod->arch.tramp / tramp_regs as long-branch stubs to ftrace_caller /
// ftrace_regs_caller, written before the module's text is live. The module's name comes from its
// `<name>_ftrace_tramp` slot.
ModuleLoad Ppc32SiteHooks::loadModule(const Image &module) {
  constexpr std::string_view kTrampSuffix = "_ftrace_tramp";
  ModuleStubs stubs;
  for (const ImageSymbol &s : module.symbols)
    if (s.name.ends_with(kTrampSuffix))
      stubs.name = s.name.substr(0, s.name.size() - kTrampSuffix.size());
  if (stubs.name.empty())
    fatal("module {} has no <name>_ftrace_tramp slot for mod->arch.tramp", module.name);
  ModuleLoad load{stubs.name, {}};
  stubs.tramp = module.findSymbol(stubs.name + "_ftrace_tramp")->addr;
  load.writes.push_back({stubs.tramp, ppc::longBranchStub(request_.ftraceCaller).bytes});
  if (const ImageSymbol *regs = module.findSymbol(stubs.name + "_ftrace_tramp_regs")) {
    stubs.trampRegs = regs->addr;
    load.writes.push_back({regs->addr, ppc::longBranchStub(request_.ftraceRegsCaller).bytes});
  }
  if (const ImageSymbol *mcount = module.findSymbol("_mcount"))
    stubs.mcount = mcount->addr;
  modules_.push_back(std::move(stubs));
  return load;
}

} // namespace

std::unique_ptr<SiteHooks> makePpc32SiteHooks(const Arch &arch, const SiteHooksRequest &request) {
  return std::make_unique<Ppc32SiteHooks>(arch, request);
}

} // namespace ftsim::arch
