// ftsim_bench_sim: aggregate guest instructions per second of the simulator, next to four runs of
// the same guest code by bare Unicorn measured in the same process: single-stepping
// (uc_emu_start count=1 in a loop), one counted run (count = the task's instructions: Unicorn's
// per-instruction count hook), one free run (count 0, stopped by the exit stub's int3) and one
// free run with one empty block hook (the least a run that can stop by itself costs), and what a
// guest store costs Unicorn 2.0.1 (`free_run_stores` against `free_run`). The
// ratios: `vs_raw` = simulator rate / single-step rate (instruction granularity's yardstick),
// `vs_raw_rr` = the same against bare single-stepping of one engine per CPU in turn (what
// switching engines costs Unicorn itself), `vs_lean` and `vs_lean_rr` = the same two against
// engines stepped as the machine steps its own (exits enabled, none set: Unicorn then ignores the
// `until` address, and a step refills no TLB entry), `vs_counted`, `vs_free` and `vs_block_hooked`
// (fast mode's: BM_SimFastMode runs by a hook before every instruction, BM_SimFastModeByBlocks by
// one before every block, sim/BlockRuns.cpp).
// Every yardstick a ratio divides by runs the same tasks between the machine's runs (fast mode's
// counted, free and block-hooked runs as well as every-instruction mode's four); the
// `BM_RawUnicorn` rows measure each way once, for half a second.
//
// Guest: per CPU one task running `ecx = N; do { rax += rcx; } while (--ecx);` (3 instructions
// per iteration) at the x86-64 kernel text address, returning into the exit hypercall; the
// `_long_blocks` rows and BM_SimFastModeByBlocksLongBlocks run a loop of 10-instruction blocks.

#include "ftsim/arch/UnicornEngine.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <benchmark/benchmark.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <initializer_list>
#include <vector>

namespace {

using namespace ftsim;

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr std::uint64_t kHcExit = kText;
constexpr std::uint64_t kLoop = kText + 0x40;
constexpr std::uint32_t kIterations = 20000;
// mov $N,%ecx; xor %eax,%eax; 1: add %rcx,%rax; dec %ecx; jne 1b; ret; then int3 (exit stub).
constexpr std::uint64_t kInstructionsPerTask = 2 + 3ull * kIterations + 1 + 1;
// The same with a 10-instruction block (fast mode's runs by blocks pay per block): mov $N,%ecx;
// xor %eax,%eax; xor %edx,%edx; 1: add %rcx,%rax; add %rax,%rdx; xor %rcx,%rdx; lea 3(%rax),%rsi;
// add %rsi,%rdx; shr %rdx; sub %rcx,%rdx; add %rdx,%rax; dec %ecx; jne 1b; ret.
constexpr std::uint64_t kLongLoop = kText + 0x100;
constexpr std::uint64_t kLongInstructionsPerTask = 3 + 10ull * kIterations + 1 + 1;

// The tight loop with its add replaced by a store to the stack, as many instructions: mov
// $N,%ecx; xor %eax,%eax; 1: mov %rax,-8(%rsp); dec %ecx; jne 1b; ret. Only bare Unicorn's free
// run takes it (`free_run_stores`): against `free_run`, what a guest store costs Unicorn itself.
constexpr std::uint64_t kStoreLoop = kText + 0x200;

// The loop a task runs: the 3-instruction block (every-instruction mode's yardsticks run only it),
// the 10-instruction one, or the tight loop storing.
enum class Loop { Tight, Long, Stores };
std::uint64_t entryOf(Loop l) {
  return l == Loop::Tight ? kLoop : l == Loop::Long ? kLongLoop : kStoreLoop;
}
std::uint64_t instructionsOf(Loop l) {
  return l == Loop::Long ? kLongInstructionsPerTask : kInstructionsPerTask;
}
// What a task returns in rax, computed on the host.
std::uint64_t resultOf(Loop l) {
  if (l == Loop::Tight)
    return 200010000ull;
  if (l == Loop::Stores)
    return 0;
  std::uint64_t rax = 0, rdx = 0;
  for (std::uint64_t rcx = kIterations; rcx != 0; --rcx) {
    rax += rcx;
    rdx += rax;
    rdx ^= rcx;
    const std::uint64_t rsi = rax + 3;
    rdx += rsi;
    rdx >>= 1;
    rdx -= rcx;
    rax += rdx;
  }
  return rax;
}

// CPU time of this thread: the machine is shared, so wall time would measure the neighbours.
double threadSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// mov $kIterations,%ecx, then `rest`.
std::vector<std::uint8_t> loopCode(std::initializer_list<std::uint8_t> rest) {
  std::vector<std::uint8_t> code(5 + rest.size(), 0);
  code[0] = 0xb9;
  code[1] = static_cast<std::uint8_t>(kIterations);
  code[2] = static_cast<std::uint8_t>(kIterations >> 8);
  std::copy(rest.begin(), rest.end(), code.begin() + 5);
  return code;
}

std::vector<std::uint8_t> guestText() {
  std::vector<std::uint8_t> text(0x1000, 0xcc);
  const std::uint8_t exitStub[] = {0xcc, 0xc3};
  std::memcpy(text.data(), exitStub, sizeof exitStub);
  const std::vector<std::uint8_t> loop =
      loopCode({0x31, 0xc0, 0x48, 0x01, 0xc8, 0xff, 0xc9, 0x75, 0xf9, 0xc3});
  std::copy(loop.begin(), loop.end(), text.begin() + (kLoop - kText));
  const std::vector<std::uint8_t> longLoop =
      loopCode({0x31, 0xc0, 0x31, 0xd2, 0x48, 0x01, 0xc8, 0x48, 0x01, 0xc2, 0x48, 0x31,
                0xca, 0x48, 0x8d, 0x70, 0x03, 0x48, 0x01, 0xf2, 0x48, 0xd1, 0xea, 0x48,
                0x29, 0xca, 0x48, 0x01, 0xd0, 0xff, 0xc9, 0x75, 0xe3, 0xc3});
  std::copy(longLoop.begin(), longLoop.end(), text.begin() + (kLongLoop - kText));
  const std::vector<std::uint8_t> storeLoop =
      loopCode({0x31, 0xc0, 0x48, 0x89, 0x44, 0x24, 0xf8, 0xff, 0xc9, 0x75, 0xf7, 0xc3});
  std::copy(storeLoop.begin(), storeLoop.end(), text.begin() + (kStoreLoop - kText));
  return text;
}

enum class Raw { Step, Counted, Free, BlockHooked };

// One bare Unicorn engine opened as the machine opens its engines, with its own copy of the guest
// text and a stack; `reset` puts the task at the loop with the exit stub as its return address.
// `Lean`: exits enabled with none set, as the machine's engines are (sim/Engines.cpp): without,
// Unicorn 2.0.1 honours each start's `until` address and refills a TLB entry at every step (201
// fills in 200 steps under gdb, 1 with exits enabled).
enum class Stepping { Default, Lean };
class RawEngine {
public:
  explicit RawEngine(Stepping stepping = Stepping::Default) {
    const std::vector<std::uint8_t> text = guestText();
    arch::openUnicorn(UC_ARCH_X86, UC_MODE_64, &uc);
    if (stepping == Stepping::Lean)
      uc_ctl_exits_enable(uc);
    mem_ = static_cast<std::uint8_t *>(std::aligned_alloc(4096, text.size()));
    std::memcpy(mem_, text.data(), text.size());
    uc_mem_map_ptr(uc, kText, text.size(), UC_PROT_READ | UC_PROT_EXEC, mem_);
    stack_ = static_cast<std::uint8_t *>(std::aligned_alloc(4096, 0x4000));
    uc_mem_map_ptr(uc, kStack, 0x4000, UC_PROT_READ | UC_PROT_WRITE, stack_);
  }
  RawEngine(const RawEngine &) = delete;
  RawEngine &operator=(const RawEngine &) = delete;
  ~RawEngine() {
    uc_close(uc);
    std::free(mem_);
    std::free(stack_);
  }
  void reset(Loop loop = Loop::Tight) {
    std::uint64_t rsp = kStack + 0x3ff0, ret = kHcExit;
    uc_mem_write(uc, rsp, &ret, sizeof ret);
    uc_reg_write(uc, UC_X86_REG_RSP, &rsp);
    rip = entryOf(loop);
  }
  // One instruction, as any stepping loop must: uc_emu_start with count 1, then read rip.
  void step() {
    uc_emu_start(uc, rip, 0x8000000000000001ull, 0, 1);
    uc_reg_read(uc, UC_X86_REG_RIP, &rip);
  }

  uc_engine *uc = nullptr;
  std::uint64_t rip = kLoop;

private:
  static constexpr std::uint64_t kStack = 0xffffffffc0000000ull;
  std::uint8_t *mem_ = nullptr, *stack_ = nullptr;
};

// A yardstick for every-instruction mode: bare Unicorn single-stepping the same tasks, one engine
// running them one after another or one engine per CPU in turn, one instruction each (each its
// own copy of the code and stack, as the machine's CPUs have: `rr` measures what switching
// engines at every instruction costs Unicorn itself). `runOnce` runs `tasks` tasks' worth and adds
// its thread-CPU time: the benchmark runs it between the machine's runs, so both are measured
// through the same drift of this machine's speed.
class Yardstick {
public:
  Yardstick(unsigned engines, bool rr, Stepping stepping) : rr_(rr) {
    for (unsigned i = 0; i < engines; ++i)
      es_.emplace_back(stepping);
  }
  void runOnce(unsigned tasks) {
    const double start = threadSeconds();
    if (!rr_) {
      RawEngine &e = es_.front();
      for (unsigned t = 0; t < tasks; ++t) {
        e.reset();
        while (e.rip != kHcExit) {
          e.step();
          ++instructions_;
        }
      }
    } else {
      for (RawEngine &e : es_)
        e.reset();
      for (unsigned running = 1; running > 0;) {
        running = 0;
        for (RawEngine &e : es_) {
          if (e.rip == kHcExit)
            continue;
          e.step();
          ++instructions_;
          ++running;
        }
      }
    }
    seconds_ += threadSeconds() - start;
  }
  double rate() const { return static_cast<double>(instructions_) / seconds_; }
  double seconds() const { return seconds_; }

private:
  bool rr_;
  std::deque<RawEngine> es_; // engines are neither copied nor moved
  std::uint64_t instructions_ = 0;
  double seconds_ = 0;
};

void noBlock(uc_engine *, std::uint64_t, std::uint32_t, void *) {}

// Raw Unicorn: one engine, the same code, each task one uc_emu_start until it returns into the
// exit stub: with the task's instruction count (Counted), with no count (Free), or with no count
// and one empty block hook (BlockHooked). `runOnce` runs `tasks` tasks and adds its thread-CPU
// time: fast mode's benchmarks run it between the machine's runs, as every-instruction mode's
// yardsticks are run.
class RawRuns {
public:
  RawRuns(Raw how, Loop loop) : how_(how), loop_(loop) {
    uc_hook hook;
    // One empty block hook: what fast mode's runs by blocks cannot avoid.
    if (how == Raw::BlockHooked)
      uc_hook_add(e_.uc, &hook, UC_HOOK_BLOCK, reinterpret_cast<void *>(&noBlock), nullptr, 1, 0);
  }
  // False when a run did not reach the exit stub.
  bool runOnce(unsigned tasks) {
    const std::uint64_t perTask = instructionsOf(loop_) - 1; // not the exit stub's int3
    const double start = threadSeconds();
    for (unsigned t = 0; t < tasks; ++t) {
      e_.reset(loop_);
      // Up to the exit stub's int3, which ends the run (no interrupt hook: an exception).
      uc_emu_start(e_.uc, e_.rip, 0x8000000000000001ull, 0, how_ == Raw::Counted ? perTask : 0);
      uc_reg_read(e_.uc, UC_X86_REG_RIP, &e_.rip);
      if (e_.rip != kHcExit && e_.rip != kHcExit + 1)
        return false;
      instructions_ += perTask;
    }
    seconds_ += threadSeconds() - start;
    return true;
  }
  double rate() const { return static_cast<double>(instructions_) / seconds_; }
  double seconds() const { return seconds_; }

private:
  Raw how_;
  Loop loop_;
  RawEngine e_;
  std::uint64_t instructions_ = 0;
  double seconds_ = 0;
};

// Half a second of single-stepping (a Yardstick, the tight loop) or of one way of RawRuns.
double rawRate(Raw how, Loop loop) {
  if (how == Raw::Step) {
    Yardstick steps(1, false, Stepping::Default);
    do
      steps.runOnce(1);
    while (steps.seconds() < 0.5);
    return steps.rate();
  }
  RawRuns runs(how, loop);
  do
    if (!runs.runOnce(1))
      return 0; // the benchmarks report a zero rate: the run did not reach the exit stub
  while (runs.seconds() < 0.5);
  return runs.rate();
}

// Each measured once per process, when first asked for.
double rawRateOnce(Raw how, Loop loop) {
  static double rates[4][3] = {};
  double &rate = rates[static_cast<int>(how)][static_cast<int>(loop)];
  if (rate == 0)
    rate = rawRate(how, loop);
  return rate;
}
double rawStepRate() { return rawRateOnce(Raw::Step, Loop::Tight); }

void BM_RawUnicorn(benchmark::State &state, Raw how, Loop loop) {
  double rate = 0;
  for (auto _ : state)
    rate = rawRateOnce(how, loop);
  if (rate == 0)
    state.SkipWithError("the raw run did not reach the exit stub");
  state.counters["instr/s"] = rate;
}
// One row per way and loop, each measured once (half a second).
#define FTSIM_RAW_ROW(name, how, loop)                                                             \
  BENCHMARK_CAPTURE(BM_RawUnicorn, name, how, loop)->Iterations(1)->Unit(benchmark::kMillisecond)
FTSIM_RAW_ROW(single_step, Raw::Step, Loop::Tight);
FTSIM_RAW_ROW(counted_run, Raw::Counted, Loop::Tight);
FTSIM_RAW_ROW(free_run, Raw::Free, Loop::Tight);
FTSIM_RAW_ROW(block_hooked_run, Raw::BlockHooked, Loop::Tight);
FTSIM_RAW_ROW(free_run_long_blocks, Raw::Free, Loop::Long);
FTSIM_RAW_ROW(block_hooked_run_long_blocks, Raw::BlockHooked, Loop::Long);
FTSIM_RAW_ROW(free_run_stores, Raw::Free, Loop::Stores);

// What instrumentation costs Unicorn's translation. An exhaustive search mostly steps code whose
// translations the machine has just removed (a patch store, a stale byte, a restore), so most of
// its time is translation (sim/README.md, "Where an exhaustive search's time goes"). Each
// iteration removes the translation of a two-instruction block (add, mov, then the text's int3)
// and runs it again, alternately in an engine without hooks (a free run to the int3) and in one
// instrumented as the machine's engines are: `count` starts it with count 1 (Unicorn's
// per-instruction count hook), `code_hook` adds one code hook over the block and runs freely (a
// lone hook, which Unicorn 2.0.1 calls directly from translated code; the machine's fast mode adds
// a second, idle one to keep Unicorn's generic helper: sim/README.md, "One code hook").
// `vs_unhooked` = hooked time / unhooked time, both measured in alternating slices of the same run.
enum class Instrumented { Count, CodeHook };
void noCode(uc_engine *, std::uint64_t, std::uint32_t, void *) {}

void BM_Retranslation(benchmark::State &state, Instrumented how) {
  constexpr std::uint64_t kBlock = kText + 0x80;
  const std::uint8_t block[] = {0x48, 0x01, 0xc8, 0x48, 0x89, 0xc2}; // add %rcx,%rax; mov %rax,%rdx
  RawEngine bare, hooked;
  for (RawEngine *e : {&bare, &hooked}) {
    uc_mem_write(e->uc, kBlock, block, sizeof block);
    uc_ctl_exits_enable(e->uc);
  }
  uc_hook h;
  if (how == Instrumented::CodeHook)
    uc_hook_add(hooked.uc, &h, UC_HOOK_CODE, reinterpret_cast<void *>(&noCode), nullptr, kBlock,
                kBlock + sizeof block);
  const std::size_t count = how == Instrumented::Count ? 1 : 0;
  double bareSeconds = 0, hookedSeconds = 0;
  std::uint64_t runs = 0;
  bool ok = true;
  for (auto _ : state) {
    const double t0 = threadSeconds();
    for (int i = 0; i < 200; ++i) {
      uc_ctl_remove_cache(bare.uc, kBlock, kBlock + sizeof block + 1);
      ok &= uc_emu_start(bare.uc, kBlock, 0, 0, 0) == UC_ERR_EXCEPTION;
    }
    const double t1 = threadSeconds();
    for (int i = 0; i < 200; ++i) {
      uc_ctl_remove_cache(hooked.uc, kBlock, kBlock + sizeof block + 1);
      ok &= uc_emu_start(hooked.uc, kBlock, 0, 0, count) == (count ? UC_ERR_OK : UC_ERR_EXCEPTION);
    }
    bareSeconds += t1 - t0;
    hookedSeconds += threadSeconds() - t1;
    runs += 200;
  }
  if (!ok)
    state.SkipWithError("a run did not end as expected (the int3, or after one instruction)");
  state.counters["unhooked_ns"] = bareSeconds / static_cast<double>(runs) * 1e9;
  state.counters["hooked_ns"] = hookedSeconds / static_cast<double>(runs) * 1e9;
  state.counters["vs_unhooked"] = hookedSeconds / bareSeconds;
}
BENCHMARK_CAPTURE(BM_Retranslation, count, Instrumented::Count)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Retranslation, code_hook, Instrumented::CodeHook)->MinTime(1.0);

// The simulator: `cpus` CPUs with one task each, round-robin at instruction granularity (every
// instruction one event: enabled-set computation, a scheduling decision, a logged EventRecord,
// site/freed/stale checks), or in fast mode with the given quantum. `inOrder`: the scheduler
// answers 0 (the first enabled event) instead, so one CPU runs to its end before the next: as
// many events, decisions and log records as round robin, but no switch of Unicorn engine between
// events.
void runSim(benchmark::State &state, unsigned quantum, bool inOrder = false, bool byBlocks = false,
            Loop loop = Loop::Tight) {
  const auto cpus = static_cast<unsigned>(state.range(0));
  sim::MachineConfig config;
  config.cpus = cpus;
  config.quantum = quantum;
  config.traceFlagSteps = byBlocks;
  sim::Machine m(arch::archByName("x86_64"), config);
  m.mapText(kText, guestText());
  m.bindHypercall(sim::GuestHypercall::Exit, kHcExit);
  for (unsigned c = 0; c < cpus; ++c)
    m.addTask({"loop", c, entryOf(loop), 0});
  sim::Snapshot start = m.snapshot();
  std::uint64_t instructions = 0;
  double seconds = 0;
  // Every-instruction mode's yardsticks run the same tasks after each of the machine's runs: this
  // machine's speed drifts within seconds, and rates measured a minute apart are no yardstick.
  Yardstick raw(1, false, Stepping::Default), rawRr(cpus, true, Stepping::Default);
  Yardstick lean(1, false, Stepping::Lean), leanRr(cpus, true, Stepping::Lean);
  // Fast mode's: bare Unicorn's runs of the same tasks, likewise after each of the machine's.
  RawRuns counted(Raw::Counted, loop), free(Raw::Free, loop), hooked(Raw::BlockHooked, loop);
  bool rawRunsEnded = true;
  for (auto _ : state) {
    state.PauseTiming();
    m.restore(start);
    state.ResumeTiming();
    const double t0 = threadSeconds();
    sim::RoundRobinScheduler rr;
    sim::FunctionScheduler first(
        [](const sim::Machine &, const sim::DecisionPoint &) { return std::uint32_t{0}; });
    m.run(inOrder ? static_cast<sim::Scheduler &>(first) : rr);
    seconds += threadSeconds() - t0;
    instructions += instructionsOf(loop) * cpus;
    state.PauseTiming();
    if (quantum == 1)
      for (Yardstick *y : {&raw, &rawRr, &lean, &leanRr})
        y->runOnce(cpus);
    else
      for (RawRuns *r : {&counted, &free, &hooked})
        if (r != &counted || loop == Loop::Tight)
          rawRunsEnded &= r->runOnce(cpus);
    state.ResumeTiming();
  }
  if (!rawRunsEnded)
    state.SkipWithError("a raw run did not reach the exit stub");
  for (unsigned t = 0; t < cpus; ++t)
    if (m.task(static_cast<int>(t)).state != sim::TaskState::Exited ||
        m.task(static_cast<int>(t)).result != resultOf(loop))
      state.SkipWithError("a task did not finish with the expected checksum");
  if (quantum == 1 && m.steppedInstructions() != instructionsOf(loop) * cpus)
    state.SkipWithError("instruction count differs from the guest's");
  const double rate = static_cast<double>(instructions) / seconds;
  state.counters["instr/s"] = rate;
  const double rawSteps = quantum == 1 ? raw.rate() : rawStepRate();
  state.counters["raw_instr/s"] = rawSteps;
  state.counters["vs_raw"] = rate / rawSteps;
  if (quantum == 1) {
    state.counters["raw_rr_instr/s"] = rawRr.rate();
    state.counters["vs_raw_rr"] = rate / rawRr.rate();
    state.counters["lean_instr/s"] = lean.rate();
    state.counters["lean_rr_instr/s"] = leanRr.rate();
    state.counters["vs_lean"] = rate / lean.rate();
    state.counters["vs_lean_rr"] = rate / leanRr.rate();
  }
  if (quantum > 1) {
    if (loop == Loop::Tight)
      state.counters["vs_counted"] = rate / counted.rate();
    state.counters["free_instr/s"] = free.rate();
    state.counters["vs_free"] = rate / free.rate();
    state.counters["vs_block_hooked"] = rate / hooked.rate();
  }
}

void BM_SimInstructionGranular(benchmark::State &state) { runSim(state, 1); }
void BM_SimInstructionGranularInOrder(benchmark::State &state) { runSim(state, 1, true); }
void BM_SimFastMode(benchmark::State &state) { runSim(state, 10000); }
void BM_SimFastModeByBlocks(benchmark::State &state) { runSim(state, 10000, false, true); }
void BM_SimFastModeByBlocksLongBlocks(benchmark::State &state) {
  runSim(state, 10000, false, true, Loop::Long);
}

BENCHMARK(BM_SimInstructionGranular)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimInstructionGranularInOrder)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimFastMode)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimFastModeByBlocks)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimFastModeByBlocksLongBlocks)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
