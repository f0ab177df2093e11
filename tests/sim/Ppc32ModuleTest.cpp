// Modules far from the kernel on the machine: ppc-branch-range (a `bl` reaches only +-32 MiB, so a
// module needs a long-branch stub) and ppc-module-tramp-toc (the call site restores the TOC after
// the call, so nopping it under a task inside the call breaks that task). (1) The built guest
// module at 0xb0000000 boots with the kernel: its sites, which reach _mcount through the module's
// PLT stub, become nops; enabling one writes `bl <mod->arch.tramp>`, whose long-branch stub decodes
// to ftrace_caller, and the module still computes its untraced result while every call of the
// enabled function is traced once. A direct `bl` is refused. (2) The module call site `bl <tramp>;
// lwz r30,24(r1)` (ppc64's `ld r2,40(r1)` TOC restore, modelled with r30): disabling it with two
// nops breaks a task that is inside the call; `b +8` never does. Exhaustive over where the task is
// when the patcher writes.

#include "ftsim/arch/Image.h"
#include "ftsim/arch/Trampolines.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/model/ProtocolPatcher.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ppc32/Ppc32Cmodx.h"
#include "ppc32/Ppc32Code.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace ftsim::sim {
namespace {

namespace ppc = arch::ppc32;

arch::Image load(const std::string &rel) {
  const std::string path = std::string(FTSIM_GUEST_DIR) + "/" + rel;
  if (!std::filesystem::exists(path))
    ADD_FAILURE() << "guest image " << path << " is missing: build target ftsim-guests";
  return arch::loadImage(path);
}

struct Booted {
  arch::Image kernel = load("ppc32-mcount/kernel.elf");
  arch::Image module = load("ppc32-module/module.elf");
  const arch::Arch &isa = arch::archByName("ppc32");
  std::unique_ptr<Machine> m;
  std::unique_ptr<arch::FtraceTrampolines> tramps;
  std::unique_ptr<arch::PatchProtocol> protocol;
  std::unique_ptr<arch::SiteHooks> hooks;
  std::unique_ptr<model::ProtocolPatcher> patcher;
  std::unique_ptr<model::FtraceCore> core;
  model::BootReport report;
  std::vector<std::uint64_t> locs;
  std::uint64_t calls = 0;

  explicit Booted(bool ftrace) {
    MachineConfig c;
    c.cpus = 2;
    c.moduleBase = 0xb0100000; // the module image occupies 0xb0000000
    m = std::make_unique<Machine>(isa, c);
    m->loadImage(kernel);
    m->loadImage(module);
    tramps = arch::makeFtraceTrampolines(isa, {0xbfff0000, arch::SiteFlavour::Mcount, 1});
    const arch::TrampolineCode &code = tramps->code();
    m->mapText(code.base, code.bytes);
    m->setHypercall(code.callbackStubs[0], [this](arch::GuestContext &) { ++calls; });
    if (!ftrace)
      return;
    protocol = arch::makePatchProtocol(isa, "patch-instruction");
    hooks = isa.makeSiteHooks({&kernel, protocol.get(), code.ftraceCaller, code.ftraceRegsCaller});
    // The module loader: module_finalize_ftrace() builds mod->arch.tramp / tramp_regs.
    const arch::ModuleLoad load = hooks->loadModule(module);
    EXPECT_EQ(load.name, "ftsim_mod");
    for (const arch::TextWrite &write : load.writes)
      m->pokeText(write.addr, write.bytes);
    patcher = std::make_unique<model::ProtocolPatcher>(*m, *protocol, *hooks);
    model::FtraceConfig config;
    config.patcher = patcher.get();
    config.port = m.get();
    config.addresses = {kernel.mcountAddr, code.ftraceCaller, code.ftraceRegsCaller};
    const model::Symbolizer k = model::imageSymbolizer(kernel),
                            mod = model::imageSymbolizer(module);
    config.symbolizer = [k, mod](std::uint64_t a) -> std::optional<model::SymbolInfo> {
      if (auto s = mod(a)) {
        s->module = "ftsim_mod";
        return s;
      }
      return k(a);
    };
    core = std::make_unique<model::FtraceCore>(std::move(config));
    locs = kernel.mcountLocs;
    locs.insert(locs.end(), module.mcountLocs.begin(), module.mcountLocs.end());
    model::BootOptions options;
    options.mcountLocs = locs;
    report = core->boot(options);
  }

  std::uint64_t runModule(std::uint64_t seed) {
    const int t = m->addTask({"mod", 1, module.findSymbol("mod_compute")->addr, seed});
    RoundRobinScheduler rr;
    EXPECT_EQ(m->run(rr, 1'000'000).status, RunResult::Status::Completed);
    EXPECT_TRUE(m->findings().empty()) << m->logText().substr(0, 3000);
    EXPECT_EQ(m->task(t).state, TaskState::Exited);
    return m->task(t).result;
  }
};

TEST(Ppc32Module, SitesOutOfReachGoThroughTheModuleTrampoline) {
  Booted plain(false);
  const std::uint64_t untraced = plain.runModule(7); // through the module's PLT to _mcount

  Booted b(true);
  ASSERT_TRUE(b.report.bugs.empty());
  EXPECT_EQ(b.report.entries, b.locs.size());
  const std::uint64_t scaleSite = b.module.findSymbol("mod_scale")->addr + 8;
  model::DynFtrace *rec = b.core->lookupRecord(scaleSite);
  ASSERT_NE(rec, nullptr);
  EXPECT_NE(rec->arch, 0u); // rec->arch.mod
  EXPECT_EQ(rec->arch, b.hooks->recordDatum("ftsim_mod"));
  arch::Bytes site(4);
  ASSERT_TRUE(b.m->readText(scaleSite, site));
  EXPECT_EQ(ppc::wordOf(site), ppc::kNop);

  const arch::TrampolineCode &code = b.tramps->code();
  // A direct bl cannot reach: an error naming the range, never a truncated branch.
  const arch::EncodeResult direct = b.isa.call(scaleSite, code.ftraceCaller);
  EXPECT_FALSE(direct.ok);
  EXPECT_NE(direct.error.find("32 MiB"), std::string::npos);
  model::DynFtrace orphan{scaleSite, 0, 0}; // rec->arch.mod == NULL
  EXPECT_FALSE(b.patcher->encodeCall(orphan, code.ftraceCaller).ok);
  EXPECT_EQ(b.patcher->makeCall(orphan, code.ftraceCaller).status, model::PatchStatus::Mismatch);

  // ftrace_make_call() for mod_scale, then ftrace_call -> the counting callback.
  arch::CmodxCheckedPort cmodx(*b.m);
  b.protocol->attach(cmodx);
  ASSERT_TRUE(b.patcher->makeCall(*rec, code.ftraceCaller).ok());
  b.patcher->finishBatch();
  b.protocol->pokeNow({code.ftraceCall, b.isa.call(code.ftraceCall, code.ftraceStub).bytes,
                       b.isa.call(code.ftraceCall, code.callbackStubs[0]).bytes});
  EXPECT_TRUE(cmodx.violations().empty());
  ASSERT_TRUE(b.m->readText(scaleSite, site));
  const std::uint64_t tramp = b.module.findSymbol("ftsim_mod_ftrace_tramp")->addr;
  EXPECT_EQ(b.isa.callTarget(scaleSite, site), std::optional<std::uint64_t>(tramp));
  arch::Bytes stub(16);
  ASSERT_TRUE(b.m->readText(tramp, stub));
  EXPECT_EQ(ppc::longBranchTarget(stub), std::optional<std::uint64_t>(code.ftraceCaller));
  // the regs trampoline for a SAVE_REGS ops
  EXPECT_EQ(b.isa.callTarget(scaleSite, b.patcher->callBytes(*rec, code.ftraceRegsCaller)),
            std::optional<std::uint64_t>(b.module.findSymbol("ftsim_mod_ftrace_tramp_regs")->addr));

  EXPECT_EQ(b.runModule(7), untraced);
  EXPECT_EQ(b.calls, 6u); // mod_compute calls mod_scale six times
}

// --- ppc-module-tramp-toc ------------------------------------------------------------------------

constexpr std::uint64_t kKernel = 0xc0000000, kHcExit = kKernel, kMcount = kKernel + 0x40;
constexpr std::uint64_t kMod = 0xb0000000, kTramp = kMod, kFunc = kMod + 0x40, kT = kMod + 0x80;
constexpr std::uint64_t kSite = kFunc + 12, kModData = 0xb0010000;

struct TocScenario {
  const arch::Arch &isa = arch::archByName("ppc32");
  std::unique_ptr<Machine> m;
  Snapshot start;
  std::uint32_t blTramp = 0;

  TocScenario() {
    MachineConfig c;
    c.cpus = 2;
    c.moduleBase = 0xb0100000;
    m = std::make_unique<Machine>(isa, c);
    auto words = [](std::vector<std::uint32_t> ws) {
      arch::Bytes out;
      for (std::uint32_t w : ws) {
        const arch::Bytes b = ppc::wordBytes(w);
        out.insert(out.end(), b.begin(), b.end());
      }
      return out;
    };
    auto bl = [&](std::uint64_t at, std::uint64_t to) {
      return ppc::wordOf(isa.call(at, to).bytes);
    };
    // Kernel: the exit stub, and _mcount (mflr r12; mtctr r12; mtlr r0; bctr).
    arch::Bytes kernel(0x100, 0);
    auto put = [](arch::Bytes &text, std::uint64_t base, std::uint64_t at, const arch::Bytes &b) {
      std::copy(b.begin(), b.end(), text.begin() + (at - base));
    };
    put(kernel, kKernel, kHcExit, words({0x7fe00008, 0x4e800020}));
    put(kernel, kKernel, kMcount, words({0x7d8802a6, 0x7d8903a6, 0x7c0803a6, 0x4e800420}));
    m->mapText(kKernel, kernel);
    // Module: the stub saves the module's "TOC" (r30) at 24(r1), loads the kernel's, and branches
    // far; the function uses r30 after the restore; T calls it twice.
    arch::Bytes mod(0x100, 0);
    arch::Bytes far = ppc::longBranchStub(kMcount).bytes;
    arch::Bytes tramp = words({0x93c10018, 0x3fc01234}); // stw r30,24(r1); lis r30,0x1234
    tramp.insert(tramp.end(), far.begin(), far.end());
    put(mod, kMod, kTramp, tramp);
    blTramp = bl(kSite, kTramp);
    // func: mflr r0; stw r0,4(r1); stwu r1,-32(r1); bl tramp; lwz r30,24(r1); lwz r3,0(r30);
    //       addi r1,r1,32; lwz r0,4(r1); mtlr r0; blr
    put(mod, kMod, kFunc,
        words({0x7c0802a6, 0x90010004, 0x9421ffe0, blTramp, ppc::kRestoreR30, 0x807e0000,
               0x38210020, 0x80010004, 0x7c0803a6, 0x4e800020}));
    // T: stwu r1,-16(r1); mflr r0; stw r0,20(r1); lis r30,0xb001; bl func; mr r31,r3; bl func;
    //    add r3,r3,r31; lwz r0,20(r1); mtlr r0; addi r1,r1,16; blr
    put(mod, kMod, kT,
        words({0x9421fff0, 0x7c0802a6, 0x90010014, 0x3fc0b001, bl(kT + 16, kFunc), 0x7c7f1b78,
               bl(kT + 24, kFunc), 0x7c63fa14, 0x80010014, 0x7c0803a6, 0x38210010, 0x4e800020}));
    m->mapText(kMod, mod);
    m->mapData(kModData, 4096, std::vector<std::uint8_t>{0, 0, 0, 77});
    m->bindHypercall(GuestHypercall::Exit, kHcExit);
    m->addTask({"T", 1, kT, 0});
    start = m->snapshot();
  }

  // T runs `steps` instructions, then the patcher disables the site (IPIs taken at once).
  bool runIsGood(ppc::TocSiteDisable variant, unsigned steps, std::string *what) {
    m->restore(start);
    m->startPatcher([&](arch::MachinePort &port) {
      arch::CmodxCheckedPort cmodx(port);
      auto protocol = arch::makePatchProtocol(isa, "patch-instruction");
      protocol->attach(cmodx);
      for (const arch::PatchRequest &r : ppc::tocSiteDisable(kSite, blTramp, variant))
        protocol->queue(r);
      protocol->finish();
      // Nopping the restore overwrites a non-patch-class word (lwz): CMODX flags it too.
      EXPECT_EQ(cmodx.violations().empty(), variant == ppc::TocSiteDisable::BranchOver);
    });
    unsigned left = steps;
    FunctionScheduler sched([&](const Machine &, const DecisionPoint &p) -> std::uint32_t {
      std::int64_t store = -1, step = -1;
      for (std::uint32_t i = 0; i < p.events.size(); ++i) {
        if (p.events[i].kind == EventKind::Ipi)
          return i;
        if (p.events[i].kind == EventKind::Store)
          store = i;
        if (p.events[i].kind == EventKind::Step)
          step = i;
      }
      if (store >= 0 && (left == 0 || step < 0))
        return static_cast<std::uint32_t>(store);
      if (left > 0)
        --left;
      return static_cast<std::uint32_t>(step >= 0 ? step : 0);
    });
    m->run(sched, 100000);
    if (!m->findings().empty()) {
      *what = formatFinding(m->findings()[0]);
      return false;
    }
    *what = fmt::format("T returned {}", m->task(0).result);
    return m->task(0).state == TaskState::Exited && m->task(0).result == 154;
  }
};

TEST(Ppc32ModuleTocRestore, NoppingBothWordsBreaksATaskInsideTheCallAndBranchOverNever) {
  TocScenario s;
  std::size_t badNop = 0, badBranch = 0;
  std::string firstNop, what;
  for (unsigned steps = 0; steps <= 60; ++steps) {
    if (!s.runIsGood(ppc::TocSiteDisable::NopBoth, steps, &what) && badNop++ == 0)
      firstNop = fmt::format("after {} steps: {}", steps, what);
    if (!s.runIsGood(ppc::TocSiteDisable::BranchOver, steps, &what)) {
      ++badBranch;
      ADD_FAILURE() << "b +8 after " << steps << " steps: " << what;
    }
  }
  EXPECT_GT(badNop, 0u);
  EXPECT_EQ(badBranch, 0u);
  EXPECT_NE(firstNop.find("0x12340000"), std::string::npos) << firstNop; // the kernel's r30
  std::cout << "nop-both: " << badNop << "/61 schedules bad; first " << firstNop << "\n";
}

} // namespace
} // namespace ftsim::sim
