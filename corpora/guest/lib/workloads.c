/* Workloads: each task runs one, with its own data on its own stack, calling the traced functions
 * in loops and folding what they return into a checksum. A test compares the checksum of a traced
 * run with the untraced one (the transparency oracle). */
#include "guest.h"

#define SEEK_CUR 1
#define SEEK_END 2

static __notrace void task_init(struct task *t, ulong seed) {
  t->preempt_count = 0;
  t->need_resched = 0;
  t->rcu_read_nesting = 0;
  t->switches = 0;
  t->csum = seed;
}

__kfunc ulong workload_sched(ulong seed) {
  struct task t;
  struct spinlock lock = {0, 0};
  task_init(&t, seed);
  for (ulong i = 0; i < 8; i++) {
    _raw_spin_lock(&t, &lock);
    t.csum = mix(t.csum, ktime_get(&t));
    _raw_spin_unlock(&t, &lock);
    rcu_read_lock(&t);
    t.csum = mix(t.csum, __accumulate_pelt_segments(i + seed, i * 3, 17));
    rcu_read_unlock(&t);
    if (i % 3 == 0)
      t.need_resched = 1;
    _cond_resched(&t);
    if (i % 4 == 3)
      schedule(&t);
  }
  yield(&t);
  return mix(t.csum, t.switches);
}

__kfunc ulong workload_mm(ulong seed) {
  struct task t;
  struct page pages[8];
  struct page *out[8];
  task_init(&t, seed);
  for (int i = 0; i < 8; i++) {
    pages[i].refcount = 1;
    pages[i].flags = seed + (ulong)i;
    pages[i].private_data = 0;
  }
  for (ulong round = 0; round < 4; round++) {
    int n = get_kernel_pages(pages, 8, out);
    for (int i = 0; i < n; i++)
      t.csum = mix(t.csum, (ulong)out[i]->refcount + out[i]->flags);
    put_pages_list(pages, 8);
    _cond_resched(&t);
  }
  schedule(&t);
  return t.csum;
}

__kfunc ulong workload_fs(ulong seed) {
  struct task t;
  struct file f;
  char buf[16];
  task_init(&t, seed);
  f.f_pos = 0;
  f.f_size = 40 + (long long)(seed & 7);
  f.f_version = 1;
  for (int i = 0; i < 4; i++) {
    f.pages[i].refcount = 1;
    f.pages[i].flags = seed * (ulong)(i + 1);
    f.pages[i].private_data = 0;
  }
  for (int round = 0; round < 4; round++) {
    long long got = new_sync_read(&f, buf, sizeof buf);
    for (long long i = 0; i < got; i++)
      t.csum = mix(t.csum, (unsigned char)buf[i]);
    t.csum = mix(t.csum, (ulong)default_llseek(&f, -(long long)round, SEEK_CUR));
    t.csum = mix(t.csum, (ulong)vfs_setpos(&f, (long long)round * 9, f.f_size));
    _cond_resched(&t);
  }
  t.csum = mix(t.csum, (ulong)default_llseek(&f, 0, SEEK_END));
  ftsim_hc_user();
  return t.csum;
}

__kfunc ulong workload_boot(ulong seed) {
  ulong v = start_kernel_once(seed);
  if (v == 0)
    v = unlikely_error_path(v);
  return v;
}

__kfunc ulong workload_mixed(ulong seed) {
  ulong c = workload_sched(seed);
  c = mix(c, workload_mm(seed + 1));
  c = mix(c, workload_fs(seed + 2));
  return mix(c, workload_boot(seed + 3));
}

/* A tight loop through one traced function, for overhead measurements (the slides' "retq only
 * is 13% added overhead"). */
__kfunc ulong workload_tight(ulong seed) {
  ulong v = seed;
  for (int i = 0; i < 256; i++)
    v = decay_load(v + 1024, 1);
  return v;
}
