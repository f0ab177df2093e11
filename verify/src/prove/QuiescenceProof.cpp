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

namespace {

// The model above as Z3 constraints over K steps: one variable per state component and step, one
// event per step, the guards and effects of each event, and the negated property.
class TaskModel {
public:
  TaskModel(z3::context &c, z3::solver &s, FreeStrategy strategy, const TaskModelBounds &b)
      : c_(c), s_(s), strategy_(strategy), b_(b), N(b.tasks), M(b.cpus), K(b.steps) {}

  void encode() {
    declareStates();
    initialState();
    for (unsigned k = 0; k < K; ++k)
      step(k);
    negatedProperty();
  }

  // The schedule of a model of the negated property, up to the bad free.
  std::string counterexample(const z3::model &m) const;

private:
  static std::string name(const char *v, unsigned k, unsigned i = 0) {
    return fmt::format("{}_{}_{}", v, k, i);
  }

  // State at step k (k = 0..K).
  void declareStates() {
    for (auto *v : {&st, &cpu, &inside, &holdout, &switched})
      v->resize(K + 1);
    for (unsigned k = 0; k <= K; ++k) {
      for (unsigned t = 0; t < N; ++t) {
        st[k].push_back(c_.int_const(name("st", k, t).c_str()));
        cpu[k].push_back(c_.int_const(name("cpu", k, t).c_str()));
        inside[k].push_back(c_.bool_const(name("in", k, t).c_str()));
        holdout[k].push_back(c_.bool_const(name("hold", k, t).c_str()));
        s_.add(st[k][t] >= 0 && st[k][t] <= 3 && cpu[k][t] >= 0 && cpu[k][t] < static_cast<int>(M));
      }
      for (unsigned p = 0; p < M; ++p)
        switched[k].push_back(c_.bool_const(name("sw", k, p).c_str()));
      hooked.push_back(c_.bool_const(name("hooked", k).c_str()));
      syncing.push_back(c_.bool_const(name("sync", k).c_str()));
      freed.push_back(c_.bool_const(name("freed", k).c_str()));
      // At most one task on each CPU.
      for (unsigned t = 0; t < N; ++t)
        for (unsigned u = t + 1; u < N; ++u)
          s_.add(!(st[k][t] == OnCpu && st[k][u] == OnCpu && cpu[k][t] == cpu[k][u]));
    }
  }

  z3::expr cpuBusy(unsigned k, const z3::expr &p) const {
    z3::expr_vector any(c_);
    for (unsigned t = 0; t < N; ++t)
      any.push_back(st[k][t] == OnCpu && cpu[k][t] == p);
    return z3::mk_or(any);
  }

  // Task t on CPU t while CPUs last, the rest blocked; nobody inside; hooked.
  void initialState() {
    for (unsigned t = 0; t < N; ++t) {
      s_.add(st[0][t] == (t < M ? OnCpu : Blocked) && cpu[0][t] == static_cast<int>(t % M));
      s_.add(!inside[0][t] && !holdout[0][t]);
    }
    for (unsigned p = 0; p < M; ++p)
      s_.add(!switched[0][p]);
    s_.add(hooked[0] && !syncing[0] && !freed[0]);
  }

  void step(unsigned k) {
    ev.push_back(c_.int_const(name("ev", k).c_str()));
    tk.push_back(c_.int_const(name("task", k).c_str()));
    cp.push_back(c_.int_const(name("tocpu", k).c_str()));
    s_.add(ev[k] >= 0 && ev[k] < EvCount && tk[k] >= 0 && tk[k] < static_cast<int>(N) &&
           cp[k] >= 0 && cp[k] < static_cast<int>(M));
    if (!b_.preemption)
      s_.add(ev[k] != Preempt);
    for (unsigned t = 0; t < N; ++t)
      taskStep(k, t);
    for (unsigned p = 0; p < M; ++p)
      cpuStep(k, p);
    patcherStep(k);
  }

  void taskStep(unsigned k, unsigned t) {
    const unsigned n = k + 1;
    const z3::expr me = tk[k] == static_cast<int>(t);
    const z3::expr onCpu = st[k][t] == OnCpu;
    // Guards of the events that name this task.
    s_.add(z3::implies(me && ev[k] == Enter, onCpu && !inside[k][t] && hooked[k] && !freed[k]));
    s_.add(z3::implies(me && ev[k] == Leave, onCpu && inside[k][t]));
    s_.add(z3::implies(me && ev[k] == Preempt, onCpu));
    s_.add(z3::implies(me && (ev[k] == Block || ev[k] == User), onCpu && !inside[k][t]));
    s_.add(z3::implies(me && ev[k] == Resume, st[k][t] != OnCpu && !cpuBusy(k, cp[k])));
    // Effects.
    const z3::expr nextSt =
        z3::ite(me && ev[k] == Preempt, c_.int_val(Preempted),
                z3::ite(me && ev[k] == Block, c_.int_val(Blocked),
                        z3::ite(me && ev[k] == User, c_.int_val(InUser),
                                z3::ite(me && ev[k] == Resume, c_.int_val(OnCpu), st[k][t]))));
    s_.add(st[n][t] == nextSt);
    s_.add(cpu[n][t] == z3::ite(me && ev[k] == Resume, cp[k], cpu[k][t]));
    s_.add(inside[n][t] ==
           z3::ite(me && ev[k] == Enter, c_.bool_val(true),
                   z3::ite(me && ev[k] == Leave, c_.bool_val(false), inside[k][t])));
    // RCU-tasks holdouts: set at the start of the wait for tasks not voluntarily off-CPU,
    // cleared by a voluntary context switch or user mode.
    s_.add(holdout[n][t] == z3::ite(ev[k] == Sync, st[k][t] == OnCpu || st[k][t] == Preempted,
                                    z3::ite(me && (ev[k] == Block || ev[k] == User),
                                            c_.bool_val(false), holdout[k][t])));
  }

  void cpuStep(unsigned k, unsigned p) {
    const z3::expr P = c_.int_val(static_cast<int>(p));
    z3::expr_vector leaves(c_);
    for (unsigned t = 0; t < N; ++t)
      leaves.push_back(tk[k] == static_cast<int>(t) && cpu[k][t] == P && st[k][t] == OnCpu &&
                       (ev[k] == Preempt || ev[k] == Block || ev[k] == User));
    // schedule_on_each_cpu: the work item runs once the CPU's current task leaves it, or at
    // once on an idle CPU.
    s_.add(switched[k + 1][p] ==
           z3::ite(ev[k] == Sync, !cpuBusy(k, P), switched[k][p] || z3::mk_or(leaves)));
  }

  void patcherStep(unsigned k) {
    const unsigned n = k + 1;
    s_.add(z3::implies(ev[k] == Unhook, hooked[k]));
    s_.add(hooked[n] == (hooked[k] && ev[k] != Unhook));
    s_.add(z3::implies(ev[k] == Sync, !hooked[k] && !syncing[k]));
    s_.add(syncing[n] == (syncing[k] || ev[k] == Sync));
    const z3::expr may = mayFree(k);
    s_.add(z3::implies(ev[k] == Free, may));
    s_.add(freed[n] == (freed[k] || ev[k] == Free));
  }

  // When the patcher's strategy lets it free the trampoline at step k.
  z3::expr mayFree(unsigned k) const {
    z3::expr may = !hooked[k] && !freed[k];
    z3::expr_vector allSwitched(c_), noHoldouts(c_);
    for (unsigned p = 0; p < M; ++p)
      allSwitched.push_back(switched[k][p]);
    for (unsigned t = 0; t < N; ++t)
      noHoldouts.push_back(!holdout[k][t]);
    switch (strategy_) {
    case FreeStrategy::Immediate:
      break;
    case FreeStrategy::SchedSync:
      may = may && syncing[k] && z3::mk_and(allSwitched);
      break;
    case FreeStrategy::RcuTasks:
      may = may && syncing[k] && z3::mk_and(noHoldouts);
      break;
    }
    return may;
  }

  // At some step the trampoline is freed with a task inside.
  void negatedProperty() {
    z3::expr_vector bad(c_);
    for (unsigned k = 0; k <= K; ++k)
      for (unsigned t = 0; t < N; ++t)
        bad.push_back(freed[k] && inside[k][t]);
    s_.add(z3::mk_or(bad));
  }

  z3::context &c_;
  z3::solver &s_;
  const FreeStrategy strategy_;
  const TaskModelBounds &b_;
  const unsigned N, M, K;
  std::vector<std::vector<z3::expr>> st, cpu, inside, holdout, switched;
  std::vector<z3::expr> hooked, syncing, freed;
  std::vector<z3::expr> ev, tk, cp; // the event of step k, its task, its CPU (resume)
};

std::string TaskModel::counterexample(const z3::model &m) const {
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
          line +=
              fmt::format(" while task{} is inside the trampoline ({})", u,
                          m.eval(st[k][u], true).get_numeral_int() == Preempted ? "preempted there"
                                                                                : "running there");
      timeline += (timeline.empty() ? "" : "; ") + line;
      break;
    }
    timeline += (timeline.empty() ? "" : "; ") + line;
  }
  return timeline;
}

} // namespace

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
  TaskModel model(c, s, strategy, b);
  model.encode();
  r.checks = 1;
  if (s.check() == z3::unsat) {
    r.holds = true;
  } else {
    r.holds = false;
    r.counterexample = model.counterexample(s.get_model());
  }
  r.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return r;
}

} // namespace ftsim::verify
