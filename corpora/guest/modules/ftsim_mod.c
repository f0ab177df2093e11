/* A guest "module" for ppc32: compiled with -pg like any module object and linked at the module
 * area (0xb0000000, book3s/32 MODULES_VADDR), 256 MiB below kernel text, out of reach of a `bl`
 * (+-32 MiB). Its sites call _mcount through the module's PLT entry (ppc32/module_plt.S), and
 * enabled tracing reaches ftrace_caller through the module's ftrace trampoline
 * (mod->arch.tramp), as arch/powerpc/kernel/module_32.c sets them up. */
#include "guest.h"

__kfunc ulong mod_scale(ulong x) { return x * 3 + 1; }

__kfunc ulong mod_mix(ulong a, ulong b) { return (a ^ (b << 5)) + (b >> 3); }

__kfunc ulong mod_compute(ulong seed) {
  ulong c = seed;
  for (ulong i = 0; i < 6; i++)
    c = mod_mix(c, mod_scale(seed + i));
  return c;
}
