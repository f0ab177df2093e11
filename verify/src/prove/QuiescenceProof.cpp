// Bounded model checking of trampoline freeing.
//
// The model. Tasks t < N, CPUs c < M. A task is OnCpu (on CPU cpu[t]), Preempted (involuntarily
// off its CPU: NOT quiescent), Blocked (it called schedule(): quiescent) or User (quiescent). A
// task may be inside the trampoline (it called it from the patched site and has not returned).
// Events, one per step:
//   enter t     OnCpu, outside, site still calls the trampoline       -> inside
//   leave t     OnCpu, inside                                          -> outside
//   preempt t   OnCpu (inside or not; only with preemption)            -> Preempted, CPU free
//   block t     OnCpu, outside (trampolines and tracer callbacks never sleep)  -> Blocked
//   user t      OnCpu, outside                                         -> User
//   resume t c  Preempted/Blocked/User, CPU c free                     -> OnCpu on c
//   unhook      the patcher makes the site stop calling the trampoline (once)
//   sync        the patcher starts waiting (after unhook): RCU-tasks records its holdouts (tasks
//               OnCpu or Preempted); schedule_on_each_cpu marks idle CPUs as switched
//   free        the patcher frees the trampoline when its strategy allows
//   idle        nothing happens (lets shorter schedules fit the bound)
// A task leaving a CPU (preempt/block/user) marks that CPU switched; block/user take a task off
// the holdout list; preemption does not (Documentation/RCU/Design/Tasks: "a task that has been
// preempted ... might be in a trampoline"). The property: free never happens while a task is
// inside.

#include "ftsim/verify/prove/QuiescenceProof.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>
#include <z3++.h>

#include <chrono>

namespace ftsim::verify {
namespace {

enum Ev { Enter, Leave, Preempt, Block, User, Resume, Unhook, Sync, Free, Idle, EvCount };
enum St { OnCpu, Preempted, Blocked, InUser };

const char *const kEvNames[] = {"enter",  "leave",  "preempt", "block", "user",
                                "resume", "unhook", "sync",    "free",  "idle"};

} // namespace

std::string_view freeStrategyName(FreeStrategy s) {
  switch (s) {
  case FreeStrategy::Immediate:
    return "immediate";
  case FreeStrategy::SchedSync:
    return "sched-sync";
  case FreeStrategy::RcuTasks:
    return "rcu-tasks";
  }
  return "?";
}

FreeStrategy parseFreeStrategy(std::string_view name) {
  for (auto s : {FreeStrategy::Immediate, FreeStrategy::SchedSync, FreeStrategy::RcuTasks})
    if (freeStrategyName(s) == name)
      return s;
  fatal("unknown trampoline free strategy '{}' (known: immediate, sched-sync, rcu-tasks)", name);
}

ProofResult proveTrampolineFree(FreeStrategy strategy, const TaskModelBounds &b) {
  const auto started = std::chrono::steady_clock::now();
  if (b.tasks == 0 || b.cpus == 0 || b.steps == 0 || b.tasks > 8 || b.cpus > 8 || b.steps > 64)
    fatal("task model bounds out of range: tasks 1-8, cpus 1-8, steps 1-64");
  ProofResult r;
  r.name =
      fmt::format("trampoline free ({}, {}): no task is inside the trampoline when it is freed "
                  "({} tasks, {} CPUs, all schedules of up to {} events)",
                  freeStrategyName(strategy), b.preemption ? "preemptible" : "no preemption",
                  b.tasks, b.cpus, b.steps);
  z3::context c;
  z3::solver s(c);
  const unsigned N = b.tasks, M = b.cpus, K = b.steps;
  auto name = [](const char *v, unsigned k, unsigned i = 0) {
    return fmt::format("{}_{}_{}", v, k, i);
  };
  // State at step k (k = 0..K).
  std::vector<std::vector<z3::expr>> st(K + 1), cpu(K + 1), inside(K + 1), holdout(K + 1),
      switched(K + 1);
  std::vector<z3::expr> hooked, syncing, freed;
  for (unsigned k = 0; k <= K; ++k) {
    for (unsigned t = 0; t < N; ++t) {
      st[k].push_back(c.int_const(name("st", k, t).c_str()));
      cpu[k].push_back(c.int_const(name("cpu", k, t).c_str()));
      inside[k].push_back(c.bool_const(name("in", k, t).c_str()));
      holdout[k].push_back(c.bool_const(name("hold", k, t).c_str()));
      s.add(st[k][t] >= 0 && st[k][t] <= 3 && cpu[k][t] >= 0 && cpu[k][t] < static_cast<int>(M));
    }
    for (unsigned p = 0; p < M; ++p)
      switched[k].push_back(c.bool_const(name("sw", k, p).c_str()));
    hooked.push_back(c.bool_const(name("hooked", k).c_str()));
    syncing.push_back(c.bool_const(name("sync", k).c_str()));
    freed.push_back(c.bool_const(name("freed", k).c_str()));
    // At most one task on each CPU.
    for (unsigned t = 0; t < N; ++t)
      for (unsigned u = t + 1; u < N; ++u)
        s.add(!(st[k][t] == OnCpu && st[k][u] == OnCpu && cpu[k][t] == cpu[k][u]));
  }
  auto cpuBusy = [&](unsigned k, const z3::expr &p) {
    z3::expr_vector any(c);
    for (unsigned t = 0; t < N; ++t)
      any.push_back(st[k][t] == OnCpu && cpu[k][t] == p);
    return z3::mk_or(any);
  };
  // Initial state: task t on CPU t while CPUs last, the rest blocked; nobody inside; hooked.
  for (unsigned t = 0; t < N; ++t) {
    s.add(st[0][t] == (t < M ? OnCpu : Blocked) && cpu[0][t] == static_cast<int>(t % M));
    s.add(!inside[0][t] && !holdout[0][t]);
  }
  for (unsigned p = 0; p < M; ++p)
    s.add(!switched[0][p]);
  s.add(hooked[0] && !syncing[0] && !freed[0]);

  std::vector<z3::expr> ev, tk, cp;
  for (unsigned k = 0; k < K; ++k) {
    ev.push_back(c.int_const(name("ev", k).c_str()));
    tk.push_back(c.int_const(name("task", k).c_str()));
    cp.push_back(c.int_const(name("tocpu", k).c_str()));
    s.add(ev[k] >= 0 && ev[k] < EvCount && tk[k] >= 0 && tk[k] < static_cast<int>(N) &&
          cp[k] >= 0 && cp[k] < static_cast<int>(M));
    if (!b.preemption)
      s.add(ev[k] != Preempt);
    const unsigned n = k + 1;
    z3::expr_vector frame(c);
    for (unsigned t = 0; t < N; ++t) {
      const z3::expr me = tk[k] == static_cast<int>(t);
      const z3::expr onCpu = st[k][t] == OnCpu;
      // Guards of the events that name this task.
      s.add(z3::implies(me && ev[k] == Enter, onCpu && !inside[k][t] && hooked[k] && !freed[k]));
      s.add(z3::implies(me && ev[k] == Leave, onCpu && inside[k][t]));
      s.add(z3::implies(me && ev[k] == Preempt, onCpu));
      s.add(z3::implies(me && (ev[k] == Block || ev[k] == User), onCpu && !inside[k][t]));
      s.add(z3::implies(me && ev[k] == Resume, st[k][t] != OnCpu && !cpuBusy(k, cp[k])));
      // Effects.
      const z3::expr nextSt =
          z3::ite(me && ev[k] == Preempt, c.int_val(Preempted),
                  z3::ite(me && ev[k] == Block, c.int_val(Blocked),
                          z3::ite(me && ev[k] == User, c.int_val(InUser),
                                  z3::ite(me && ev[k] == Resume, c.int_val(OnCpu), st[k][t]))));
      s.add(st[n][t] == nextSt);
      s.add(cpu[n][t] == z3::ite(me && ev[k] == Resume, cp[k], cpu[k][t]));
      s.add(inside[n][t] ==
            z3::ite(me && ev[k] == Enter, c.bool_val(true),
                    z3::ite(me && ev[k] == Leave, c.bool_val(false), inside[k][t])));
      // RCU-tasks holdouts: set at the start of the wait for tasks not voluntarily off-CPU,
      // cleared by a voluntary context switch or user mode.
      s.add(holdout[n][t] == z3::ite(ev[k] == Sync, st[k][t] == OnCpu || st[k][t] == Preempted,
                                     z3::ite(me && (ev[k] == Block || ev[k] == User),
                                             c.bool_val(false), holdout[k][t])));
    }
    for (unsigned p = 0; p < M; ++p) {
      const z3::expr P = c.int_val(static_cast<int>(p));
      z3::expr_vector leaves(c);
      for (unsigned t = 0; t < N; ++t)
        leaves.push_back(tk[k] == static_cast<int>(t) && cpu[k][t] == P && st[k][t] == OnCpu &&
                         (ev[k] == Preempt || ev[k] == Block || ev[k] == User));
      // schedule_on_each_cpu: the work item runs once the CPU's current task leaves it, or at
      // once on an idle CPU.
      s.add(switched[n][p] ==
            z3::ite(ev[k] == Sync, !cpuBusy(k, P), switched[k][p] || z3::mk_or(leaves)));
    }
    // Patcher events.
    s.add(z3::implies(ev[k] == Unhook, hooked[k]));
    s.add(hooked[n] == (hooked[k] && ev[k] != Unhook));
    s.add(z3::implies(ev[k] == Sync, !hooked[k] && !syncing[k]));
    s.add(syncing[n] == (syncing[k] || ev[k] == Sync));
    z3::expr mayFree = !hooked[k] && !freed[k];
    z3::expr_vector allSwitched(c), noHoldouts(c);
    for (unsigned p = 0; p < M; ++p)
      allSwitched.push_back(switched[k][p]);
    for (unsigned t = 0; t < N; ++t)
      noHoldouts.push_back(!holdout[k][t]);
    switch (strategy) {
    case FreeStrategy::Immediate:
      break;
    case FreeStrategy::SchedSync:
      mayFree = mayFree && syncing[k] && z3::mk_and(allSwitched);
      break;
    case FreeStrategy::RcuTasks:
      mayFree = mayFree && syncing[k] && z3::mk_and(noHoldouts);
      break;
    }
    s.add(z3::implies(ev[k] == Free, mayFree));
    s.add(freed[n] == (freed[k] || ev[k] == Free));
  }
  // The negated property: at some step the trampoline is freed with a task inside.
  z3::expr_vector bad(c);
  for (unsigned k = 0; k <= K; ++k)
    for (unsigned t = 0; t < N; ++t)
      bad.push_back(freed[k] && inside[k][t]);
  s.add(z3::mk_or(bad));
  r.checks = 1;
  if (s.check() == z3::unsat) {
    r.holds = true;
  } else {
    const z3::model m = s.get_model();
    std::string timeline;
    for (unsigned k = 0; k < K; ++k) {
      const int e = m.eval(ev[k], true).get_numeral_int();
      if (e == Idle)
        continue;
      const int t = m.eval(tk[k], true).get_numeral_int();
      std::string line = kEvNames[e];
      if (e <= Resume)
        line += fmt::format(" task{}", t);
      if (e == Resume)
        line += fmt::format(" on cpu{}", m.eval(cp[k], true).get_numeral_int());
      if (e == Free) {
        for (unsigned u = 0; u < N; ++u)
          if (m.eval(inside[k][u], true).is_true())
            line += fmt::format(" while task{} is inside the trampoline ({})", u,
                                m.eval(st[k][u], true).get_numeral_int() == Preempted
                                    ? "preempted there"
                                    : "running there");
        timeline += (timeline.empty() ? "" : "; ") + line;
        break;
      }
      timeline += (timeline.empty() ? "" : "; ") + line;
    }
    r.holds = false;
    r.counterexample = timeline;
  }
  r.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return r;
}

} // namespace ftsim::verify
