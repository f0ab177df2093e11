/* Live kernel patching (seed slides, "Live Kernel Patching!" and "Another Solution"): the slides'
 * posix_cpu_timer_set with a bug, and the fixed version a livepatch redirects it to. Each returns
 * its version in the low byte, so a caller can tell which one ran. The loop makes the body long
 * enough for a task to be inside it when a patch lands. */
#include "guest.h"

static inline ulong timer_body(ulong v) {
  ulong acc = v;
  for (ulong i = 0; i < 8; i++)
    acc = mix(acc, i ^ (acc >> 3));
  return acc;
}

__kfunc ulong posix_cpu_timer_set(ulong v) { return timer_body(v) << 8 | 1; }

__kfunc ulong posix_cpu_timer_set_v2(ulong v) { return timer_body(v + 1) << 8 | 2; }

/* Calls posix_cpu_timer_set 16 times, scheduling voluntarily after every 4th call. Returns the
 * number of calls that ran version 1 (bits 0-7) and version 2 (bits 8-15), and bit 16 set when a
 * version-1 result came after a version-2 one (the patch was lost again). */
__kfunc ulong workload_timers(ulong seed) {
  ulong v1 = 0, v2 = 0, regressed = 0;
  for (ulong i = 0; i < 16; i++) {
    ulong r = posix_cpu_timer_set(seed + i);
    if ((r & 0xff) == 2) {
      v2++;
    } else {
      v1++;
      if (v2)
        regressed = 1;
    }
    if (i % 4 == 3)
      ftsim_hc_schedule();
  }
  return v1 | v2 << 8 | regressed << 16;
}
