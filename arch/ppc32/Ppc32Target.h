#pragma once
// The parts of the ppc32 target (PowerPcArch.cpp returns them for ppc32), one file each.

#include "ftsim/arch/GuestAbi.h"
#include "ftsim/arch/LivePatchingRule.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/SiteHooks.h"
#include "ftsim/arch/SnippetEmitter.h"
#include "ftsim/arch/Trampolines.h"

namespace ftsim::arch {

const std::vector<ProtocolEntry> &ppc32Protocols(); // Ppc32Protocols.cpp
const std::vector<MutantEntry> &ppc32Mutants();     // Ppc32Mutants.cpp
const GuestAbi &ppc32GuestAbi();                    // Ppc32GuestAbi.cpp
std::unique_ptr<FtraceTrampolines> makePpc32Trampolines(const Arch &arch,
                                                        const TrampolineRequest &request);
std::unique_ptr<SnippetEmitter> makePpc32Snippets(const Arch &arch);    // Ppc32Snippets.cpp
std::unique_ptr<LivePatchingRule> makePpc32CmodxRule(const Arch &arch); // Ppc32CmodxRule.cpp
std::unique_ptr<SiteHooks> makePpc32SiteHooks(const Arch &arch,         // Ppc32SiteHooks.cpp
                                              const SiteHooksRequest &request);

} // namespace ftsim::arch
