/* The timer interrupt's handler: the guest code the simulator enters on an `Irq` event
 * (sim/README.md, "Interrupt context") on top of whatever task the CPU runs, with interrupts off.
 * Like a tick whose hrtimer callback runs traced kernel code in hardirq context, it raises the
 * preempt count around the work (irq_enter()/irq_exit() add HARDIRQ_OFFSET; one here) and calls
 * the traced function. It returns into ftsim_hc_irq_return, where the simulator restores the
 * interrupted registers (the exit path's iret / rfi).
 *
 * Linked last (corpora/CMakeLists.txt), so no other function of the image moves. The return stub
 * is a plain label, not a function: it has no profiling site (every function of a guest object
 * has one, which tests/arch/RecordMcountTest.cpp checks against the compilers' own tables). */
#include "guest.h"

ulong posix_cpu_timer_set(ulong v);

#if defined(__x86_64__)
/* The preempt count is the first word of the thread area, %gs:0 (incl %gs:__preempt_count). */
#define HARDIRQ_ADD(n) asm volatile("addl $" #n ", %%gs:0" ::: "memory", "cc")
__asm__(".pushsection .text\n"
        ".globl ftsim_hc_irq_return\n"
        ".p2align 4\n"
        "ftsim_hc_irq_return:\n"
        "\tint3\n"
        "\tret\n"
        ".size ftsim_hc_irq_return, . - ftsim_hc_irq_return\n"
        ".popsection");
#else
/* powerpc: r2 points at the thread area (Linux's `current`). */
#define HARDIRQ_ADD(n)                                                                             \
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

/* Traceable, as Linux's tick and hrtimer handlers are (only the entry code is noinstr): its own site
 * stays a nop, no ops traces it. */
__kfunc void ftsim_timer_interrupt(void) {
  HARDIRQ_ADD(1);
  posix_cpu_timer_set(0x7101);
  HARDIRQ_ADD(-1);
}
