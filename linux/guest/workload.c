// The traced functions of a Linux guest image (linux/README.md): built with -pg -mfentry
// -mrecord-mcount like kernel code, so each starts with `call __fentry__` recorded in
// __mcount_loc. A task calls them in a loop; the patcher turns their sites between a 5-byte nop
// and a call to ftsim_tracer.

unsigned long ftsim_tracer_hits;

// The tracer the sites call when traced; no profiling call of its own.
__attribute__((no_instrument_function)) void ftsim_tracer(void) { ++ftsim_tracer_hits; }

__attribute__((noinline)) unsigned long traced_a(unsigned long x) { return x * 3 + 1; }
__attribute__((noinline)) unsigned long traced_b(unsigned long x) { return x ^ 0x5a5a; }
unsigned long traced_c(unsigned long x);

__attribute__((no_instrument_function)) unsigned long ftsim_workload(unsigned long calls) {
  extern unsigned long ftsim_workload_functions;
  unsigned long sum = 0;
  for (unsigned long i = 0; i < calls; ++i) {
    sum += traced_a(i) + traced_b(i);
    if (ftsim_workload_functions > 2) // set by the host: a third site (a kprobe beside 2 sites)
      sum += traced_c(i);
  }
  return sum;
}

// A second tracer: call-to-call transitions move a site from ftsim_tracer to it.
unsigned long ftsim_tracer_b_hits;
__attribute__((no_instrument_function)) void ftsim_tracer_b(void) { ++ftsim_tracer_b_hits; }

// How many of traced_a, traced_b, traced_c ftsim_workload() calls (2 unless the host says 3).
unsigned long ftsim_workload_functions = 2;

// More traced functions, in address order after the first two: a third the workload calls when
// asked, and sites that batches of up to 8 requests patch without a task calling them (the
// conformance of the C++ protocol with the tree's code, linux/README.md).
__attribute__((noinline)) unsigned long traced_c(unsigned long x) { return x + 7; }
__attribute__((noinline)) unsigned long traced_d(unsigned long x) { return x - 7; }
__attribute__((noinline)) unsigned long traced_e(unsigned long x) { return x << 1; }
__attribute__((noinline)) unsigned long traced_f(unsigned long x) { return x >> 1; }
__attribute__((noinline)) unsigned long traced_g(unsigned long x) { return x | 1; }
__attribute__((noinline)) unsigned long traced_h(unsigned long x) { return x & ~1ul; }
__attribute__((noinline)) unsigned long traced_i(unsigned long x) { return ~x; }
