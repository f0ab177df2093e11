/* The scheduler entry points of the slides (kernel/sched/core.o: schedule, preempt_schedule_irq,
 * _cond_resched, yield). __schedule switches through the simulator's hypercall. */
#include "guest.h"

__kfunc void preempt_count_add(struct task *t, int val) { t->preempt_count += val; }

__kfunc void preempt_count_sub(struct task *t, int val) { t->preempt_count -= val; }

__kfunc void rcu_note_context_switch(struct task *t) {
  rcu_all_qs(t);
  t->csum = mix(t->csum, 0x51);
}

static __kfunc void sched_submit_work(struct task *t) { t->csum = mix(t->csum, t->switches); }

__kfunc void __schedule(struct task *t) {
  preempt_count_add(t, 1);
  rcu_note_context_switch(t);
  t->switches++;
  t->need_resched = 0;
  preempt_count_sub(t, 1);
  ftsim_hc_schedule();
}

__kfunc void schedule(struct task *t) {
  sched_submit_work(t);
  __schedule(t);
}

__kfunc void schedule_preempt_disabled(struct task *t) {
  preempt_count_sub(t, 1);
  schedule(t);
  preempt_count_add(t, 1);
}

__kfunc void preempt_schedule_irq(struct task *t) {
  preempt_count_add(t, 1);
  __schedule(t);
  preempt_count_sub(t, 1);
}

__kfunc int _cond_resched(struct task *t) {
  if (t->need_resched && t->preempt_count == 0) {
    preempt_schedule_irq(t);
    return 1;
  }
  rcu_all_qs(t);
  return 0;
}

__kfunc void yield(struct task *t) {
  t->need_resched = 1;
  schedule(t);
}
