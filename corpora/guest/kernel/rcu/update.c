#include "guest.h"

__kfunc void __rcu_read_lock(struct task *t) { t->rcu_read_nesting++; }

__kfunc void __rcu_read_unlock(struct task *t) {
  t->rcu_read_nesting--;
  t->csum = mix(t->csum, (ulong)t->rcu_read_nesting);
}

__kfunc void rcu_read_lock(struct task *t) { __rcu_read_lock(t); }

__kfunc void rcu_read_unlock(struct task *t) { __rcu_read_unlock(t); }

__kfunc void rcu_all_qs(struct task *t) { t->csum = mix(t->csum, 0x9a); }
