#pragma once
// The arch side of the update engine: how one ISA turns the core's decisions into stores. The core
// (FtraceCore) decides *what* every call site must become (ftrace_check_record) and verifies every
// site's current bytes before anything is written (ftrace_verify_code); an ArchPatcher decides
// *how* the bytes change (x86: the text_poke_bp int3 batch; powerpc: one aligned word store then
// icache sync; the plain-store variant below).
//
// Who calls what, and when (all calls come from the patcher CPU, with ftrace_lock held):
//  boot:        initNop(rec) once per record, in ip order (ftrace_update_code).
//  every update (ftrace_run_update_code):
//               prepare()                                    ftrace_arch_code_modify_prepare
//               updateFtraceFunc(ftrace_ops_list_func)        if the ftrace_call target changes
//               beginBatch()
//               makeCall / makeNop / modifyCall per record     ftrace_replace_code, after the core
//                                                             verified every site's old bytes
//               finishBatch()                                 text_poke_finish()
//               updateFtraceFunc(final function)               after a core sync
//               (smp_call_function) postProcess() ftrace_arch_code_modify_post_process
// A returned failure stops the engine (ftrace_bug, then ftrace_kill), as in Linux.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/MachinePort.h"
#include "ftsim/model/DynFtrace.h"
#include "ftsim/model/FtraceBug.h"
#include "ftsim/model/Symbolizer.h"
#include "ftsim/model/TraceFunction.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace ftsim::model {

class ArchPatcher {
public:
  virtual ~ArchPatcher() = default;

  virtual const arch::Arch &arch() const = 0;

  // sizeof(struct dyn_arch_ftrace): 0 on x86, 4 on ppc32 (the `mod` pointer).
  virtual unsigned archPrivateSize() const { return arch().dynArchFtraceSize(); }
  // The arch-private datum of a new record (DynFtrace::arch; powerpc records the owning module).
  virtual std::uint64_t recordDatum(const DynFtrace &, const std::optional<SymbolInfo> &) const {
    return 0;
  }

  // ftrace_call_replace(ip, addr) and ftrace_nop_replace(): the bytes a site holds when it calls
  // `target` / when it is disabled. The core uses them to verify sites before patching. The
  // default encodes with arch(); an unreachable target is an internal bug (FTSIM_PANIC) — a
  // patcher over SiteHooks (long-branch stubs) overrides this.
  virtual arch::Bytes callBytes(const DynFtrace &rec, std::uint64_t target) const;
  virtual arch::Bytes nopBytes(const DynFtrace &rec) const;

  // ftrace_init_nop(): at boot the site calls the mcount/fentry symbol at `mcountAddr`; read it,
  // verify it, write the nop. Modules and boot text are not live yet, so a plain write is right.
  virtual PatchOutcome initNop(DynFtrace &rec, std::uint64_t mcountAddr) = 0;

  virtual void prepare() {}
  virtual void beginBatch() {}
  // ftrace_make_call / ftrace_make_nop / ftrace_modify_call for one record. The core has already
  // checked that every site of the batch holds its old bytes.
  virtual PatchOutcome makeCall(const DynFtrace &rec, std::uint64_t addr) = 0;
  virtual PatchOutcome makeNop(const DynFtrace &rec, std::uint64_t oldAddr) = 0;
  virtual PatchOutcome modifyCall(const DynFtrace &rec, std::uint64_t oldAddr,
                                  std::uint64_t addr) = 0;
  // Completes the batch: after it returns, every CPU executes the new bytes.
  virtual void finishBatch() {}
  virtual void postProcess() {}

  // ftrace_update_ftrace_func(): retarget the call at ftrace_call (and ftrace_regs_call).
  virtual PatchOutcome updateFtraceFunc(const TraceFunction &function) = 0;
  // ftrace_modify_code() of one instruction outside the records, made live at once (the
  // ftrace_graph_call jump: ftrace_mod_jmp() with text_poke_bp() on x86). The core read `old`.
  virtual PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                                  const arch::Bytes &replacement) = 0;
};

using arch::modifyCodeDirect;

// The plain-store protocol: every modification is one read-verify-write through the port, and a
// batch ends with one syncCores(). Correct at boot and whenever no other CPU executes the text
// (stop_machine); under concurrent execution it is the torn-write hazard of Rostedt's "Ftrace
// Kernel Hooks" slides, which is exactly what the simulator's `direct` protocol variant shows.
class PlainStorePatcher : public ArchPatcher {
public:
  // `functionAddress` maps a TraceFunction to the guest address ftrace_call must call;
  // `ftraceCallSites` are the `call` instructions inside ftrace_caller / ftrace_regs_caller. Both
  // may be empty when the host dispatches the trace function itself.
  PlainStorePatcher(const arch::Arch &isa, arch::MachinePort &port,
                    std::function<std::uint64_t(const TraceFunction &)> functionAddress = {},
                    std::vector<std::uint64_t> ftraceCallSites = {});

  const arch::Arch &arch() const override { return arch_; }
  PatchOutcome initNop(DynFtrace &rec, std::uint64_t mcountAddr) override;
  PatchOutcome makeCall(const DynFtrace &rec, std::uint64_t addr) override;
  PatchOutcome makeNop(const DynFtrace &rec, std::uint64_t oldAddr) override;
  PatchOutcome modifyCall(const DynFtrace &rec, std::uint64_t oldAddr, std::uint64_t addr) override;
  void finishBatch() override;
  PatchOutcome updateFtraceFunc(const TraceFunction &function) override;
  PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                          const arch::Bytes &replacement) override {
    const PatchOutcome outcome = modifyCodeDirect(port_, ip, old, replacement);
    if (outcome.ok()) {
      ++writes_;
      port_.syncCores();
    }
    return outcome;
  }

  const TraceFunction &currentFunction() const { return current_; }
  std::size_t writes() const { return writes_; }

private:
  PatchOutcome write(std::uint64_t ip, const arch::Bytes &old, const arch::Bytes &replacement);

  const arch::Arch &arch_;
  arch::MachinePort &port_;
  std::function<std::uint64_t(const TraceFunction &)> functionAddress_;
  std::vector<std::uint64_t> ftraceCallSites_;
  TraceFunction current_;
  std::size_t writes_ = 0;
  bool dirty_ = false;
};

} // namespace ftsim::model
