#pragma once
// What the ftrace arch code does per record beyond one encoding (arch/<isa>/kernel/ftrace.c and
// the module loader), for the model's generic patcher (ftsim::model::ProtocolPatcher) and the
// simulated kernel. A target makes one SiteHooks per booted kernel (Arch::makeSiteHooks); the
// base class is the single-instruction site of x86: a direct call, boot nops the call to the
// profiling hook, no record datum, no modules, no extra patch sites. powerpc adds the
// dyn_arch_ftrace module pointer, long-branch stubs, ftrace_init_nop for two call-site layouts and
// the `mflr r0` slot of the two-instruction protocols.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"
#include "ftsim/arch/PatchOutcome.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::arch {

class Image;
class PatchProtocol;

struct SiteHooksRequest {
  const Image *image = nullptr;            // the kernel image (powerpc: its call-site layout)
  const PatchProtocol *protocol = nullptr; // the protocol the patcher uses (powerpc: mflr slot)
  std::uint64_t ftraceCaller = 0;          // FTRACE_ADDR, what module stubs reach
  std::uint64_t ftraceRegsCaller = 0;      // FTRACE_REGS_ADDR
  // powerpc: the release has ftrace_init_nop() (v6.6: the words before a -pg site checked,
  // -fpatchable-function-entry sites taken); false: boot's ftrace_make_nop() checks the `bl` alone
  // and an image of -fpatchable-function-entry sites is a FatalError.
  bool ftraceInitNop = true;
};

// One text write the module loader makes before the module's text is live.
struct TextWrite {
  std::uint64_t addr = 0;
  Bytes bytes;
};

// What loading a module image into the kernel takes (module_finalize_ftrace()).
struct ModuleLoad {
  std::string name;              // the module's name (the " [mod]" of symbols)
  std::vector<TextWrite> writes; // e.g. powerpc mod->arch.tramp long-branch stubs
};

// A patch site the protocol writes next to a record's site, with every state it may hold.
struct ExtraSite {
  std::uint64_t addr = 0;
  unsigned size = 0;
  std::vector<Bytes> states;
  std::string suffix; // appended to the record's name, e.g. " (mflr)"
};

class SiteHooks {
public:
  explicit SiteHooks(const Arch &arch) : arch_(arch) {}
  virtual ~SiteHooks() = default;

  const Arch &arch() const { return arch_; }

  // dyn_arch_ftrace of a new record in `module` ("" for the core kernel), opaque to the ftrace
  // core: 0 for the core kernel (powerpc: rec->arch.mod == NULL) and on ISAs that keep none.
  virtual std::uint64_t recordDatum(std::string_view module) const;
  // ftrace_call_replace(): the call at `ip` (of a record with `datum`) to `target`, or why none.
  virtual EncodeResult encodeCall(std::uint64_t ip, std::uint64_t datum,
                                  std::uint64_t target) const;
  // ftrace_init_nop(): the site at `ip` calls the profiling hook at `mcountAddr`; verify it and
  // disable it with plain writes (boot text is not live). May move `ip` to the real patch site
  // (powerpc ftrace_call_adjust()).
  virtual PatchOutcome initNop(MachinePort &port, std::uint64_t &ip, std::uint64_t datum,
                               std::uint64_t mcountAddr);
  // The module loader's part for `module` (already in memory): its name and the text writes to
  // make before its records are created; registers the module for recordDatum(). FatalError when
  // the ISA does not model modules or the image lacks what the loader needs.
  virtual ModuleLoad loadModule(const Image &module);
  // Patch sites next to the record at `ip` that the protocol writes too.
  virtual std::vector<ExtraSite> extraSites(std::uint64_t ip) const;

private:
  const Arch &arch_;
};

} // namespace ftsim::arch
