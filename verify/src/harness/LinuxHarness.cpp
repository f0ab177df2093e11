// The harness of kind "linux" (LinuxHarness.h): Linux's own text_poke_queue/text_poke_finish
// and poke_int3_handler, from a tree, on the machine.

#include "ftsim/verify/harness/LinuxHarness.h"

#include "ftsim/arch/Error.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/harness/SiteHarness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ftsim::verify {
namespace {

constexpr std::uint64_t kPatcherStack = 0xffffc90000000000ull; // the patcher's own stack
constexpr std::uint64_t kPatcherStackSize = 64 * 1024;
constexpr std::uint64_t kExceptionStacks = 0xffffc90000100000ull; // one per CPU
constexpr std::uint64_t kExceptionStackSize = 16 * 1024;

linuxk::LinuxGuest buildGuest(const Scenario &s) {
  return linuxk::buildLinuxGuest({s.kernel, s.kernelTree, "", s.mutant});
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

// The "linux" oracle: what the harness saw (the batch stopped, an unhandled int3, a call into a
// generated stub), and the batch finishing with every site in its new state.
class LinuxOracle final : public Oracle {
public:
  explicit LinuxOracle(const LinuxHarness &h) : h_(h) {}
  std::string_view name() const override { return "linux"; }
  void check(const ExecutionView &x, std::vector<Violation> &out) const override {
    for (const LinuxFinding &f : h_.findings()) {
      Violation v = violationAt("linux", f.event, f.message);
      v.cpus = {f.cpu};
      v.task = f.task;
      v.pc = f.pc;
      v.site = h_.siteOf(f.pc);
      out.push_back(std::move(v));
    }
    if (!h_.findings().empty() || x.run.status != sim::RunResult::Status::Completed)
      return;
    // Trace completeness: a site that calls a tracer before and after the batch (call-to-call)
    // is traced throughout, so every call of its function reaches one of the two tracers.
    const bool tracedThroughout =
        std::all_of(h_.sites().begin(), h_.sites().end(),
                    [](const LinuxSite &s) { return s.transition == Transition::CallToCall; });
    if (tracedThroughout) {
      std::uint64_t finished = 0;
      for (std::size_t t = 0; t < x.machine.taskCount(); ++t)
        finished += x.machine.task(static_cast<int>(t)).state == sim::TaskState::Exited;
      const std::uint64_t expected = finished * h_.scenario().calls * h_.sites().size();
      const std::uint64_t hits = h_.tracerHits();
      if (finished == x.machine.taskCount() && hits != expected) {
        Violation v = violationAt(
            "trace-completeness", x.machine.eventCount(),
            fmt::format("the traced calls reached the tracers {} times, not {}: a call at a site "
                        "traced throughout was lost",
                        hits, expected));
        // Where: the first int3 the handler resumed past without a call.
        if (const auto &skips = h_.resumedWithoutCall(); !skips.empty()) {
          v.pc = skips.front();
          v.site = h_.siteOf(v.pc);
          v.message += fmt::format("; poke_int3_handler() resumed the int3 at {} at the next "
                                   "instruction, with no call",
                                   h_.symbol(v.pc));
        }
        out.push_back(std::move(v));
      }
    }
    for (std::size_t i = 0; i < h_.sites().size(); ++i) {
      const LinuxSite &s = h_.sites()[i];
      // Batches back to back undo each other: an even number leaves the old instruction.
      const bool undone = h_.scenario().batches % 2 == 0;
      arch::Bytes now(s.newBytes.size());
      const_cast<sim::Machine &>(x.machine).readText(s.addr, now);
      if (now != (undone ? s.oldBytes : s.newBytes))
        out.push_back(
            violationAt("linux", x.machine.eventCount(),
                        fmt::format("site{} does not hold its {} instruction after the last "
                                    "text_poke_finish()",
                                    i, undone ? "old" : "new")));
    }
  }

private:
  const LinuxHarness &h_;
};

} // namespace

LinuxHarness::LinuxHarness(Scenario scenario)
    : scenario_(std::move(scenario)), arch_(arch::archByName(scenario_.arch)),
      guest_(buildGuest(scenario_)) {
  scenario_.validate(scenario_.name);
  machine_ = std::make_unique<sim::Machine>(arch_, machineConfigFor(scenario_));
  build();
}

LinuxHarness::~LinuxHarness() {
  if (machine_ && machine_->patcherActive())
    machine_->restore(initial_);
}

void LinuxHarness::build() {
  sim::Machine &m = *machine_;
  m.loadImage(guest_.image);
  m.mapData(kPatcherStack, kPatcherStackSize);
  m.mapData(kExceptionStacks, kExceptionStackSize * scenario_.cpus);
  handler_ = guest_.symbol("poke_int3_handler");
  iretStub_ = guest_.symbol("ftsim_linux_iret");
  frames_.assign(scenario_.cpus, {});
  trapAt_.assign(scenario_.cpus, 0);

  // The sites: the traced workload's __mcount_loc entries, in address order.
  std::vector<std::uint64_t> locs = guest_.image.mcountLocs;
  std::sort(locs.begin(), locs.end());
  if (locs.size() < scenario_.sites.size())
    fatal("kernel tree '{}': the guest has {} traced sites, the scenario patches {}",
          guest_.treeLabel, locs.size(), scenario_.sites.size());
  const std::uint64_t tracerA = guest_.symbol("ftsim_tracer");
  const std::uint64_t tracerB = guest_.symbol("ftsim_tracer_b");
  for (std::size_t i = 0; i < scenario_.sites.size(); ++i) {
    LinuxSite s;
    s.addr = locs[i];
    s.transition = scenario_.sites[i];
    auto [before, after] =
        transitionBytes(s.transition, arch_.nop(), arch_.call(s.addr, tracerA).bytes,
                        arch_.call(s.addr, tracerB).bytes);
    s.oldBytes = std::move(before), s.newBytes = std::move(after);
    m.pokeText(s.addr, s.oldBytes); // what ftrace_init and earlier updates left there
    m.watchSite(s.addr, static_cast<std::uint32_t>(s.oldBytes.size()), {s.oldBytes, s.newBytes});
    sites_.push_back(s);
  }
  for (const LinuxSite &s : sites_)
    requests_.push_back({s.addr, s.newBytes});
  for (const LinuxSite &s : sites_)
    undo_.push_back({s.addr, s.oldBytes});
  if (scenario_.foreignInt3) {
    // A kprobe armed on the next traced function's nop: its int3 is no site of the batch.
    kprobe_ = locs[sites_.size()];
    arch::Bytes armed = arch_.nop();
    armed[0] = 0xcc;
    m.pokeText(kprobe_, armed);
  }
  if (sites_.size() + (kprobe_ ? 1 : 0) > 2) {
    // The task calls traced_c as well (linux/guest/workload.c).
    const std::uint64_t three = 3;
    writeGuestWord(guest_.symbol("ftsim_workload_functions"), three);
  }
  if (scenario_.descending) {
    std::reverse(requests_.begin(), requests_.end());
    std::reverse(undo_.begin(), undo_.end());
  }

  // The tree's shared data: watched on every CPU; the patcher's accesses are events of their own.
  std::vector<linuxk::HostRegion> regions;
  linuxk::HostRegion stack;
  for (const sim::HostMemory &h : m.hostMemory()) {
    if (h.base == kPatcherStack)
      stack = {h.base, h.size, h.host, false};
    else
      regions.push_back({h.base, h.size, h.host, h.text});
  }
  poke_ = std::make_unique<linuxk::PokeCpu>(guest_, regions, stack);
  m.watchData(poke_->sharedStart(),
              static_cast<std::uint32_t>(poke_->sharedEnd() - poke_->sharedStart()));

  m.setTrapHandler([this](arch::GuestContext &ctx, std::uint64_t at) { return onTrap(ctx, at); });
  const std::uint64_t workload = guest_.symbol("ftsim_workload");
  for (unsigned cpu : scenario_.resolvedTaskCpus())
    m.addTask({fmt::format("workload{}", cpu), cpu, workload, scenario_.calls});
  initial_ = m.snapshot();
  runReference();
}

void LinuxHarness::runReference() {
  reference_ = runUntracedReference(*machine_, initial_, scenario_.name);
  findings_.clear();
}

arch::TrapVerdict LinuxHarness::onTrap(arch::GuestContext &ctx, std::uint64_t at) {
  sim::Machine &m = *machine_;
  const unsigned cpu = ctx.cpu();
  auto finding = [&](std::uint64_t pc, std::string message) {
    findings_.push_back({m.eventCount(), cpu, ctx.task(), pc, std::move(message)});
  };
  if (at == iretStub_) {
    linuxk::Int3Frame frame = frames_[cpu];
    if (!frame.regs) {
      finding(at, "exception return outside poke_int3_handler");
      return arch::TrapVerdict::NotMine;
    }
    frames_[cpu] = {};
    const std::uint64_t handled = linuxk::int3HandlerResult(ctx);
    linuxk::returnFromInt3(ctx, frame);
    const std::uint64_t trap = trapAt_[cpu];
    if (handled && ctx.pc() == trap + arch_.nop().size() && !siteOf(trap).empty())
      resumedWithoutCall_.push_back(trap);
    if (!handled && kprobe_ && ctx.pc() - 1 == kprobe_) {
      // do_int3(): poke_int3_handler() declined, kprobe_int3_handler() takes it and emulates the
      // probed instruction (a 5-byte nop).
      ctx.setPc(kprobe_ + arch_.nop().size());
      m.setInterruptsEnabled(cpu, true);
      return arch::TrapVerdict::Handled;
    }
    if (!handled) {
      const std::uint64_t site = ctx.pc() - 1;
      finding(site, fmt::format("unhandled int3 at {}: poke_int3_handler() returned 0 (Linux "
                                "goes on to die(\"int3\"))",
                                symbol(site)));
      ctx.setPc(site);
      return arch::TrapVerdict::Died;
    }
    m.setInterruptsEnabled(cpu, true); // iret restores IF
    return arch::TrapVerdict::Handled; // iret serialises
  }
  if (std::string stub = guest_.stubAt(at); !stub.empty()) {
    finding(at, fmt::format("unexpected call to {}", stub));
    return arch::TrapVerdict::NotMine;
  }
  if (frames_[cpu].regs) {
    finding(at, fmt::format("int3 at {} inside poke_int3_handler", symbol(at)));
    return arch::TrapVerdict::NotMine;
  }
  trapAt_[cpu] = at;
  const std::uint64_t top = kExceptionStacks + kExceptionStackSize * (cpu + 1);
  frames_[cpu] = linuxk::enterInt3Handler(ctx, at, top, handler_, iretStub_);
  m.setInterruptsEnabled(cpu, false);
  return arch::TrapVerdict::Entered;
}

sim::RunResult LinuxHarness::runExecution(sim::Scheduler &scheduler,
                                          const std::function<bool()> &stop) {
  sim::Machine &m = *machine_;
  m.restore(initial_);
  findings_.clear();
  frames_.assign(scenario_.cpus, {});
  trapAt_.assign(scenario_.cpus, 0);
  resumedWithoutCall_.clear();
  m.startPatcher([this, &m](arch::MachinePort &port) {
    linuxk::PokeHooks hooks;
    hooks.textWrite = [&port](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
      port.writeText(addr, bytes);
    };
    hooks.syncCores = [&port] { port.syncCores(); };
    hooks.sharedAccess = [this, &m](std::uint64_t addr, unsigned size, bool write) {
      m.publishAccess(fmt::format("{} {}", write ? "write" : "read", dataName(addr)), addr, size,
                      write);
    };
    hooks.spinOn = [&m](std::uint64_t addr, unsigned size) { m.spinUntilChanged(addr, size); };
    // Batch k + 1 undoes batch k, as a tracer switched on and off again does: the same tp_vec and
    // bp_desc serve each, so a handler still running from one batch meets the next.
    for (unsigned b = 0; b < scenario_.batches; ++b) {
      linuxk::PokeOutcome out = poke_->runBatch(b % 2 ? undo_ : requests_, hooks);
      if (!out.finished) {
        findings_.push_back(
            {m.eventCount(), m.config().patcherCpu, -1, out.pc,
             fmt::format("the patcher's text_poke_finish(){} stopped: {} at {}",
                         scenario_.batches > 1 ? fmt::format(" of batch {}", b + 1) : "",
                         out.finding, symbol(out.pc))});
        break;
      }
    }
  });
  sim::RunResult total;
  const std::uint64_t limit = scenario_.bounds.maxEvents;
  if (!stop)
    return m.run(scheduler, limit);
  while (total.events < limit) {
    sim::RunResult r = m.run(scheduler, 1);
    total.events += r.events;
    total.status = r.status;
    if (r.status != sim::RunResult::Status::EventLimit || stop())
      return total;
  }
  total.status = sim::RunResult::Status::EventLimit;
  return total;
}

std::string LinuxHarness::siteOf(std::uint64_t addr) const {
  if (kprobe_ && addr >= kprobe_ && addr < kprobe_ + arch_.nop().size())
    return addr == kprobe_ ? "kprobe" : fmt::format("kprobe+{}", addr - kprobe_);
  for (std::size_t i = 0; i < sites_.size(); ++i)
    if (addr >= sites_[i].addr && addr < sites_[i].addr + sites_[i].oldBytes.size())
      return addr == sites_[i].addr ? fmt::format("site{}", i)
                                    : fmt::format("site{}+{}", i, addr - sites_[i].addr);
  return {};
}

std::string LinuxHarness::symbol(std::uint64_t addr) const {
  const arch::ImageSymbol *s = guest_.image.symbolAt(addr);
  if (std::string site = siteOf(addr); !site.empty()) {
    // A site's first byte: the guest instruction, by function and source line.
    if (s && site.find('+') == std::string::npos) {
      site += fmt::format(" ({}+{:#x}", s->name, addr - s->addr);
      if (std::string line = linuxk::sourceLine(guest_, addr); !line.empty())
        site += ", " + line;
      site += ")";
    }
    return site;
  }
  if (!s || addr < guest_.image.textStart() || addr >= guest_.image.textEnd())
    return fmt::format("{:#x}", addr);
  std::string name = addr == s->addr ? s->name : fmt::format("{}+{:#x}", s->name, addr - s->addr);
  if (std::string line = linuxk::sourceLine(guest_, addr); !line.empty())
    name += " (" + line + ")";
  return name;
}

std::string LinuxHarness::dataName(std::uint64_t addr) const {
  const arch::ImageSymbol *best = nullptr;
  for (const arch::ImageSymbol &s : guest_.image.symbols)
    if (!s.function && s.addr <= addr && addr < s.addr + std::max<std::uint64_t>(s.size, 1))
      best = &s;
  if (!best)
    return fmt::format("{:#x}", addr);
  return addr == best->addr ? best->name : fmt::format("{}+{:#x}", best->name, addr - best->addr);
}

std::string LinuxHarness::annotate(const sim::EventRecord &e) const {
  if (e.kind == sim::EventKind::Step || e.kind == sim::EventKind::Run) {
    if (e.pc == handler_)
      return "poke_int3_handler()";
    if (e.dataSize)
      return fmt::format("{} {}", e.dataWrite ? "writes" : "reads", dataName(e.dataAddr));
  }
  return {};
}

std::uint64_t LinuxHarness::finalStateHash() const {
  const sim::Machine &m = *machine_;
  std::uint64_t h = 0;
  for (const LinuxSite &s : sites_) {
    arch::Bytes now(s.oldBytes.size());
    machine_->readText(s.addr, now);
    for (std::uint8_t b : now)
      h = mix(h, b);
  }
  for (std::size_t t = 0; t < m.taskCount(); ++t) {
    const sim::TaskInfo info = m.task(static_cast<int>(t));
    h = mix(mix(h, static_cast<std::uint64_t>(info.state)), info.result);
  }
  for (const sim::Finding &f : m.findings())
    h = mix(mix(mix(h, static_cast<std::uint64_t>(f.kind)), f.cpu), f.pc);
  for (const LinuxFinding &f : findings_)
    h = mix(h, f.pc);
  return h;
}

std::uint8_t *LinuxHarness::guestWord(std::uint64_t addr) const {
  for (const sim::HostMemory &h : machine_->hostMemory())
    if (!h.text && addr >= h.base && addr - h.base + 8 <= h.size)
      return h.host + (addr - h.base);
  fatal("kernel tree '{}': no guest data at {:#x}", guest_.treeLabel, addr);
}

void LinuxHarness::writeGuestWord(std::uint64_t addr, std::uint64_t value) {
  std::memcpy(guestWord(addr), &value, 8);
}

std::uint64_t LinuxHarness::tracerHits() const {
  std::uint64_t total = 0;
  for (const char *name : {"ftsim_tracer_hits", "ftsim_tracer_b_hits"}) {
    std::uint64_t v = 0;
    std::memcpy(&v, guestWord(guest_.symbol(name)), 8);
    total += v;
  }
  return total;
}

OracleList LinuxHarness::kindOracles() const { return {std::make_shared<LinuxOracle>(*this)}; }

std::string LinuxHarness::describeSetup() const {
  return fmt::format(
      "{}; {} CPU{} (the tree's text_poke_finish on cpu0), {} task{} x {} call{} "
      "of {} traced function{}{}{}",
      guest_.describe(), scenario_.cpus, scenario_.cpus == 1 ? "" : "s", machine_->taskCount(),
      machine_->taskCount() == 1 ? "" : "s", scenario_.calls, scenario_.calls == 1 ? "" : "s",
      sites_.size(), sites_.size() == 1 ? "" : "s",
      kprobe_ ? " and a kprobe-like int3 on another" : "",
      scenario_.batches > 1 ? fmt::format("; {} batches back to back", scenario_.batches) : "");
}

} // namespace ftsim::verify
