/* The timer interrupt's handler: the guest code the simulator enters on an `Irq` event
 * (sim/README.md, "Interrupt context") on top of whatever task the CPU runs, with interrupts off.
 * Like a tick whose callbacks run traced kernel code, it raises the preempt count around the work
 * (irq_enter()/irq_exit() add HARDIRQ_OFFSET, the softirq SOFTIRQ_OFFSET; one here) and calls
 * the traced function (below). It returns into ftsim_hc_irq_return, where the simulator restores
 * the interrupted registers (the exit path's iret / rfi).
 *
 * Linked last (corpora/CMakeLists.txt), so no other function of the image moves. The return stub
 * is a plain label, not a function: it has no profiling site (every function of a guest object
 * has one, which tests/arch/RecordMcountTest.cpp checks against the compilers' own tables). */
#include "guest.h"

ulong posix_cpu_timer_set(ulong v);

#if defined(__x86_64__)
/* The preempt count is the first word of the thread area, %gs:0 (incl %gs:__preempt_count). */
#define PREEMPT_ADD(n) asm volatile("addl $" #n ", %%gs:0" ::: "memory", "cc")
#define IRQ_ENABLE() asm volatile("sti" ::: "memory")
#define IRQ_DISABLE() asm volatile("cli" ::: "memory")
__asm__(".pushsection .text\n"
        ".globl ftsim_hc_irq_return\n"
        ".p2align 4\n"
        "ftsim_hc_irq_return:\n"
        "\tint3\n"
        "\tret\n"
        ".size ftsim_hc_irq_return, . - ftsim_hc_irq_return\n"
        ".popsection");
#else
/* powerpc: r2 points at the thread area (Linux's `current`); MSR[EE] enables interrupts
 * (arch/powerpc/include/asm/hw_irq.h without BookE: mtmsr with EE set or cleared). */
#define IRQ_ENABLE()                                                                               \
  do {                                                                                             \
    ulong msr_;                                                                                    \
    asm volatile("mfmsr %0\n\tori %0,%0,0x8000\n\tmtmsr %0" : "=&r"(msr_)::"memory");              \
  } while (0)
#define IRQ_DISABLE()                                                                              \
  do {                                                                                             \
    ulong msr_;                                                                                    \
    asm volatile("mfmsr %0\n\trlwinm %0,%0,0,17,15\n\tmtmsr %0" : "=&r"(msr_)::"memory");          \
  } while (0)
#define PREEMPT_ADD(n)                                                                             \
  asm volatile("lwz 11,0(2)\n\taddi 11,11," #n "\n\tstw 11,0(2)" ::: "r11", "memory")
__asm__(".pushsection .text\n"
        ".globl ftsim_hc_irq_return\n"
        ".p2align 4\n"
        "ftsim_hc_irq_return:\n"
        "\ttrap\n"
        "\tblr\n"
        ".size ftsim_hc_irq_return, . - ftsim_hc_irq_return\n"
        ".popsection");
#endif

/* Traceable, as Linux's tick and hrtimer handlers are (only the entry code is noinstr): its own
 * site stays a nop, no ops traces it. The traced function is called twice: as an hrtimer callback,
 * in hardirq context with interrupts off; then, past irq_exit(), as a timer_list callback in the
 * softirq __do_softirq() runs on the way out, with SOFTIRQ_OFFSET in the preempt count and
 * interrupts on (kernel/softirq.c, 6.1 and 6.12): an IPI can be taken there, a preemption cannot.
 * (A second timer interrupt cannot: the simulator does not nest them.) */
__kfunc void ftsim_timer_interrupt(void) {
  PREEMPT_ADD(1); /* irq_enter(): HARDIRQ_OFFSET */
  posix_cpu_timer_set(0x7101);
  PREEMPT_ADD(-1); /* irq_exit() */
  PREEMPT_ADD(1);  /* __do_softirq(): SOFTIRQ_OFFSET */
  IRQ_ENABLE();
  posix_cpu_timer_set(0x7102);
  IRQ_DISABLE();
  PREEMPT_ADD(-1);
}
