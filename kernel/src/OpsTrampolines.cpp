// Per-ops trampolines (arch_ftrace_update_trampoline, f3bea491): allocated and written through
// the machine port like any other text the patcher writes, and the callback each one reaches.

#include "ftsim/kernel/Kernel.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::kernel {
namespace {

// arch_ftrace_update_trampoline() as the core sees it: the Kernel allocates and writes the code.
class KernelOpsTrampolines final : public model::OpsTrampolineArch {
public:
  explicit KernelOpsTrampolines(std::function<void(model::FtraceOps &)> update)
      : update_(std::move(update)) {}
  void updateTrampoline(model::FtraceOps &ops) override { update_(ops); }

private:
  std::function<void(model::FtraceOps &)> update_;
};

} // namespace

void Kernel::enableOpsTrampolines(model::FtraceConfig &ftrace) {
  if (!trampolines_->hasOpsTrampolines())
    fatal("{}: no per-ops ftrace trampolines on {}", image_.name, image_.arch->name());
  opsTrampolineArch_ = std::make_unique<KernelOpsTrampolines>(
      [this](model::FtraceOps &ops) { updateOpsTrampoline(ops); });
  ftrace.trampolines = opsTrampolineArch_.get();
}

// arch_ftrace_update_trampoline() (arch/x86/kernel/ftrace.c): the first registration allocates
// and fills the trampoline (create_trampoline, module_alloc: never read by anyone before the
// sites are patched to call it, so it is written directly); a later one would retarget its call to
// ftrace_ops_get_func(ops), which here is the stub bound to the ops itself and so never changes.
void Kernel::updateOpsTrampoline(model::FtraceOps &ops) {
  if (ops.trampoline)
    return;
  const bool saveRegs = ops.has(model::OpsFlag::SaveRegs);
  const std::uint64_t size = trampolines_->opsTrampolineSize(saveRegs);
  const std::uint64_t addr = machine_->allocText(size, 0);
  if (!addr)
    return; // create_trampoline() failed: the ops keeps using the shared trampolines
  const arch::OpsTrampolineCode code = trampolines_->makeOpsTrampoline(addr, saveRegs);
  machine_->pokeText(addr, code.bytes);
  for (std::uint64_t load : code.opLoads)
    machine_->watchSharedRead(load); // as in ftrace_caller (Kernel::mapTrampolines)
  machine_->setHypercall(code.callbackStub, [this, &ops, addr](arch::GuestContext &cpu) {
    opsTrampolineCallback(cpu, ops, addr);
  });
  ops.trampoline = addr;
  ops.trampolineSize = size;
  ops.flags |= model::OpsFlag::AllocTramp;
  opsTrampolines_.push_back({addr, size, code.callSite, code.callbackStub, &ops, saveRegs});
  // A site may now legally call the new trampoline: watched sites learn the new state before the
  // patcher can write it.
  if (watching_)
    watchPatchSites();
}

// The trampoline's ftrace_call: ftrace_ops_get_func(ops) with the ops bound in the trampoline —
// ops->func, or ftrace_ops_assist_func for an ops that needs recursion or RCU protection.
void Kernel::opsTrampolineCallback(arch::GuestContext &cpu, model::FtraceOps &ops,
                                   std::uint64_t trampoline) {
  const arch::CallbackArgs args = trampolines_->argsOf(cpu);
  std::unique_ptr<arch::GuestContext> regs;
  if (args.fullRegs)
    regs = trampolines_->ptRegs(cpu, args.regs);
  const bool assist = ops.has(model::OpsFlag::Recursion) || ops.has(model::OpsFlag::Rcu);
  const model::TraceFunction function{
      assist ? model::TraceFunction::Kind::AssistFunc : model::TraceFunction::Kind::OpsFunc, &ops};
  recordCallback({now(), cpu.cpu(), cpu.task(), args.ip, args.parentIp, args.fullRegs,
                  function.describe(), trampoline});
  model::CallSite site{
      args.ip, args.parentIp, regs.get(), {cpu.cpu(), cpu.task(), contextLevel(cpu)}};
  current_ = &cpu;
  currentRegs_ = args.regs;
  if (assist)
    core_->assistFunc(ops, site);
  else if (ops.func)
    ops.func(site.ip, site.parentIp, ops, site.regs);
  current_ = nullptr;
}

std::uint64_t Kernel::siteTarget(std::uint64_t ip) {
  arch::Bytes bytes(image_.arch->siteSize());
  if (!machine_->readText(ip, bytes))
    return 0;
  const std::optional<std::uint64_t> target = image_.arch->callTarget(ip, bytes);
  if (!target)
    return 0;
  for (const OpsTrampoline &t : opsTrampolines_)
    if (*target == t.addr)
      return t.addr;
  return 0;
}

} // namespace ftsim::kernel
