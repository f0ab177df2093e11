#include "guest.h"

__kfunc ulong ktime_get(struct task *t) {
  t->csum = mix(t->csum, 7);
  return t->csum & 0xffff;
}

/* kernel/sched/pelt.c names, the hottest functions of the blog's funccount. */
__kfunc ulong decay_load(ulong val, ulong n) {
  while (n--)
    val = val - (val >> 5);
  return val;
}

__kfunc ulong __accumulate_pelt_segments(ulong periods, ulong d1, ulong d3) {
  ulong c1 = decay_load(d1, periods & 7);
  return c1 + d3 + decay_load(1024, (periods >> 3) & 7);
}
