// What a verifier watches: every patch site with the states it may legally hold (records, the
// ftrace_call sites, ftrace_graph_call), and every execution of a record's site from the event log.

#include "ftsim/kernel/Kernel.h"

#include <algorithm>
#include <set>

namespace ftsim::kernel {

std::vector<PatchSite> Kernel::patchSites() const {
  const arch::Arch &isa = *image_.arch;
  const arch::TrampolineCode &code = trampolines_->code();
  std::vector<PatchSite> sites;
  core_->records().forEach([&](const model::DynFtrace &rec) {
    PatchSite site{rec.ip, isa.siteSize(), {isa.nop()}, core_->recordName(rec)};
    for (std::uint64_t target : {code.ftraceCaller, code.ftraceRegsCaller})
      site.states.push_back(isa.call(rec.ip, target).bytes);
    for (const OpsTrampoline &t : opsTrampolines_)
      site.states.push_back(isa.call(rec.ip, t.addr).bytes);
    // A module site may call ftrace_caller through the module's long-branch stubs
    // (ftrace_call_replace for rec->arch.mod); the patcher knows them.
    for (std::uint64_t target : {code.ftraceCaller, code.ftraceRegsCaller}) {
      arch::Bytes viaStub = patcher_->callBytes(rec, target);
      if (!viaStub.empty() &&
          std::find(site.states.begin(), site.states.end(), viaStub) == site.states.end())
        site.states.push_back(std::move(viaStub));
    }
    std::erase_if(site.states, [](const arch::Bytes &b) { return b.empty(); });
    sites.push_back(std::move(site));
    // Sites the protocol writes next to the record's (the `mflr r0` slot of the two-instruction
    // protocols).
    for (arch::ExtraSite &extra : siteHooks_->extraSites(rec.ip))
      sites.push_back(
          {extra.addr, extra.size, std::move(extra.states), core_->recordName(rec) + extra.suffix});
  });
  std::vector<std::uint64_t> targets = {code.ftraceStub, code.listFuncStub};
  targets.insert(targets.end(), code.callbackStubs.begin(), code.callbackStubs.end());
  for (auto [addr, name] : {std::pair{code.ftraceCall, "ftrace_call"},
                            std::pair{code.ftraceRegsCall, "ftrace_regs_call"}}) {
    PatchSite site{addr, code.siteSize, {}, name};
    for (std::uint64_t target : targets)
      site.states.push_back(isa.call(addr, target).bytes);
    sites.push_back(std::move(site));
  }
  const model::GraphCallSite &graph = core_->config().graphCall;
  sites.push_back({graph.site,
                   code.siteSize,
                   {graph.off, isa.jump(graph.site, graph.caller).bytes},
                   "ftrace_graph_call"});
  return sites;
}

void Kernel::watchPatchSites() {
  watching_ = true;
  for (PatchSite &site : patchSites())
    machine_->watchSite(site.addr, site.size, std::move(site.states));
}

std::vector<SiteExecution> Kernel::siteExecutions() const {
  std::set<std::uint64_t> ips;
  core_->records().forEach([&](const model::DynFtrace &rec) { ips.insert(rec.ip); });
  std::vector<SiteExecution> out;
  for (const sim::EventRecord &e : machine_->events())
    if (e.kind == sim::EventKind::Step && ips.count(e.pc))
      out.push_back({e.index, e.cpu, e.task, e.pc});
  return out;
}

} // namespace ftsim::kernel
