// The patch-operation fuzzer (Fuzz.h).

#include "ftsim/verify/check/Fuzz.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/RoundRobinScheduler.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/KernelHarness.h"

#include <fmt/format.h>

#include <chrono>
#include <set>

namespace ftsim::verify {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() { return s_ = splitmix(s_); }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }

private:
  std::uint64_t s_;
};

// One execution: the scenario's explorer, one run.
struct Run {
  std::optional<Counterexample> found;
  std::uint64_t events = 0;
  std::uint64_t notes = 0;
};

Run runOnce(const Scenario &s, const std::string &imagePath) {
  KernelHarness harness(s, imagePath);
  const ExploreResult r = explore(harness, exploreOptionsFor(s));
  return {r.counterexample, r.stats.events, harness.notes().size()};
}

bool violates(const Scenario &s, const std::string &imagePath, const std::string &oracle) {
  KernelHarness harness(s, imagePath);
  ExploreOptions o = exploreOptionsFor(s);
  const ExploreResult r = explore(harness, o);
  return r.counterexample && r.counterexample->violation.oracle == oracle;
}

// Fewer operations (one step removed at a time while a violation of the same oracle remains
// under the same schedule seed), then the ops no step names.
Scenario shrink(Scenario s, const std::string &imagePath, const std::string &oracle) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t k = 0; k < s.engine.steps.size(); ++k) {
      Scenario t = s;
      t.engine.steps.erase(t.engine.steps.begin() + static_cast<std::ptrdiff_t>(k));
      if (violates(t, imagePath, oracle)) {
        s = std::move(t);
        changed = true;
        break;
      }
    }
  }
  for (std::size_t k = s.engine.ops.size(); k-- > 0;) {
    bool used = false;
    for (const EngineStep &st : s.engine.steps)
      used |= st.ops == s.engine.ops[k].name;
    if (!used)
      s.engine.ops.erase(s.engine.ops.begin() + static_cast<std::ptrdiff_t>(k));
  }
  s.name += "-shrunk";
  return s;
}

} // namespace

std::vector<std::string> calledFunctions(const std::string &imagePath,
                                         const std::vector<std::string> &workloads) {
  kernel::KernelConfig config;
  config.machine.cpus = static_cast<unsigned>(workloads.size() + 1);
  config.machine.quantum = 64;
  kernel::Kernel k(arch::loadImage(imagePath), config);
  k.watchPatchSites();
  for (std::size_t i = 0; i < workloads.size(); ++i)
    k.addWorkload(workloads[i], static_cast<unsigned>(i + 1), 5 + i);
  sim::RoundRobinScheduler rr;
  k.run(rr, 2000000);
  std::set<std::string> names;
  for (const kernel::SiteExecution &se : k.siteExecutions())
    names.insert(k.symbolName(se.ip, false));
  return {names.begin(), names.end()};
}

Scenario fuzzScenario(const FuzzOptions &options, const std::vector<std::string> &functions,
                      std::uint64_t index) {
  if (functions.empty())
    fatal("fuzz: the workloads call no traced function");
  Rng rng(splitmix(options.seed ^ splitmix(index)));
  Scenario s;
  s.name = fmt::format("fuzz-{}-{}", options.seed, index);
  s.arch = options.arch;
  const arch::Arch &isa = arch::archByName(options.arch);
  s.protocol = !options.protocol.empty() ? options.protocol : arch::defaultProtocol(isa);
  s.code = CodeKind::Kernel;
  s.image = options.image;
  s.cpus = 2 + static_cast<unsigned>(rng.below(2));
  const sim::StoreModel stores[] = {sim::StoreModel::Byte, sim::StoreModel::Word,
                                    sim::StoreModel::Line};
  const auto fetches = sim::allFetchModels(); // atomic, line, stale
  // Only the models real machines of the ISA have: no byte stores where aligned words are atomic,
  // and under the per-byte stale model such a word can tear (README, Exploration).
  const bool words = isa.atomicInsnWords();
  s.store = words ? stores[1 + rng.below(2)] : stores[rng.below(3)];
  s.fetch = words ? fetches[rng.below(2)] : fetches[rng.below(fetches.size())];
  s.bounds.maxEvents = 400000;
  EngineSpec &e = s.engine;
  const char *workloads[] = {"sched", "mm"};
  e.workloads.clear();
  for (unsigned c = 1; c < s.cpus; ++c)
    e.workloads.push_back(workloads[rng.below(2)]);
  e.seed = 5 + rng.below(4);
  s.explore.explorer = rng.chance(50) ? "random" : "pct";
  s.explore.runs = 1;
  s.explore.seed = rng.next() % 1000000;
  s.explore.pctDepth = 2 + static_cast<unsigned>(rng.below(3));
  auto fn = [&] { return functions[rng.below(functions.size())]; };
  const unsigned nops = 1 + static_cast<unsigned>(rng.below(3));
  for (unsigned i = 0; i < nops; ++i) {
    EngineOpsSpec o;
    o.name = std::string(1, static_cast<char>('a' + i));
    o.filter = fn();
    if (rng.chance(40))
      o.filter += "," + fn();
    o.dynamic = rng.chance(40);
    o.saveRegs = rng.chance(30);
    e.ops.push_back(o);
  }
  std::vector<bool> live(nops, false);
  bool tracer = false;
  const unsigned steps = 1 + static_cast<unsigned>(rng.below(options.maxSteps));
  for (unsigned i = 0; i < steps; ++i) {
    EngineStep st;
    const std::size_t which = rng.below(nops);
    st.ops = e.ops[which].name;
    switch (rng.below(7)) {
    case 0:
    case 1:
      st.op = live[which] ? EngineOpKind::Unregister : EngineOpKind::Register;
      live[which] = !live[which];
      break;
    case 2:
      st.op = EngineOpKind::SetFilter;
      st.pattern = fn();
      break;
    case 3:
      st.op = EngineOpKind::AppendFilter;
      st.pattern = fn();
      break;
    case 4: {
      st.op = EngineOpKind::RemoveFilter;
      const std::string f = e.ops[which].filter;
      st.pattern = f.substr(0, f.find(','));
      break;
    }
    default:
      if (rng.chance(50)) {
        st.op = EngineOpKind::Tracer;
        st.ops.clear();
        tracer = !tracer;
        st.tracer = tracer ? "function" : "nop";
      } else {
        st.op = live[which] ? EngineOpKind::Unregister : EngineOpKind::Register;
        live[which] = !live[which];
      }
      break;
    }
    e.steps.push_back(st);
  }
  if (!options.linuxProfile.empty())
    applyLinuxProfile(s, options.linuxProfile,
                      options.protocol.empty() ? std::nullopt
                                               : std::optional<std::string>(options.protocol));
  s.validate(s.name);
  return s;
}

FuzzResult fuzz(const FuzzOptions &options) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (!options.linuxProfile.empty()) // a bad --linux or --protocol is bad input before any run
    fuzzScenario(options, {"schedule"}, 0);
  const std::vector<std::string> functions = calledFunctions(options.imagePath, {"sched", "mm"});
  FuzzResult r;
  for (std::uint64_t i = 0;; ++i) {
    if (options.runs ? i >= options.runs : elapsed() >= options.seconds)
      break;
    Scenario s = fuzzScenario(options, functions, i);
    const Run run = runOnce(s, options.imagePath);
    ++r.runs;
    r.events += run.events;
    r.notes += run.notes;
    if (options.progress)
      options.progress(r.runs, r.events);
    if (!run.found)
      continue;
    r.original = s;
    const std::string oracle = run.found->violation.oracle;
    r.originalViolation = summarizeViolation(run.found->violation);
    s = shrink(std::move(s), options.imagePath, oracle);
    KernelHarness shrunk(s, options.imagePath);
    const CheckReport report = check(shrunk, exploreOptionsFor(s));
    if (!report.minimised || report.minimised->violation.oracle != oracle)
      FTSIM_PANIC("fuzz: the shrunk scenario no longer violates {}", oracle);
    r.cex = report.minimised;
    r.failing = s;
    break;
  }
  r.seconds = elapsed();
  return r;
}

} // namespace ftsim::verify
