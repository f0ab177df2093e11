#include "ftsim/model/Ppc32Patcher.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Ppc32Code.h"
#include "ftsim/arch/Ppc32Protocols.h"

namespace ftsim::model {

namespace ppc = arch::ppc32;

Ppc32SiteLayout ppc32SiteLayout(const arch::Image &image) {
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
    return Ppc32SiteLayout::PatchableEntry;
  if (ppc::isBl(w0))
    return Ppc32SiteLayout::Mcount;
  fatal("{}: the site at {:#x} is neither `bl _mcount` (-pg) nor two nops "
        "(-fpatchable-function-entry=2): {:08x} {:08x}",
        image.name, first, w0, w1);
}

std::uint64_t ppc32CallAdjust(std::uint64_t addr, Ppc32SiteLayout layout) {
  return layout == Ppc32SiteLayout::PatchableEntry ? addr + 4 : addr; // MCOUNT_INSN_SIZE
}

Ppc32Patcher::Ppc32Patcher(const arch::Arch &isa, arch::MachinePort &port,
                           arch::PatchProtocol &protocol, Ppc32SiteLayout layout,
                           Ppc32Targets targets,
                           std::function<std::uint64_t(const TraceFunction &)> functionAddress,
                           std::vector<std::uint64_t> ftraceCallSites)
    : ProtocolPatcher(isa, port, protocol, std::move(functionAddress), std::move(ftraceCallSites)),
      port_(port), layout_(layout), targets_(targets), mflrSlot_(arch::patchesMflrSlot(protocol)) {
  if (isa.name() != "ppc32")
    FTSIM_PANIC("Ppc32Patcher for {}", isa.name());
}

void Ppc32Patcher::addModule(const std::string &name, Ppc32ModuleStubs stubs) {
  if (name.empty())
    FTSIM_PANIC("a module needs a name");
  modules_[name] = stubs;
}

arch::EncodeResult Ppc32Patcher::encodeCall(const DynFtrace &rec, std::uint64_t target) const {
  arch::EncodeResult direct = arch().call(rec.ip, target);
  if (direct.ok)
    return direct;
  // __ftrace_make_call(): out of reach, so through the module's trampoline (rec->arch.mod).
  const auto *priv = std::get_if<ModuleArchFtrace>(&rec.arch);
  if (!priv || priv->module.empty())
    return {{}, false, direct.error + " (and the record has no module: rec->arch.mod is NULL)"};
  auto it = modules_.find(priv->module);
  if (it == modules_.end())
    return {{},
            false,
            fmt::format("{}; module {} has no ftrace trampolines", direct.error, priv->module)};
  const Ppc32ModuleStubs &s = it->second;
  std::uint64_t stub = 0;
  if (target == targets_.ftraceRegsCaller && target)
    stub = s.trampRegs ? s.trampRegs : s.tramp;
  else if (target == targets_.ftraceCaller && target)
    stub = s.tramp;
  if (!stub)
    return {{},
            false,
            fmt::format("{}; module {} has no trampoline to {:#x}", direct.error, priv->module,
                        target)};
  arch::EncodeResult viaStub = arch().call(rec.ip, stub);
  if (!viaStub.ok)
    viaStub.error = "REL24 out of range! " + viaStub.error;
  return viaStub;
}

arch::Bytes Ppc32Patcher::callBytes(const DynFtrace &rec, std::uint64_t target) const {
  return encodeCall(rec, target).bytes;
}

PatchOutcome Ppc32Patcher::expectWord(std::uint64_t addr, std::uint32_t word) {
  // ftrace_validate_inst()
  std::uint8_t b[4] = {};
  if (!port_.readText(addr, b))
    return {PatchStatus::ReadFault, ppc::wordBytes(word)};
  if (ppc::wordOf(b) != word)
    return {PatchStatus::Mismatch, ppc::wordBytes(word)};
  return {};
}

// ftrace_init_nop() of arch/powerpc/kernel/trace/ftrace.c (Linux v6.6): verify the instructions
// around the site, then make the site a nop (-pg) or patch `mflr r0` in before it (pfe). Boot text
// is not live, so the writes are plain (patch_instruction at boot).
PatchOutcome Ppc32Patcher::initNop(DynFtrace &rec, std::uint64_t mcountAddr) {
  if (layout_ == Ppc32SiteLayout::PatchableEntry) {
    // ftrace_call_adjust() belongs in ftrace_process_locs(), before the record exists; the core
    // has no such hook, so the site moves to the second nop here. Records stay sorted (all +4).
    rec.ip = ppc32CallAdjust(rec.ip, layout_);
    if (PatchOutcome o = expectWord(rec.ip - 4, ppc::kNop); !o.ok())
      return o;
    if (PatchOutcome o = expectWord(rec.ip, ppc::kNop); !o.ok())
      return o;
    if (mflrSlot_)
      return {}; // both words stay nops; enabling restores the mflr (Ppc32Protocols.h)
    return modifyCodeDirect(port_, rec.ip - 4, ppc::wordBytes(ppc::kNop),
                            ppc::wordBytes(ppc::kMflrR0));
  }
  // Expected sequence: 'mflr r0', 'stw r0,4(r1)', 'bl _mcount'.
  if (PatchOutcome o = expectWord(rec.ip - 8, ppc::kMflrR0); !o.ok())
    return o;
  if (PatchOutcome o = expectWord(rec.ip - 4, ppc::kStwR0_4R1); !o.ok())
    return o;
  const arch::Bytes nop = ppc::wordBytes(ppc::kNop);
  arch::EncodeResult direct = arch().call(rec.ip, mcountAddr);
  if (direct.ok)
    return modifyCodeDirect(port_, rec.ip, direct.bytes, nop);
  // A module site calls _mcount through the module's PLT entry: the bl must reach a stub whose
  // target is _mcount (module_trampoline_target(), __ftrace_make_nop() for modules).
  const auto *priv = std::get_if<ModuleArchFtrace>(&rec.arch);
  if (!priv || priv->module.empty())
    return {PatchStatus::Mismatch, {}}; // "No module provided for non-kernel address"
  arch::Bytes site(4);
  if (!port_.readText(rec.ip, site))
    return {PatchStatus::ReadFault, {}};
  const std::optional<std::uint64_t> stub = arch().callTarget(rec.ip, site);
  arch::Bytes stubBytes(ppc::kLongBranchStubSize);
  if (!stub || !port_.readText(*stub, stubBytes) ||
      ppc::longBranchTarget(stubBytes) != std::optional<std::uint64_t>(mcountAddr))
    return {PatchStatus::Mismatch, site};
  auto it = modules_.find(priv->module);
  if (it != modules_.end() && it->second.mcount && it->second.mcount != *stub)
    return {PatchStatus::Mismatch, site};
  return modifyCodeDirect(port_, rec.ip, site, nop);
}

PatchOutcome Ppc32Patcher::makeCall(const DynFtrace &rec, std::uint64_t addr) {
  if (!encodeCall(rec, addr).ok)
    return {PatchStatus::Mismatch, {}}; // -EINVAL: ftrace_bug "failed to modify"
  return ProtocolPatcher::makeCall(rec, addr);
}

PatchOutcome Ppc32Patcher::modifyCall(const DynFtrace &rec, std::uint64_t oldAddr,
                                      std::uint64_t addr) {
  if (!encodeCall(rec, addr).ok || !encodeCall(rec, oldAddr).ok)
    return {PatchStatus::Mismatch, {}};
  return ProtocolPatcher::modifyCall(rec, oldAddr, addr);
}

std::unique_ptr<ArchPatcher>
makeArchPatcher(const arch::Arch &isa, arch::MachinePort &port, arch::PatchProtocol &protocol,
                const arch::Image &image, Ppc32Targets targets,
                std::function<std::uint64_t(const TraceFunction &)> functionAddress,
                std::vector<std::uint64_t> ftraceCallSites) {
  if (isa.name() == "ppc32")
    return std::make_unique<Ppc32Patcher>(isa, port, protocol, ppc32SiteLayout(image), targets,
                                          std::move(functionAddress), std::move(ftraceCallSites));
  return std::make_unique<ProtocolPatcher>(isa, port, protocol, std::move(functionAddress),
                                           std::move(ftraceCallSites));
}

} // namespace ftsim::model
