/* Each task passes its own lock: the workloads never contend, so no schedule can livelock. */
#include "guest.h"

__kfunc void _raw_spin_lock(struct task *t, struct spinlock *lock) {
  preempt_count_add(t, 1);
  while (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE))
    ;
  lock->owner = 1;
}

__kfunc void _raw_spin_unlock(struct task *t, struct spinlock *lock) {
  lock->owner = 0;
  __atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
  preempt_count_sub(t, 1);
}

__kfunc int _raw_spin_trylock(struct task *t, struct spinlock *lock) {
  preempt_count_add(t, 1);
  if (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE)) {
    preempt_count_sub(t, 1);
    return 0;
  }
  lock->owner = 1;
  return 1;
}
