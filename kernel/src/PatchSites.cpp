// What a verifier watches: every patch site with the states it may legally hold (records: their
// exact legal states, SiteTargets.h; the ftrace_call sites: any trace function stub;
// ftrace_graph_call), and every execution of a record's site from the event log.

#include "ftsim/kernel/Kernel.h"

#include <algorithm>
#include <unordered_set>

namespace ftsim::kernel {

std::vector<PatchSite> Kernel::patchSites() const { return collectSites(true); }

std::vector<PatchSite> Kernel::collectSites(bool named) const {
  const arch::Arch &isa = *image_.arch;
  const arch::TrampolineCode &code = trampolines_->code();
  std::vector<PatchSite> sites;
  core_->records().forEach([&](const model::DynFtrace &rec) {
    // Exactly what the records and the engine's pending updates allow (SiteTargets.h); before
    // the first update, what the record says the site holds.
    const std::string name = named ? core_->recordName(rec) : std::string();
    PatchSite site{rec.ip, isa.siteSize(), siteTargets_->legal(rec.ip), name};
    if (site.states.empty())
      site.states.push_back(rec.has(model::RecordFlag::Enabled)
                                ? patcher_->callBytes(rec, core_->addrCurr(rec))
                                : patcher_->nopBytes(rec));
    std::erase_if(site.states, [](const arch::Bytes &b) { return b.empty(); });
    sites.push_back(std::move(site));
    // Sites the protocol writes next to the record's (the `mflr r0` slot of the two-instruction
    // protocols).
    for (arch::ExtraSite &extra : siteHooks_->extraSites(rec.ip))
      sites.push_back(
          {extra.addr, extra.size, std::move(extra.states), named ? name + extra.suffix : ""});
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
  if (graph.site)
    sites.push_back({graph.site,
                     code.siteSize,
                     {graph.off, isa.jump(graph.site, graph.caller).bytes},
                     "ftrace_graph_call"});
  return sites;
}

void Kernel::watchPatchSites() {
  watching_ = true;
  for (PatchSite &site : collectSites(false))
    machine_->watchSite(site.addr, site.size, std::move(site.states));
}

std::vector<SiteExecution> Kernel::siteExecutions() const {
  // Hashed: looked up at every step of the log.
  std::unordered_set<std::uint64_t> ips;
  core_->records().forEach([&](const model::DynFtrace &rec) { ips.insert(rec.ip); });
  std::vector<SiteExecution> out;
  for (const sim::EventRecord &e : machine_->events())
    if (e.kind == sim::EventKind::Step && ips.count(e.pc))
      out.push_back({e.index, e.cpu, e.task, e.pc});
  return out;
}

} // namespace ftsim::kernel
