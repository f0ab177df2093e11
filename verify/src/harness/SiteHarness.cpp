// Guest code for site-level scenarios: one layout for every executable ISA, encoded by the
// target's SnippetEmitter.

#include "ftsim/verify/harness/SiteHarness.h"

#include "ftsim/arch/LivePatchingRule.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/GuestAbi.h"
#include "ftsim/arch/SnippetEmitter.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <algorithm>

namespace ftsim::verify {
namespace {

constexpr std::uint64_t kTextSize = 0x4000;
// The slide's call `e8 37 2e 00 00`: trampoline A sits 0x2e37 bytes past the first site's end
// (rounded down to an instruction boundary where instructions are aligned).
constexpr std::uint64_t kSlideDisplacement = 0x2e37;

struct Layout {
  std::uint64_t text = 0;
  std::uint64_t hcSchedule = 0, hcIdle = 0, hcUser = 0, hcExit = 0, hcUserEnter = 0,
                hcKernelEntry = 0;
  std::uint64_t worker = 0;
  unsigned prologue = 0; // bytes from function entry to the site
};

class CodeBuffer {
public:
  CodeBuffer(std::uint64_t base, std::size_t size, std::uint8_t fill)
      : base_(base), bytes_(size, fill) {}
  void put(std::uint64_t at, std::span<const std::uint8_t> bytes) {
    if (at < base_ || at + bytes.size() > base_ + bytes_.size())
      FTSIM_PANIC("scenario code at {:#x} outside its text", at);
    std::copy(bytes.begin(), bytes.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(at - base_));
  }
  const std::vector<std::uint8_t> &bytes() const { return bytes_; }

private:
  std::uint64_t base_;
  std::vector<std::uint8_t> bytes_;
};

arch::Bytes encodeCall(const arch::Arch &arch, std::uint64_t site, std::uint64_t target) {
  arch::EncodeResult r = arch.call(site, target);
  if (!r.ok)
    FTSIM_PANIC("scenario call {:#x} -> {:#x}: {}", site, target, r.error);
  return r.bytes;
}

arch::Bytes encodeJump(const arch::Arch &arch, std::uint64_t site, std::uint64_t target) {
  arch::EncodeResult r = arch.jump(site, target);
  if (!r.ok)
    FTSIM_PANIC("scenario jump {:#x} -> {:#x}: {}", site, target, r.error);
  return r.bytes;
}

const arch::SnippetEmitter &emitterOf(const arch::Arch &arch) {
  if (!arch.snippetEmitter())
    fatal("site scenarios need an executable architecture; {} is not one", arch.name());
  return *arch.snippetEmitter();
}

} // namespace

sim::MachineConfig machineConfigFor(const Scenario &scenario) {
  sim::MachineConfig c;
  c.cpus = scenario.cpus;
  c.storeModel = scenario.store;
  c.fetchModel = scenario.fetch;
  c.preemption = scenario.preemption;
  c.deferSyncInUser = scenario.nohzFull;
  // Fast mode: instructions outside watched text commute with every store and publication, so
  // running them as one event loses no behaviour and removes most decisions.
  c.quantum = 4096;
  c.traceFlagSteps = true; // each step follows a rewrite of the site's bytes (MachineConfig.h)
  // A 64 KiB trampoline area: a site scenario's trampolines are hypercall addresses in its own
  // text, and the Linux harness (which shares this configuration) runs the tree's text_poke code,
  // so neither allocates trampoline memory; the default megabyte cost every harness about 10 MiB
  // of copies and fresh pages when built (the area's canonical bytes, flags and per-CPU views, then
  // the snapshot's copies of them).
  c.moduleSize = 64 << 10;
  return c;
}

SiteHarness::SiteHarness(Scenario scenario)
    : scenario_(std::move(scenario)), arch_(arch::archByName(scenario_.arch)) {
  scenario_.validate(scenario_.name);
  machine_ = std::make_unique<sim::Machine>(arch_, machineConfigFor(scenario_));
  build();
}

SiteHarness::~SiteHarness() {
  // Abort a patcher still parked in the machine before the protocol it references goes away.
  if (machine_ && machine_->patcherActive())
    machine_->restore(initial_);
}

std::size_t SiteHarness::siteIndex(std::uint64_t addr) const {
  for (std::size_t i = 0; i < sites_.size(); ++i)
    if (sites_[i].addr == addr)
      return i;
  return sites_.size();
}

std::string SiteHarness::siteOf(std::uint64_t addr) const {
  for (std::size_t i = 0; i < sites_.size(); ++i)
    if (addr >= sites_[i].addr && addr < sites_[i].addr + sites_[i].oldBytes.size())
      return addr == sites_[i].addr ? fmt::format("site{}", i)
                                    : fmt::format("site{}+{}", i, addr - sites_[i].addr);
  return {};
}

std::string SiteHarness::symbol(std::uint64_t addr) const {
  if (std::string site = siteOf(addr); !site.empty())
    return site;
  if (addr == trampA_ || addr == trampB_)
    return addr == trampA_ ? "trampoline A" : "trampoline B";
  return fmt::format("{:#x}", addr);
}

std::string SiteHarness::describeSetup() const {
  return fmt::format("{} CPU{} (patcher on cpu0), {} task{} x {} call{} of {} traced function{}",
                     scenario_.cpus, scenario_.cpus == 1 ? "" : "s", machine_->taskCount(),
                     machine_->taskCount() == 1 ? "" : "s", scenario_.calls,
                     scenario_.calls == 1 ? "" : "s", sites_.size(), sites_.size() == 1 ? "" : "s");
}

namespace {
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}
} // namespace

arch::Bytes SiteHarness::siteBytes(std::size_t site) const {
  const PatchSiteInfo &s = sites_.at(site);
  arch::Bytes now(s.oldBytes.size());
  machine_->readText(s.addr, now);
  return now;
}

std::uint64_t SiteHarness::finalStateHash() const {
  const sim::Machine &m = *machine_;
  std::uint64_t h = 0;
  for (std::size_t s = 0; s < sites_.size(); ++s)
    for (std::uint8_t b : siteBytes(s))
      h = mix(h, b);
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    h = mix(mix(h, static_cast<std::uint64_t>(info.state)), info.result);
  }
  std::vector<std::uint64_t> hits;
  for (const TraceHit &hit : trace_)
    hits.push_back(static_cast<std::uint64_t>(hit.task) << 32 | hit.site << 8 | hit.trampoline);
  std::sort(hits.begin(), hits.end());
  for (std::uint64_t v : hits)
    h = mix(h, v);
  for (const sim::Finding &f : m.findings()) {
    h = mix(mix(mix(h, static_cast<std::uint64_t>(f.kind)), f.cpu), f.pc);
    for (std::uint8_t b : f.bytes)
      h = mix(h, b);
  }
  return h;
}

void SiteHarness::recordHit(arch::GuestContext &ctx, unsigned which) {
  const arch::GuestAbi &abi = *arch_.guestAbi();
  const std::uint64_t ret = abi.returnAddress(abi, ctx);
  TraceHit hit;
  hit.event = machine_->eventCount();
  hit.cpu = ctx.cpu();
  hit.task = ctx.task();
  hit.site = siteIndex(ret - arch_.siteSize());
  hit.trampoline = which;
  trace_.push_back(hit);
}

// The module stub's TOC handling (ppc64 ELFv1's `std r2,40(r1)`, then the kernel's TOC in r2):
// the caller's TOC register is saved in its frame's slot, in the ISA's byte order.
void SiteHarness::moduleStub(arch::GuestContext &ctx, const arch::ModuleTocSite &toc) {
  const std::uint64_t value = ctx.reg(toc.tocReg);
  const unsigned word = arch_.wordSize();
  arch::Bytes bytes(word);
  for (unsigned i = 0; i < word; ++i)
    bytes[arch_.endian() == arch::Endian::Big ? word - 1 - i : i] =
        static_cast<std::uint8_t>(value >> (8 * i));
  if (!ctx.writeMemory(ctx.sp() + toc.slot, bytes))
    FTSIM_PANIC("module stub: the TOC slot at {:#x} is not mapped", ctx.sp() + toc.slot);
  ctx.setReg(toc.tocReg, toc.kernelToc);
}

void SiteHarness::build() {
  const arch::SnippetEmitter &emit = emitterOf(arch_);
  Layout l;
  l.text = emit.textBase();
  l.hcSchedule = l.text + 0x00;
  l.hcIdle = l.text + 0x08;
  l.hcUser = l.text + 0x10;
  l.hcExit = l.text + 0x18;
  l.hcUserEnter = l.text + 0x20;
  l.hcKernelEntry = l.text + 0x28;
  l.worker = l.text + 0x40;
  l.prologue = emit.prologueSize();
  CodeBuffer code(l.text, kTextSize, emit.fill());
  const arch::Bytes stub = emit.hypercallStub();
  for (std::uint64_t s :
       {l.hcSchedule, l.hcIdle, l.hcUser, l.hcExit, l.hcUserEnter, l.hcKernelEntry})
    code.put(s, stub);

  // Traced functions: f_j in block j+1, its site at = site_offset (mod 64).
  const unsigned k = scenario_.siteOffset;
  std::vector<std::uint64_t> functions;
  for (std::size_t j = 0; j < scenario_.sites.size(); ++j) {
    const std::uint64_t block = l.text + 0x100 * (j + 1);
    const std::uint64_t f = block + ((k + 64 - l.prologue) % 64);
    functions.push_back(f);
    PatchSiteInfo site;
    site.addr = f + l.prologue;
    site.function = f;
    site.transition = scenario_.sites[j];
    sites_.push_back(site);
  }
  const std::uint64_t slide = sites_[0].addr + arch_.siteSize() + kSlideDisplacement;
  trampA_ = slide - slide % arch_.insnAlignment();
  // B differs from A in two displacement bytes, so a call->call rewrite is not a single-byte
  // store (the real ftrace_call moves between ftrace_stub and a tracer, far apart).
  trampB_ = trampA_ + 0x1040;
  code.put(trampA_, stub);
  code.put(trampB_, stub);
  // Module TOC sites: the site, then the TOC reload; disabled as a nop or as a branch over it.
  const arch::ModuleTocSite *toc =
      scenario_.moduleToc == Scenario::ModuleToc::None ? nullptr : emit.moduleTocSite();
  for (PatchSiteInfo &site : sites_) {
    const arch::Bytes nop =
        scenario_.moduleToc == Scenario::ModuleToc::Skip
            ? encodeJump(arch_, site.addr, site.addr + arch_.siteSize() + toc->restore.size())
            : arch_.nop();
    auto [before, after] =
        transitionBytes(site.transition, nop, encodeCall(arch_, site.addr, trampA_),
                        encodeCall(arch_, site.addr, trampB_));
    site.oldBytes = std::move(before), site.newBytes = std::move(after);
    arch::Bytes body = site.oldBytes;
    if (toc)
      body.insert(body.end(), toc->restore.begin(), toc->restore.end());
    code.put(site.function, emit.tracedFunction(site.function, body));
  }
  // worker(seed): acc = seed; `calls` times { for each f_j: acc += 3; f_j(); }; return acc (with
  // module TOC sites, acc += r2 after every call too).
  // With a stay in user mode, each round starts with the user_enter stub and the kernel entry's
  // catch-up (the kernel_entry stub) comes before every traced function, or after the first.
  std::vector<std::uint64_t> round;
  if (scenario_.userEntry != Scenario::UserEntry::None)
    round.push_back(l.hcUserEnter);
  for (std::size_t j = 0; j < functions.size(); ++j) {
    if ((scenario_.userEntry == Scenario::UserEntry::SyncFirst && j == 0) ||
        (scenario_.userEntry == Scenario::UserEntry::SiteFirst && j == 1))
      round.push_back(l.hcKernelEntry);
    round.push_back(functions[j]);
  }
  if (scenario_.userEntry == Scenario::UserEntry::SiteFirst && functions.size() == 1)
    round.push_back(l.hcKernelEntry);
  code.put(l.worker,
           emit.worker(l.worker, scenario_.calls, round,
                       toc ? std::span(toc->foldIntoResult) : std::span<const std::uint8_t>{}));

  sim::Machine &m = *machine_;
  m.mapText(l.text, code.bytes());
  m.bindHypercall(sim::GuestHypercall::Schedule, l.hcSchedule);
  m.bindHypercall(sim::GuestHypercall::Idle, l.hcIdle);
  m.bindHypercall(sim::GuestHypercall::User, l.hcUser);
  m.bindHypercall(sim::GuestHypercall::Exit, l.hcExit);
  m.bindHypercall(sim::GuestHypercall::UserEnter, l.hcUserEnter);
  m.bindHypercall(sim::GuestHypercall::KernelEntry, l.hcKernelEntry);
  for (unsigned which : {0u, 1u})
    m.setHypercall(which ? trampB_ : trampA_, [this, which, toc](arch::GuestContext &ctx) {
      recordHit(ctx, which);
      if (toc)
        moduleStub(ctx, *toc);
    });
  for (const PatchSiteInfo &site : sites_)
    m.watchSite(site.addr, static_cast<std::uint32_t>(site.oldBytes.size()),
                {site.oldBytes, site.newBytes});
  std::uint64_t seed = 0;
  for (unsigned t = 0; t < scenario_.tasksPerCpu; ++t)
    for (unsigned cpu : scenario_.resolvedTaskCpus()) {
      m.addTask({fmt::format("worker{}", seed), cpu, l.worker, seed});
      ++seed;
    }
  initial_ = m.snapshot();
  runReference();
}

// The untraced reference run: round robin, no patcher. It is not part of any exploration, so the
// scenario's max_events does not bound it (an execution cut at max_events is reported as such).
void SiteHarness::runReference() {
  reference_ = runUntracedReference(*machine_, initial_, scenario_.name);
  trace_.clear();
}

void SiteHarness::begin() {
  machine_->restore(initial_);
  trace_.clear();
  protocol_ = arch::makeMutantProtocol(arch_, scenario_.protocol);
  std::vector<arch::PatchRequest> requests;
  for (const PatchSiteInfo &site : sites_)
    requests.push_back({site.addr, site.oldBytes, site.newBytes});
  if (scenario_.descending)
    std::reverse(requests.begin(), requests.end());
  arch::PatchProtocol *protocol = protocol_.get();
  rulePort_.reset();
  machine_->startPatcher([this, protocol, requests](arch::MachinePort &port) {
    // The ISA's live-patching rule watches every write the protocol makes.
    const arch::LivePatchingRule *rule = arch_.livePatchingRule();
    if (rule)
      rulePort_ = rule->watch(port);
    protocol->attach(rule ? *rulePort_ : port);
    for (const arch::PatchRequest &r : requests)
      protocol->queue(r);
    protocol->finish();
  });
}

std::vector<std::string> SiteHarness::livePatchingFindings() const {
  return rulePort_ ? rulePort_->findings() : std::vector<std::string>{};
}

sim::RunResult SiteHarness::runExecution(sim::Scheduler &scheduler,
                                         const std::function<bool()> &stop) {
  begin();
  sim::RunResult total;
  const std::uint64_t limit = scenario_.bounds.maxEvents;
  if (!stop) {
    total = machine_->run(scheduler, limit);
    return total;
  }
  while (total.events < limit) {
    sim::RunResult r = machine_->run(scheduler, 1);
    total.events += r.events;
    total.status = r.status;
    if (r.status != sim::RunResult::Status::EventLimit || stop())
      return total;
  }
  total.status = sim::RunResult::Status::EventLimit;
  return total;
}

} // namespace ftsim::verify
