// Part of ftsim_bench_sim: the two fixed costs of one execution, each next to a yardstick for the
// mechanism it replaced, measured in the same process (rates per CPU second of the process, so
// a helper thread's time counts; wall-clock rates too, where waking another thread shows):
//  - BM_PatcherStores: patcher stores per second on a machine (each store hands control from the
//    patcher to run() and back: a coroutine switch on the calling thread), next to
//    BM_ThreadBatonHandOvers: bare hand-overs per second of the previous mechanism (a host thread
//    per execution passing a baton through a mutex and a condition variable) rebuilt here without
//    any machine work: an upper bound of what the machine could do with it.
//  - BM_Restore: restore() of a site scenario's machine after its patcher wrote a site. `dirty`:
//    the snapshot the machine last matched (only the changed text lines are rewritten); `full`: two
//    snapshots restored in turn, so each restore compares every line of the 16 KiB text and the
//    1 MiB trampoline area in every view, as every restore did before.
//  - BM_ExecutionRenewing: whole executions (restore, the patcher rewrites a line every CPU runs,
//    every CPU runs its task to the end), with the engines renewed every N restores
//    (MachineConfig::restoresPerEngine; sim/Engines.cpp): the price of bounding Unicorn's code
//    buffer, against N = 0 (never renewed) in the same process (vs_never).

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace ftsim;

constexpr std::uint64_t kText = 0xffffffff81000000ull;
constexpr unsigned kStoresPerExecution = 256;

double processSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void rates(benchmark::State &state, double count, double cpu, double wall) {
  state.counters["per_cpu_s"] = count / cpu;
  state.counters["per_wall_s"] = count / wall;
}

// Text with the exit hypercall stub (int3; ret) at its start, ud2 elsewhere.
std::vector<std::uint8_t> text() {
  std::vector<std::uint8_t> t(0x4000, 0x0f);
  t[0] = 0xcc;
  t[1] = 0xc3;
  return t;
}

sim::FunctionScheduler patcherOnly() {
  // The patcher's Store is listed after every CPU's events.
  return sim::FunctionScheduler(
      [](const sim::Machine &, const sim::DecisionPoint &p) { return p.options - 1; });
}

void BM_PatcherStores(benchmark::State &state) {
  sim::MachineConfig config;
  config.cpus = 1;
  config.storeModel = sim::StoreModel::Byte;
  sim::Machine m(arch::archByName("x86_64"), config);
  m.mapText(kText, text());
  const sim::Snapshot start = m.snapshot();
  const std::vector<std::uint8_t> bytes(kStoresPerExecution, 0x90);
  std::uint64_t stores = 0;
  const double cpu0 = processSeconds(), wall0 = wallSeconds();
  for (auto _ : state) {
    m.restore(start);
    m.startPatcher([&](arch::MachinePort &port) { port.writeText(kText + 0x1000, bytes); });
    sim::FunctionScheduler sched = patcherOnly();
    m.run(sched);
    stores += m.storesDone();
  }
  if (stores != kStoresPerExecution * static_cast<std::uint64_t>(state.iterations()))
    state.SkipWithError("the patcher did not make its stores");
  rates(state, static_cast<double>(stores), processSeconds() - cpu0, wallSeconds() - wall0);
}
BENCHMARK(BM_PatcherStores)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// The previous mechanism, bare: per execution a host thread that waits for the baton, then hands
// it back `kStoresPerExecution` times, as the patcher did at each store.
class ThreadBaton {
public:
  void execution() {
    done_ = false;
    std::thread patcher([this] {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return patcherTurn_; });
      for (unsigned i = 0; i < kStoresPerExecution; ++i) {
        patcherTurn_ = false;
        cv_.notify_all();
        cv_.wait(lock, [&] { return patcherTurn_; });
      }
      done_ = true;
      patcherTurn_ = false;
      cv_.notify_all();
    });
    for (;;) {
      std::unique_lock lock(mutex_);
      patcherTurn_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !patcherTurn_; });
      if (done_)
        break;
      ++handOvers_;
    }
    patcher.join();
  }
  std::uint64_t handOvers() const { return handOvers_; }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool patcherTurn_ = false;
  bool done_ = false;
  std::uint64_t handOvers_ = 0;
};

void BM_ThreadBatonHandOvers(benchmark::State &state) {
  ThreadBaton baton;
  const double cpu0 = processSeconds(), wall0 = wallSeconds();
  for (auto _ : state)
    baton.execution();
  rates(state, static_cast<double>(baton.handOvers()), processSeconds() - cpu0,
        wallSeconds() - wall0);
}
BENCHMARK(BM_ThreadBatonHandOvers)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// A site scenario's machine: 16 KiB of text, the 1 MiB trampoline area, `cpus` CPUs with a task
// each (a stack each); the patcher stores 5 bytes of text, one at a time.
void BM_Restore(benchmark::State &state, bool full) {
  const auto cpus = static_cast<unsigned>(state.range(0));
  sim::MachineConfig config;
  config.cpus = cpus;
  config.storeModel = sim::StoreModel::Byte;
  config.fetchModel = &sim::fetchModelByName("stale");
  sim::Machine m(arch::archByName("x86_64"), config);
  m.mapText(kText, text());
  m.bindHypercall(sim::GuestHypercall::Exit, kText);
  for (unsigned c = 0; c < cpus; ++c)
    m.addTask({"task", c, kText, 0});
  const sim::Snapshot a = m.snapshot();
  const sim::Snapshot b = m.snapshot();
  const std::vector<std::uint8_t> call = {0xe8, 0x37, 0x2e, 0x00, 0x00};
  std::uint64_t restores = 0;
  double cpu = 0, wall = 0;
  for (auto _ : state) {
    m.startPatcher([&](arch::MachinePort &port) { port.writeText(kText + 0x104, call); });
    sim::FunctionScheduler sched = patcherOnly();
    m.run(sched, call.size());
    const double cpu0 = processSeconds(), wall0 = wallSeconds();
    m.restore(full && restores % 2 ? b : a);
    cpu += processSeconds() - cpu0;
    wall += wallSeconds() - wall0;
    ++restores;
  }
  rates(state, static_cast<double>(restores), cpu, wall);
}
// Text for BM_ExecutionRenewing: the exit stub at the start; at +0x40 a task that runs a
// 10-iteration loop whose body is 4 one-byte nops at +0x45 (which the patcher rewrites), then
// returns to the exit stub.
std::vector<std::uint8_t> loopText() {
  std::vector<std::uint8_t> t = text();
  const std::uint8_t task[] = {0xb9, 0x0a, 0x00, 0x00, 0x00, // mov ecx, 10
                               0x90, 0x90, 0x90, 0x90,       // nop x4 (rewritten)
                               0xff, 0xc9,                   // dec ecx
                               0x75, 0xf8,                   // jnz +0x45
                               0xc3};                        // ret (to the exit stub)
  std::copy(std::begin(task), std::end(task), t.begin() + 0x40);
  return t;
}

double neverRenewedRate = 0; // BM_ExecutionRenewing/0's executions per CPU second

void BM_ExecutionRenewing(benchmark::State &state) {
  sim::MachineConfig config;
  config.cpus = 3;
  config.storeModel = sim::StoreModel::Byte;
  config.fetchModel = &sim::fetchModelByName("atomic");
  config.restoresPerEngine = static_cast<std::uint32_t>(state.range(0));
  sim::Machine m(arch::archByName("x86_64"), config);
  m.mapText(kText, loopText());
  m.bindHypercall(sim::GuestHypercall::Exit, kText);
  for (unsigned c = 0; c < config.cpus; ++c)
    m.addTask({"task", c, kText + 0x40, 0});
  const sim::Snapshot start = m.snapshot();
  const std::vector<std::uint8_t> twoByteNops = {0x66, 0x90, 0x66, 0x90};
  std::uint64_t executions = 0;
  const double cpu0 = processSeconds(), wall0 = wallSeconds();
  for (auto _ : state) {
    m.restore(start);
    m.startPatcher([&](arch::MachinePort &port) { port.writeText(kText + 0x45, twoByteNops); });
    sim::RoundRobinScheduler rr;
    if (m.run(rr).status != sim::RunResult::Status::Completed) {
      state.SkipWithError("an execution did not complete");
      return;
    }
    ++executions;
  }
  const double cpu = processSeconds() - cpu0;
  rates(state, static_cast<double>(executions), cpu, wallSeconds() - wall0);
  state.counters["renewals"] = static_cast<double>(m.engineRenewals());
  if (state.range(0) == 0)
    neverRenewedRate = static_cast<double>(executions) / cpu;
  else if (neverRenewedRate > 0)
    state.counters["vs_never"] = static_cast<double>(executions) / cpu / neverRenewedRate;
}
// N = 0 first: the baseline of the others.
BENCHMARK(BM_ExecutionRenewing)->Arg(0)->Arg(4096)->Arg(256)->Arg(16)->MinTime(2.0);

BENCHMARK_CAPTURE(BM_Restore, dirty, false)->Arg(2)->Arg(3)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Restore, full, true)->Arg(2)->Arg(3)->Unit(benchmark::kMicrosecond);

} // namespace
