/* The guest "kernel": a few dozen functions with the names Rostedt's "Ftrace Kernel Hooks" slides
 * use, compiled by the real compilers with the kernel's flags, so every function gets a real
 * mcount/fentry site. Hypercalls are asm stubs (entry.S): a trap the simulator recognises by
 * address, then a return. */
#pragma once

/* Every guest function stays a function its callers call, whatever the compiler and its version:
 * noipa keeps gcc from inlining it, cloning it, merging it with an identical one and from using
 * anything it knows of its body at the call sites. With noinline alone, GCC 14 proves
 * posix_cpu_timer_set free of side effects, deletes the 16 calls workload_timers makes and folds
 * it to `return 16`: no task would ever run the function a live patch replaces. */
#define __kfunc __attribute__((noipa, used))
#define __init __attribute__((noipa, used, section(".init.text")))
#define __cold_fn __attribute__((noipa, used, cold))
#define __weak_fn __attribute__((noipa, used, weak))
#define __notrace __attribute__((noipa, used, no_instrument_function))

typedef unsigned long ulong;

/* Hypercalls (entry.S). */
void ftsim_hc_schedule(void); /* voluntary context switch: a quiescent state for RCU-tasks */
void ftsim_hc_idle(void);     /* this CPU idles once */
void ftsim_hc_user(void);     /* enter and leave user mode */

struct page {
  long refcount;
  ulong flags;
  ulong private_data;
};

struct file {
  long long f_pos;
  long long f_size;
  ulong f_version;
  struct page pages[4];
};

struct spinlock {
  volatile int locked;
  int owner;
};

struct task {
  int preempt_count;
  int need_resched;
  int rcu_read_nesting;
  ulong switches;
  ulong csum;
};

static inline ulong mix(ulong csum, ulong v) { return csum * 31u + v + (csum >> 7); }

/* kernel/sched/core.c */
void schedule(struct task *t);
void __schedule(struct task *t);
void preempt_schedule_irq(struct task *t);
int _cond_resched(struct task *t);
void yield(struct task *t);
void preempt_count_add(struct task *t, int val);
void preempt_count_sub(struct task *t, int val);
void rcu_note_context_switch(struct task *t);
void schedule_preempt_disabled(struct task *t);

/* kernel/rcu/update.c */
void rcu_read_lock(struct task *t);
void rcu_read_unlock(struct task *t);
void __rcu_read_lock(struct task *t);
void __rcu_read_unlock(struct task *t);
void rcu_all_qs(struct task *t);

/* kernel/locking/spinlock.c */
void _raw_spin_lock(struct task *t, struct spinlock *lock);
void _raw_spin_unlock(struct task *t, struct spinlock *lock);
int _raw_spin_trylock(struct task *t, struct spinlock *lock);

/* kernel/time/timekeeping.c */
ulong ktime_get(struct task *t);
ulong decay_load(ulong val, ulong n);
ulong __accumulate_pelt_segments(ulong periods, ulong d1, ulong d3);

/* mm/swap.c */
void put_page(struct page *page);
long __get_page_tail(struct page *page);
void put_pages_list(struct page *pages, int n);
int get_kernel_pages(struct page *pages, int n, struct page **out);

/* fs/read_write.c */
long long new_sync_read(struct file *f, char *buf, ulong len);
long long vfs_setpos(struct file *f, long long offset, long long maxsize);
long long fixed_size_llseek(struct file *f, long long offset, int whence, long long size);
long long default_llseek(struct file *f, long long offset, int whence);

/* init/main.c */
ulong arch_cpu_idle_prepare(ulong v);
ulong start_kernel_once(ulong v);
ulong unlikely_error_path(ulong v);
