/* An idle loop that calls nothing traced: it spins a little and idles (ftsim_hc_idle: the CPU
 * schedules), 16 times. Run as a CPU's idle task (preempt count 1, not waited for by RCU-tasks),
 * only what interrupts it runs traced code on that CPU: the timer interrupt's handler
 * (kernel/irq/handler.c). Linked after it (corpora/CMakeLists.txt). */
#include "guest.h"

__kfunc ulong workload_idle(ulong seed) {
  ulong acc = seed;
  for (ulong i = 0; i < 16; i++) {
    for (ulong j = 0; j < 8; j++)
      acc = mix(acc, j);
    ftsim_hc_idle();
  }
  return acc;
}
