#pragma once
// Per-ops dynamic trampolines and when they (and dynamic ops) may be freed.
//
// ftrace_update_trampoline() (kernel/trace/ftrace.c) asks the arch for a trampoline of the ops'
// own when it is registered (arch_ftrace_update_trampoline, arch/x86/kernel/ftrace.c, f3bea491):
// a record traced by that ops alone then calls the trampoline directly (FTRACE_FL_TRAMP), which
// calls the ops' callback without going through the list function. ftrace_shutdown() frees the
// trampoline of a DYNAMIC ops (ftrace_trampoline_free) once no task can still be on it — and the
// owner frees the ops itself as soon as unregister returns. How long "once" is changed three times:
//
//   immediate   free right after the sites are unhooked: what f3bea491 avoided by not giving
//               DYNAMIC ops trampolines at all ("until there's a safe way to free the trampoline")
//   sched-sync  schedule_on_each_cpu(ftrace_sync) first: every CPU has scheduled once, so no CPU
//               is still on the trampoline — correct only without preemption, when a task cannot
//               be switched out while on it (12cce594fa8f, "Allow !CONFIG_PREEMPT dynamic ops to
//               use allocated trampolines")
//   rcu-tasks   then synchronize_rcu_tasks(): every task has passed a voluntary schedule, user
//               mode or idle since the unhook; a preempted task holds the grace period
//               (0598e4f08e3d, "Add use of synchronize_rcu_tasks() with dynamic trampolines").
//               Today's ftrace_shutdown() (Linux 6.1, 6.12): synchronize_rcu_tasks_rude(), then
//               synchronize_rcu_tasks() on a PREEMPTION kernel (always in 6.12)
//
// Two more, to show what each flavour is for:
//
//   rude               synchronize_rcu_tasks_rude() alone (schedule_on_each_cpu(), the same wait
//                      as sched-sync): what a !PREEMPTION 6.1 kernel does. Not enough for a
//                      trampoline a preempted task is on
//   rcu-tasks-classic  synchronize_rcu_tasks() alone: does not wait for idle tasks (Linux's
//                      rcu_tasks_pertask() skips is_idle_task()), so an idle task still on the
//                      trampoline is missed — why ftrace calls the rude flavour too
//
// And the 2022 use-after-free: when unregistering an ops changes no code (another identical ops
// keeps every site as it was, and the trace function stays the list function), ftrace_shutdown()
// returned early and skipped the synchronisation, freeing an ops the list function could still be
// walking (0e792b89e680 "ftrace: Fix use-after-free for dynamic ftrace_ops").

#include "ftsim/arch/Error.h"
#include "ftsim/model/FtraceOps.h"

#include <string_view>

namespace ftsim::model {

// The arch side (arch_ftrace_update_trampoline): give `ops` a trampoline of its own (set
// ops.trampoline / trampolineSize and OpsFlag::AllocTramp), or retarget the callback of the one it
// has. Called by the core on the patcher CPU while registering, before the records are counted.
// Leaving ops.trampoline at 0 is allowed (the ops then uses the shared trampolines).
class OpsTrampolineArch {
public:
  virtual ~OpsTrampolineArch() = default;
  virtual void updateTrampoline(FtraceOps &ops) = 0;
};

enum class TrampolineFree { Immediate, SchedSync, RcuTasks, Rude, RcuTasksClassic };

struct TrampolineFreePolicy {
  TrampolineFree free = TrampolineFree::RcuTasks;
  // false: the pre-0e792b89e680 early return (no code change -> no synchronisation).
  bool syncWhenUnchanged = true;
};

inline std::string_view trampolineFreeName(TrampolineFree free) {
  switch (free) {
  case TrampolineFree::Immediate:
    return "immediate";
  case TrampolineFree::SchedSync:
    return "sched-sync";
  case TrampolineFree::RcuTasks:
    return "rcu-tasks";
  case TrampolineFree::Rude:
    return "rude";
  case TrampolineFree::RcuTasksClassic:
    return "rcu-tasks-classic";
  }
  return "?";
}

// FatalError naming the known variants.
inline TrampolineFree parseTrampolineFree(std::string_view name) {
  for (TrampolineFree f :
       {TrampolineFree::Immediate, TrampolineFree::SchedSync, TrampolineFree::RcuTasks,
        TrampolineFree::Rude, TrampolineFree::RcuTasksClassic})
    if (trampolineFreeName(f) == name)
      return f;
  fatal("unknown trampoline free variant '{}' (known: immediate, sched-sync, rcu-tasks, rude, "
        "rcu-tasks-classic)",
        name);
}

} // namespace ftsim::model
