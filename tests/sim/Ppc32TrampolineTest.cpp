// The generated ppc32 trampolines run the built guest kernels transparently. Every site of the
// -pg image (and, after booting it as ftrace_init_nop() does, of the -fpatchable-function-entry
// image) is pointed at ftrace_caller / ftrace_regs_caller by plain pokes before the run; the trace
// callback is a hypercall stub. Checks: each workload returns its untraced checksum; the callback
// runs exactly once per executed site (counted from the event log's fetches at the watched
// sites), with ip = the site and a parent that is a real return address into the caller (the word
// before it is a `bl` to the traced function) or the task's exit stub; through ftrace_regs_caller
// the pt_regs hold nip = ip + 4 and the stack pointer of the site. With the graph caller on,
// every traced call's return goes through return_to_handler and the checksums still hold.

#include "ftsim/arch/Image.h"
#include "ftsim/arch/Trampolines.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/ImageBoot.h"
#include "ftsim/model/ProtocolPatcher.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ppc32/Ppc32Code.h"

#include <gtest/gtest.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace ftsim::sim {
namespace {

namespace ppc = arch::ppc32;

arch::Image loadGuest(const std::string &name) {
  const std::string path = std::string(FTSIM_GUEST_DIR) + "/" + name + "/kernel.elf";
  if (!std::filesystem::exists(path))
    ADD_FAILURE() << "guest image " << path << " is missing: build target ftsim-guests";
  return arch::loadImage(path);
}

const std::vector<std::string> kWorkloads = {"workload_sched", "workload_mm", "workload_fs",
                                             "workload_mixed"};

struct Call {
  std::uint64_t ip, parent;
  bool fullRegs;
  std::uint64_t nip = 0, sp = 0;
};

enum class Mode { Untraced, Caller, RegsCaller, Graph };

struct Outcome {
  std::vector<std::uint64_t> results;
  std::vector<Call> calls;
  std::map<std::uint64_t, unsigned> siteSteps; // executions of each site (event log)
  std::size_t graphEntries = 0, graphReturns = 0;
  std::uint64_t returnToHandler = 0;
};

// `sites` are the records' ips; the image's text already holds what boot left there.
Outcome run(const arch::Image &image, const std::vector<std::uint64_t> &sites, Mode mode) {
  const arch::Arch &isa = *image.arch;
  MachineConfig config;
  config.cpus = 2;
  config.quantum = 1000;
  Machine m(isa, config);
  m.loadImage(image);
  arch::TrampolineRequest request;
  request.base = (image.textStart() & ~std::uint64_t{0xfff}) - 0x10000;
  auto tramps = arch::makeFtraceTrampolines(isa, request);
  const arch::TrampolineCode &code = tramps->code();
  m.mapText(code.base, code.bytes);

  Outcome out;
  out.returnToHandler = code.returnToHandler;
  std::map<int, std::vector<std::uint64_t>> returnStacks;
  if (mode != Mode::Untraced) {
    for (std::size_t i = 0; i < sites.size(); ++i) {
      const bool regs = mode == Mode::RegsCaller && i % 2 == 1;
      m.pokeText(sites[i],
                 isa.call(sites[i], regs ? code.ftraceRegsCaller : code.ftraceCaller).bytes);
    }
    m.pokeText(code.ftraceCall, isa.call(code.ftraceCall, code.callbackStubs[0]).bytes);
    m.pokeText(code.ftraceRegsCall, isa.call(code.ftraceRegsCall, code.callbackStubs[0]).bytes);
    m.setHypercall(code.callbackStubs[0], [&](arch::GuestContext &cpu) {
      const arch::CallbackArgs args = tramps->argsOf(cpu);
      Call c{args.ip, args.parentIp, args.fullRegs};
      if (args.fullRegs) {
        auto regs = tramps->ptRegs(cpu, args.regs);
        c.nip = regs->pc();
        c.sp = regs->sp();
      }
      out.calls.push_back(c);
    });
  }
  if (mode == Mode::Graph) {
    m.pokeText(code.ftraceGraphCall, isa.jump(code.ftraceGraphCall, code.ftraceGraphCaller).bytes);
    m.setHypercall(code.prepareReturnStub, [&](arch::GuestContext &cpu) {
      const arch::CallbackArgs args = tramps->argsOf(cpu);
      returnStacks[cpu.task()].push_back(args.parentIp);
      ++out.graphEntries;
      tramps->setReturnValue(cpu, code.returnToHandler);
    });
    m.setHypercall(code.returnHandlerStub, [&](arch::GuestContext &cpu) {
      auto &stack = returnStacks[cpu.task()];
      ASSERT_FALSE(stack.empty());
      tramps->setReturnValue(cpu, stack.back());
      stack.pop_back();
      ++out.graphReturns;
    });
  }
  for (std::uint64_t site : sites)
    m.watchSite(site, 4);
  int n = 0;
  for (const std::string &w : kWorkloads)
    m.addTask({w, static_cast<unsigned>(n++ % 2), image.findSymbol(w)->addr, 4242});
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr, 50'000'000).status, RunResult::Status::Completed);
  EXPECT_TRUE(m.findings().empty()) << m.logText().substr(0, 3000);
  for (int t = 0; t < n; ++t) {
    EXPECT_EQ(m.task(t).state, TaskState::Exited) << m.task(t).name;
    out.results.push_back(m.task(t).result);
  }
  for (const EventRecord &e : m.events())
    if (e.kind == EventKind::Step && std::binary_search(sites.begin(), sites.end(), e.pc))
      ++out.siteSteps[e.pc];
  for (auto &[task, stack] : returnStacks)
    EXPECT_TRUE(stack.empty()) << "task " << task << " has unreturned graph entries";
  return out;
}

// The parent is a return address into a caller: the word before it is a `bl` — to the traced
// function itself, or (a tail call, `b`) to a function that branched to it — or the task's exit
// stub, or return_to_handler when the graph tracer diverted the return of a function that then
// tail-called the traced one. Returns whether the `bl` targets the traced function itself.
bool expectParentCalls(const arch::Image &image, std::uint64_t returnToHandler, const Call &c) {
  const arch::ImageSymbol *fn = image.symbolAt(c.ip);
  EXPECT_NE(fn, nullptr);
  if (c.parent == image.findSymbol("ftsim_hc_exit")->addr || c.parent == returnToHandler)
    return false;
  std::uint8_t word[4] = {};
  EXPECT_TRUE(image.read(c.parent - 4, word)) << std::hex << c.parent;
  const auto target = image.arch->callTarget(c.parent - 4, word);
  EXPECT_TRUE(target.has_value()) << fn->name << " parent " << std::hex << c.parent;
  return fn && target == fn->addr;
}

void expectTracedOnceEach(const arch::Image &image, const Outcome &traced) {
  std::map<std::uint64_t, unsigned> perIp;
  std::size_t direct = 0;
  for (const Call &c : traced.calls) {
    ++perIp[c.ip];
    direct += expectParentCalls(image, traced.returnToHandler, c) ? 1 : 0;
  }
  EXPECT_EQ(perIp, traced.siteSteps);
  EXPECT_GT(traced.calls.size(), 500u);
  EXPECT_GT(direct * 10, traced.calls.size() * 7) << "most calls are direct `bl`s";
}

std::vector<std::uint64_t> sortedLocs(const arch::Image &image) {
  std::vector<std::uint64_t> sites;
  for (std::uint64_t loc : image.mcountLocs)
    if (loc)
      sites.push_back(loc);
  std::sort(sites.begin(), sites.end());
  return sites;
}

TEST(Ppc32Trampolines, McountSitesThroughFtraceCallerAreTransparentAndTracedOnceEach) {
  arch::Image image = loadGuest("ppc32-mcount");
  const std::vector<std::uint64_t> sites = sortedLocs(image);
  const Outcome untraced = run(image, sites, Mode::Untraced);
  const Outcome traced = run(image, sites, Mode::Caller);
  EXPECT_EQ(traced.results, untraced.results);
  expectTracedOnceEach(image, traced);
  for (const Call &c : traced.calls)
    EXPECT_FALSE(c.fullRegs);
}

TEST(Ppc32Trampolines, RegsCallerGivesPtRegsWithNipAndStackOfTheSite) {
  arch::Image image = loadGuest("ppc32-mcount");
  const std::vector<std::uint64_t> sites = sortedLocs(image);
  const Outcome untraced = run(image, sites, Mode::Untraced);
  const Outcome traced = run(image, sites, Mode::RegsCaller);
  EXPECT_EQ(traced.results, untraced.results);
  expectTracedOnceEach(image, traced);
  std::size_t full = 0;
  for (const Call &c : traced.calls) {
    const std::size_t index = std::lower_bound(sites.begin(), sites.end(), c.ip) - sites.begin();
    EXPECT_EQ(c.fullRegs, index % 2 == 1) << std::hex << c.ip;
    if (!c.fullRegs)
      continue;
    ++full;
    EXPECT_EQ(c.nip, c.ip + 4);
    EXPECT_EQ(c.sp % 16, 0u);
    EXPECT_GE(c.sp, 0xd0000000u); // the task stacks
  }
  EXPECT_GT(full, 100u);
}

TEST(Ppc32Trampolines, GraphCallerDivertsEveryReturnThroughReturnToHandler) {
  arch::Image image = loadGuest("ppc32-mcount");
  const std::vector<std::uint64_t> sites = sortedLocs(image);
  const Outcome untraced = run(image, sites, Mode::Untraced);
  const Outcome graph = run(image, sites, Mode::Graph);
  EXPECT_EQ(graph.results, untraced.results);
  EXPECT_EQ(graph.graphEntries, graph.calls.size());
  EXPECT_EQ(graph.graphReturns, graph.graphEntries);
  expectTracedOnceEach(image, graph);
}

// -fpatchable-function-entry=2: boot as ftrace_init_nop() does (mflr r0 patched in, the site is
// the second nop), then enable every site by pokes.
TEST(Ppc32Trampolines, PatchableEntryImageBootsAndTracesTransparently) {
  arch::Image image = loadGuest("ppc32-pfe");
  const arch::Arch &isa = *image.arch;
  const std::vector<std::uint64_t> entries = sortedLocs(image);
  const Outcome untraced = run(image, {}, Mode::Untraced);

  model::BootTextPort port(image);
  auto protocol = arch::makePatchProtocol(isa, "patch-instruction");
  auto hooks = isa.makeSiteHooks({&image, protocol.get()});
  auto patcher = std::make_unique<model::ProtocolPatcher>(port, *protocol, *hooks);
  model::FtraceConfig config;
  config.patcher = patcher.get();
  config.port = &port;
  config.symbolizer = model::imageSymbolizer(image);
  model::FtraceCore core(config);
  const model::ImageBoot boot = model::bootImage(image, core);
  ASSERT_TRUE(boot.report.bugs.empty()) << boot.bugText;
  std::vector<std::uint64_t> sites;
  core.records().forEach([&](const model::DynFtrace &rec) { sites.push_back(rec.ip); });
  ASSERT_EQ(sites.size(), entries.size());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    EXPECT_EQ(sites[i], entries[i] + 4);
    std::uint8_t w[8];
    ASSERT_TRUE(image.read(entries[i], w));
    EXPECT_EQ(ppc::wordOf(std::span(w, 4)), ppc::kMflrR0);
    EXPECT_EQ(ppc::wordOf(std::span(w + 4, 4)), ppc::kNop);
  }
  // Booted but disabled (mflr r0; nop) is transparent too.
  EXPECT_EQ(run(image, sites, Mode::Untraced).results, untraced.results);
  const Outcome traced = run(image, sites, Mode::Caller);
  EXPECT_EQ(traced.results, untraced.results);
  expectTracedOnceEach(image, traced);
  const Outcome graph = run(image, sites, Mode::Graph);
  EXPECT_EQ(graph.results, untraced.results);
  EXPECT_EQ(graph.graphReturns, graph.graphEntries);
}

} // namespace
} // namespace ftsim::sim
