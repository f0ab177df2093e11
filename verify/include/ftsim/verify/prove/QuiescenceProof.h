#pragma once
// When may a dynamic trampoline be freed? A bounded model of tasks and CPUs, checked by Z3 (bounded
// model checking, negate and expect unsat): the property is that when the trampoline is freed no
// task is inside it, running or preempted. See the slides ("Problems with Dynamic Trampolines",
// call_rcu_tasks()) and f3bea49115b2 -> 0598e4f08e3d.

#include "ftsim/verify/prove/Proofs.h"

namespace ftsim::verify {

enum class FreeStrategy {
  Immediate, // free as soon as the site no longer calls the trampoline
  SchedSync, // schedule_on_each_cpu(): free once every CPU has context-switched since the unhook
  RcuTasks,  // synchronize_rcu_tasks(): free once every task has been quiescent since the unhook
};
std::string_view freeStrategyName(FreeStrategy s);
// FatalError naming the known strategies.
FreeStrategy parseFreeStrategy(std::string_view name);

struct TaskModelBounds {
  unsigned tasks = 3;
  unsigned cpus = 2;
  unsigned steps = 14;
  bool preemption = true;
};

// Holds when no schedule of at most `steps` events of the bounded task model frees the trampoline
// while a task is inside it. A counterexample lists the events, one per line.
ProofResult proveTrampolineFree(FreeStrategy strategy, const TaskModelBounds &bounds);

} // namespace ftsim::verify
