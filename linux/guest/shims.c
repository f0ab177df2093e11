// Guest shims linked with a Linux tree's objects (linux/README.md). Compiled freestanding with the
// kernel's code model and no profiling. What the machine performs itself (the text write of
// __text_poke, the IPIs of on_each_cpu_cond_mask) is intercepted by the host at the function's
// address and never runs here; these bodies are the rest: plain C library routines, and the
// no-ops of kernel services that have no effect on text patching.

typedef unsigned long size_t;

// The loops must not become calls to themselves: built with -fno-builtin and
// -fno-tree-loop-distribute-patterns.
void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--)
    *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n--)
      *d++ = *s++;
  } else {
    while (n--)
      d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n--)
    *d++ = (unsigned char)c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n; --n, ++x, ++y)
    if (*x != *y)
      return *x < *y ? -1 : 1;
  return 0;
}

// perf's PERF_RECORD_TEXT_POKE: a record for profilers, no effect on the text.
void perf_event_text_poke(const void *addr, const void *old, int old_len, const void *new_bytes,
                          int new_len) {
  (void)addr, (void)old, (void)old_len, (void)new_bytes, (void)new_len;
}

// Mutexes and scheduling points: the patcher is the only caller (text_mutex is held around the
// batch by its caller in Linux) and the machine schedules it at its visible actions.
void mutex_lock(void *lock) { (void)lock; }
void mutex_unlock(void *lock) { (void)lock; }
void __cond_resched(void) {}
int _cond_resched(void) { return 0; }
void preempt_schedule(void) {}
void preempt_schedule_notrace(void) {}
void __SCT__preempt_schedule(void) {}
void __SCT__preempt_schedule_notrace(void) {}
void __SCT__cond_resched(void) {}
int __SCT__might_resched(void) { return 0; }

// The profiling hook of the tree's own functions (they are built with -pg -mfentry): a return, as
// a site of a function nobody traces is a nop in Linux.
__asm__(".pushsection .text\n"
        ".globl __fentry__\n"
        "__fentry__: ret\n"
        ".popsection\n");

// Intercepted by the host at these addresses (never executed): the write of __text_poke is the
// machine's stores, on_each_cpu_cond_mask is the machine's IPIs. ud2 if anything else jumps here.
__asm__(".pushsection .text\n"
        ".globl on_each_cpu_cond_mask\n"
        "on_each_cpu_cond_mask: ud2\n"
        ".popsection\n");

// The patcher's entry: queue every request of the batch, then finish it, as ftrace_replace_code()
// does (arch/x86/kernel/ftrace.c: ftrace_replace_code -> text_poke_queue per record,
// text_poke_finish once). The host fills the table.
struct ftsim_poke_request {
  void *addr;
  unsigned long len;
  unsigned char opcode[8];
};
struct ftsim_poke_request ftsim_poke_requests[16];
unsigned long ftsim_poke_count;

void text_poke_queue(void *addr, const void *opcode, size_t len, const void *emulate);
void text_poke_finish(void);

void ftsim_linux_batch(void) {
  for (unsigned long i = 0; i < ftsim_poke_count; ++i)
    text_poke_queue(ftsim_poke_requests[i].addr, ftsim_poke_requests[i].opcode,
                    ftsim_poke_requests[i].len, 0);
  text_poke_finish();
}

// The machine's hypercall stubs (a trap then a return; sim/README.md), and the exception return
// the int3 entry puts under poke_int3_handler's frame: the host restores pt_regs there.
__asm__(".pushsection .text\n"
        ".globl ftsim_hc_schedule, ftsim_hc_idle, ftsim_hc_user, ftsim_hc_exit, ftsim_linux_iret\n"
        ".balign 16\nftsim_hc_schedule: int3\n ret\n"
        ".balign 16\nftsim_hc_idle: int3\n ret\n"
        ".balign 16\nftsim_hc_user: int3\n ret\n"
        ".balign 16\nftsim_hc_exit: int3\n ret\n"
        ".balign 16\nftsim_linux_iret: int3\n ud2\n"
        ".popsection\n");
