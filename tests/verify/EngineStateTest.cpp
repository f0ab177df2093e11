// A model-based (rc::state) test of the ftrace engine on the simulated kernel (kernel::Kernel,
// x86_64-fentry, 2 CPUs, per-ops trampolines on): random sequences of register/unregister ops,
// set/append/remove filter and notrace patterns, function tracer on/off and guest steps, every
// engine operation running as the machine's patcher on CPU 0 while a workload runs on CPU 1
// under a seeded random schedule. After each command the engine must agree with a reference
// model written here from the kernel's semantics, not from the engine's code:
//  - ops_test / hash_contains_ip: an ops wants ip when its filter is empty or holds ip, and its
//    notrace hash does not;
//  - __ftrace_hash_rec_update + ftrace_check_record: a record's count is the number of live ops
//    that want it; ENABLED iff count > 0; REGS whenever some such ops is SAVE_REGS (and possibly
//    left over from one, see below, but never with count 0); TRAMP iff exactly one ops wants it
//    and that ops has a trampoline; no flags left when count is 0 ("If there's no more users,
//    clear all flags");
//  - the site in every CPU's view: nop, or a call to the one ops' trampoline (TRAMP), to
//    ftrace_regs_caller (REGS) or to ftrace_caller;
//  - update_ftrace_function / ftrace_ops_get_list_func: ftrace_call and ftrace_regs_call call
//    ftrace_stub with no ops, the list function with two or more or with one DYNAMIC ops, and
//    otherwise that ops' own function (a callback stub of its own).

#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/model/RecordFlags.h"
#include "ftsim/sim/RandomScheduler.h"
#include "ftsim/verify/check/Fuzz.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace ftsim::verify {
namespace {

const std::string &imagePath() {
  static const std::string path = std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf";
  return path;
}

// The filter vocabulary: every traceable function, the ones workload_sched calls listed twice as
// often (so that guest steps run through enabled sites).
struct Vocabulary {
  std::vector<std::string> all, called;
};
const Vocabulary &vocabulary() {
  static const Vocabulary v = [] {
    Vocabulary out;
    kernel::Kernel k(arch::loadImage(imagePath()));
    std::set<std::string> names;
    k.core().records().forEach(
        [&](const model::DynFtrace &rec) { names.insert(k.core().recordName(rec)); });
    out.all.assign(names.begin(), names.end());
    out.called = calledFunctions(imagePath(), {"sched"});
    return out;
  }();
  return v;
}

// --- The reference model ---------------------------------------------------------------------

constexpr unsigned kOps = 3;
// a: a static ops; b: SAVE_REGS; c: DYNAMIC (freed by its owner; never called directly).
const char *const kOpsNames[kOps] = {"a", "b", "c"};
bool modelSaveRegs(unsigned i) { return i == 1; }
bool modelDynamic(unsigned i) { return i == 2; }

struct OpsModel {
  bool live = false;
  std::set<std::string> filter, notrace;
  // ops_test(): filter empty or holds the function, and notrace does not.
  bool wants(const std::string &fn) const {
    return (filter.empty() || filter.count(fn)) && !notrace.count(fn);
  }
};

struct Model {
  std::array<OpsModel, kOps> ops;
  bool tracer = false; // the function tracer (global_ops: empty filter and notrace)
};

// What the runs covered (asserted below, so that the property cannot pass vacuously).
struct Coverage {
  std::uint64_t registers = 0, unregisters = 0, hashes = 0, tracers = 0, steps = 0;
  std::uint64_t callbacks = 0, siteChecks = 0, singleDynamic = 0, singleDirect = 0;
};
Coverage coverage;

// --- The system under test -------------------------------------------------------------------

struct Sut {
  explicit Sut(std::uint64_t seed) : scheduler(seed), workloadSeed(seed % 7) {
    kernel::KernelConfig config;
    config.machine.cpus = 2;
    config.machine.quantum = 64;
    config.opsTrampolines = true;
    kernel = std::make_unique<kernel::Kernel>(arch::loadImage(imagePath()), config);
    kernel->watchPatchSites();
    for (unsigned i = 0; i < kOps; ++i) {
      std::uint32_t flags = 0;
      if (modelSaveRegs(i))
        flags |= model::OpsFlag::SaveRegs;
      if (modelDynamic(i))
        flags |= model::OpsFlag::Dynamic;
      ops[i] = std::make_unique<model::FtraceOps>(
          kOpsNames[i],
          [this, i](std::uint64_t ip, std::uint64_t, model::FtraceOps &, arch::GuestContext *) {
            ++calls[i][ip];
          },
          flags);
    }
  }

  // Runs `body` as the patcher while the workload runs, until the patcher has finished.
  void patch(const std::function<void(kernel::Kernel &)> &body) {
    ensureWorkload();
    kernel->patcher(body);
    for (int i = 0; i < 1000 && kernel->machine().patcherActive(); ++i)
      kernel->run(scheduler, 5000);
    RC_ASSERT(!kernel->machine().patcherActive());
  }
  void steps(std::uint64_t events) {
    ensureWorkload();
    kernel->run(scheduler, events);
  }
  void ensureWorkload() {
    const sim::Machine &m = kernel->machine();
    for (std::size_t t = 0; t < m.taskCount(); ++t)
      if (m.task(static_cast<int>(t)).state != sim::TaskState::Exited)
        return;
    kernel->addWorkload("sched", 1, ++workloadSeed);
  }

  std::unique_ptr<kernel::Kernel> kernel;
  std::array<std::unique_ptr<model::FtraceOps>, kOps> ops;
  std::array<std::map<std::uint64_t, std::uint64_t>, kOps> calls;
  sim::RandomScheduler scheduler;
  std::uint64_t workloadSeed;
};

// No torn fetch, fault, deadlock or trampoline-lifetime finding so far. Kernel::watchPatchSites()
// gives each site the states it may hold when it is called (nop, calls to ftrace_caller,
// ftrace_regs_caller and the ops trampolines allocated by then); a site fetched as a call to an
// ops trampoline allocated later is one of its legal states too, not a torn fetch.
void checkNoFinding(Sut &sut) {
  const kernel::Kernel &k = *sut.kernel;
  const arch::Arch &a = k.machine().arch();
  for (const sim::Finding &f : k.machine().findings()) {
    if (f.kind == sim::FindingKind::TornFetch) {
      const arch::Bytes fetched(f.bytes.begin(), f.bytes.end());
      bool legal = false;
      for (const kernel::OpsTrampoline &t : k.opsTrampolines())
        legal |= fetched == a.call(f.addr, t.addr).bytes;
      if (legal)
        continue;
    }
    RC_FAIL("machine finding: " + sim::formatFinding(f));
  }
}

// Every record, site view and ftrace_call target against the model.
void checkAgainstModel(const Model &m, Sut &sut) {
  kernel::Kernel &k = *sut.kernel;
  model::FtraceCore &core = k.core();
  const arch::Arch &a = k.machine().arch();
  const arch::TrampolineCode &code = k.trampolines();
  RC_ASSERT(!core.dead());
  checkNoFinding(sut);

  // The live ops the engine has, against the model's: ours, and the tracer's.
  std::vector<const model::FtraceOps *> foreign;
  for (const model::FtraceOps *o : core.opsList()) {
    if (o->has(model::OpsFlag::Stub))
      continue;
    bool ours = false;
    for (unsigned i = 0; i < kOps; ++i)
      ours |= o == sut.ops[i].get();
    if (!ours)
      foreign.push_back(o);
  }
  for (unsigned i = 0; i < kOps; ++i) {
    const auto &list = core.opsList();
    const bool live = std::find(list.begin(), list.end(), sut.ops[i].get()) != list.end();
    RC_ASSERT(live == m.ops[i].live);
  }
  RC_ASSERT(foreign.size() == (m.tracer ? 1u : 0u));
  const model::FtraceOps *tracerOps = m.tracer ? foreign.front() : nullptr;

  // Records.
  ++coverage.siteChecks;
  std::size_t records = 0;
  core.records().forEach([&](const model::DynFtrace &rec) {
    if (rec.has(model::RecordFlag::Disabled))
      return;
    ++records;
    const std::string fn = core.recordName(rec);
    std::vector<const model::FtraceOps *> refs;
    bool regs = false;
    for (unsigned i = 0; i < kOps; ++i)
      if (m.ops[i].live && m.ops[i].wants(fn)) {
        refs.push_back(sut.ops[i].get());
        regs |= modelSaveRegs(i);
      }
    if (tracerOps)
      refs.push_back(tracerOps); // global_ops: every function, no SAVE_REGS
    const bool tramp = refs.size() == 1 && refs.front()->trampoline != 0;
    auto expect = [&](bool ok, const std::string &what) {
      if (!ok)
        RC_FAIL(fmt::format("{} ({:#x}) flags {:#010x}: {} (model: {} ops{}{})", fn, rec.ip,
                            rec.flags, what, refs.size(), regs ? ", REGS" : "",
                            tramp ? ", TRAMP" : ""));
    };
    expect(rec.count() == refs.size(), fmt::format("reference count {}", rec.count()));
    expect(rec.has(model::RecordFlag::Enabled) == !refs.empty(), "ENABLED disagrees");
    // REGS: set whenever a SAVE_REGS ops wants the record. It may stay set after the last such
    // ops stopped wanting it while others still do: __ftrace_hash_rec_update() drops it on a
    // decrement only if test_rec_ops_needs_regs() finds no SAVE_REGS ops, and on a filter change
    // (ftrace_hash_move) that test runs while the ops' old hash is still installed, so the ops
    // itself keeps it. Only "no more users" (ftrace_check_record) clears it.
    expect(!regs || rec.has(model::RecordFlag::Regs), "REGS missing for a SAVE_REGS ops");
    expect(!refs.empty() || !rec.has(model::RecordFlag::Regs), "REGS left with no users");
    const bool regsFlag = rec.has(model::RecordFlag::Regs);
    expect(rec.has(model::RecordFlag::Tramp) == tramp, "TRAMP disagrees");
    arch::Bytes want = a.nop();
    if (!refs.empty())
      want = a.call(rec.ip, tramp      ? refs.front()->trampoline
                            : regsFlag ? code.ftraceRegsCaller
                                       : code.ftraceCaller)
                 .bytes;
    for (unsigned cpu = 0; cpu < k.machine().config().cpus; ++cpu) {
      const arch::Bytes seen = k.machine().viewBytes(cpu, rec.ip, a.siteSize());
      expect(seen == want, fmt::format("cpu{} sees {}, the model says {}", cpu,
                                       arch::hexBytes(seen), arch::hexBytes(want)));
    }
  });
  RC_ASSERT(records > 0u);

  // ftrace_call / ftrace_regs_call.
  std::vector<unsigned> liveOurs;
  for (unsigned i = 0; i < kOps; ++i)
    if (m.ops[i].live)
      liveOurs.push_back(i);
  const std::size_t live = liveOurs.size() + (m.tracer ? 1 : 0);
  for (std::uint64_t call : {code.ftraceCall, code.ftraceRegsCall}) {
    const auto target = a.callTarget(call, k.machine().viewBytes(0, call, a.siteSize()));
    RC_ASSERT(target.has_value());
    if (live == 0)
      RC_ASSERT(*target == code.ftraceStub);
    else if (live >= 2 || (liveOurs.size() == 1 && modelDynamic(liveOurs.front()))) {
      coverage.singleDynamic += live == 1;
      RC_ASSERT(*target == code.listFuncStub);
    } else {
      ++coverage.singleDirect;
      // The single ops' own function: a callback stub of its own.
      RC_ASSERT(*target != code.ftraceStub);
      RC_ASSERT(*target != code.listFuncStub);
      RC_ASSERT(std::find(code.callbackStubs.begin(), code.callbackStubs.end(), *target) !=
                code.callbackStubs.end());
      const model::FtraceOps *single = m.tracer ? tracerOps : sut.ops[liveOurs.front()].get();
      RC_ASSERT(core.traceFunction().ops == single);
    }
  }
}

// --- Commands --------------------------------------------------------------------------------

using Command = rc::state::Command<Model, Sut>;

// rc::gen::inRange scales with the size (small sizes give the low end only): pick uniformly.
unsigned genOps() { return *rc::gen::element(0u, 1u, 2u); }
template <typename T> T genUniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

std::string genFunction() {
  const Vocabulary &v = vocabulary();
  return *rc::gen::weightedOneOf<std::string>(
      {{2, rc::gen::elementOf(v.called)}, {1, rc::gen::elementOf(v.all)}});
}

struct Register : Command {
  unsigned i = genOps();
  void checkPreconditions(const Model &m) const override { RC_PRE(!m.ops[i].live); }
  void apply(Model &m) const override { m.ops[i].live = true; }
  void run(const Model &m, Sut &sut) const override {
    sut.patch([&](kernel::Kernel &k) { k.core().registerFunction(*sut.ops[i]); });
    ++coverage.registers;
    Model next = m;
    apply(next);
    checkAgainstModel(next, sut);
  }
  void show(std::ostream &os) const override { os << "register " << kOpsNames[i]; }
};

struct Unregister : Command {
  unsigned i = genOps();
  void checkPreconditions(const Model &m) const override { RC_PRE(m.ops[i].live); }
  void apply(Model &m) const override { m.ops[i].live = false; }
  void run(const Model &m, Sut &sut) const override {
    sut.patch([&](kernel::Kernel &k) { k.core().unregisterFunction(*sut.ops[i]); });
    ++coverage.unregisters;
    Model next = m;
    apply(next);
    checkAgainstModel(next, sut);
  }
  void show(std::ostream &os) const override { os << "unregister " << kOpsNames[i]; }
};

// set (reset) / append / remove ("!name") on the filter or the notrace hash.
struct Hash : Command {
  enum Kind { Set, Append, Remove };
  unsigned i = genOps();
  bool notrace =
      *rc::gen::weightedOneOf<bool>({{3, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  Kind kind = *rc::gen::element(Set, Append, Remove);
  std::string fn = genFunction();

  void apply(Model &m) const override {
    std::set<std::string> &h = notrace ? m.ops[i].notrace : m.ops[i].filter;
    if (kind == Set)
      h.clear();
    if (kind == Remove)
      h.erase(fn);
    else
      h.insert(fn);
  }
  void run(const Model &m, Sut &sut) const override {
    model::FtraceOps &ops = *sut.ops[i];
    const std::string pattern = kind == Remove ? "!" + fn : fn;
    sut.patch([&](kernel::Kernel &k) {
      if (notrace)
        k.core().setNotrace(ops, pattern, kind == Set);
      else
        k.core().setFilter(ops, pattern, kind == Set);
    });
    ++coverage.hashes;
    Model next = m;
    apply(next);
    checkAgainstModel(next, sut);
  }
  void show(std::ostream &os) const override {
    os << (kind == Set      ? "set"
           : kind == Append ? "append"
                            : "remove")
       << " " << (notrace ? "notrace" : "filter") << " " << kOpsNames[i] << " " << fn;
  }
};

struct Tracer : Command {
  void apply(Model &m) const override { m.tracer = !m.tracer; }
  void run(const Model &m, Sut &sut) const override {
    const bool on = !m.tracer;
    sut.patch(
        [&](kernel::Kernel &k) { k.tracefs().write("current_tracer", on ? "function" : "nop"); });
    ++coverage.tracers;
    Model next = m;
    apply(next);
    checkAgainstModel(next, sut);
  }
  void show(std::ostream &os) const override { os << "function tracer toggled"; }
};

struct Steps : Command {
  std::uint64_t events = genUniform<std::uint64_t>(200, 3000);
  void apply(Model &) const override {}
  void run(const Model &m, Sut &sut) const override {
    const std::size_t before = sut.kernel->callbacks().size();
    sut.steps(events);
    ++coverage.steps;
    coverage.callbacks += sut.kernel->callbacks().size() - before;
    checkNoFinding(sut);
    checkAgainstModel(m, sut);
  }
  void show(std::ostream &os) const override { os << "guest steps " << events; }
};

rc::detail::TestParams params() {
  rc::detail::TestParams p;
  p.seed = 20240611;
  p.maxSuccess = 60;
  p.maxSize = 40;               // command sequences grow to about 40
  if (std::getenv("RC_PARAMS")) // explicit RC_PARAMS (seed, max_success, ...) wins
    p = rc::detail::configuration().testParams;
  return p;
}

TEST(EngineState, RecordsSitesAndFtraceCallFollowTheOpsHashes) {
  ASSERT_GT(vocabulary().all.size(), 20u);
  ASSERT_GT(vocabulary().called.size(), 3u);
  rc::detail::TestMetadata metadata;
  metadata.id = "EngineState/RecordsSitesAndFtraceCallFollowTheOpsHashes";
  metadata.description = metadata.id;
  const auto result = rc::detail::checkTestable(
      [] {
        Sut sut(genUniform<std::uint64_t>(1, 1000000));
        checkAgainstModel(Model{}, sut);
        rc::state::check(
            Model{}, sut,
            rc::state::gen::execOneOfWithArgs<Register, Unregister, Hash, Hash, Tracer, Steps>());
        // The workload is not disturbed by tracing: no finding at all.
        checkNoFinding(sut);
      },
      metadata, params());
  std::ostringstream out;
  rc::detail::printResultMessage(result, out);
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << out.str();
  std::printf("covered: %llu register, %llu unregister, %llu filter/notrace, %llu tracer, %llu "
              "guest-step commands; %llu callbacks during guest steps; %llu model checks\n",
              static_cast<unsigned long long>(coverage.registers),
              static_cast<unsigned long long>(coverage.unregisters),
              static_cast<unsigned long long>(coverage.hashes),
              static_cast<unsigned long long>(coverage.tracers),
              static_cast<unsigned long long>(coverage.steps),
              static_cast<unsigned long long>(coverage.callbacks),
              static_cast<unsigned long long>(coverage.siteChecks));
  if (!std::getenv("RC_PARAMS")) {
    EXPECT_GE(coverage.registers, 10u);
    EXPECT_GE(coverage.unregisters, 5u);
    EXPECT_GE(coverage.hashes, 20u);
    EXPECT_GE(coverage.tracers, 5u);
    EXPECT_GE(coverage.steps, 10u);
    EXPECT_GT(coverage.callbacks, 100u);
    EXPECT_GT(coverage.singleDynamic, 0u); // c alone: the list function
    EXPECT_GT(coverage.singleDirect, 0u);  // a, b or the tracer alone: called directly
  }
}

} // namespace
} // namespace ftsim::verify
