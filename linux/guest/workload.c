// The traced functions of a Linux guest image (linux/README.md): built with -pg -mfentry
// -mrecord-mcount like kernel code, so each starts with `call __fentry__` recorded in
// __mcount_loc. A task calls them in a loop; the patcher turns their sites between a 5-byte nop
// and a call to ftsim_tracer.

unsigned long ftsim_tracer_hits;

// The tracer the sites call when traced; no profiling call of its own.
__attribute__((no_instrument_function)) void ftsim_tracer(void) { ++ftsim_tracer_hits; }

__attribute__((noinline)) unsigned long traced_a(unsigned long x) { return x * 3 + 1; }
__attribute__((noinline)) unsigned long traced_b(unsigned long x) { return x ^ 0x5a5a; }

__attribute__((no_instrument_function)) unsigned long ftsim_workload(unsigned long calls) {
  unsigned long sum = 0;
  for (unsigned long i = 0; i < calls; ++i)
    sum += traced_a(i) + traced_b(i);
  return sum;
}

// A second tracer: call-to-call transitions move a site from ftsim_tracer to it.
unsigned long ftsim_tracer_b_hits;
__attribute__((no_instrument_function)) void ftsim_tracer_b(void) { ++ftsim_tracer_b_hits; }
