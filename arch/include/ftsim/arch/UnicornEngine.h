#pragma once
// Opening a Unicorn engine the way ftsim needs it, on every Unicorn version ftsim builds with
// (2.0.1 in Debian 12, 2.1 in Debian 13). Every engine ftsim opens is opened here: the machine's
// CPUs, the trace-flag calibration's, the CPU that runs a kernel tree's own text_poke code
// (linux/), and the tests' bare engines.
//
// The machine has no MMU: a guest address is the address its memory is mapped at, kernel text at
// 0xffffffff81000000 included. Unicorn 2.0 runs guest code that way. Unicorn 2.1 translates every
// access through the emulated CPU's own MMU by default (UC_TLB_CPU), and its x86-64 CPU, paging
// off, cuts an address down to the physical address width: 0xffffffff81000040 becomes
// 0xfffff81000040, which nothing maps, so every x86-64 run would fault at its first instruction.
// Its virtual TLB (UC_TLB_VIRTUAL, 2.1 and later) with no UC_HOOK_TLB_FILL hook maps each virtual
// address to itself: the 2.0 behaviour, selected here for every architecture.

#include <unicorn/unicorn.h>

namespace ftsim::arch {

#if UC_API_MAJOR > 2 || (UC_API_MAJOR == 2 && UC_API_MINOR >= 1)
#define FTSIM_UNICORN_VIRTUAL_TLB 1
#else
#define FTSIM_UNICORN_VIRTUAL_TLB 0
#endif

// uc_open, then (Unicorn 2.1 and later) the virtual TLB. On an error nothing is left open.
inline uc_err openUnicorn(uc_arch arch, uc_mode mode, uc_engine **uc) {
  uc_err err = uc_open(arch, mode, uc);
  if (err != UC_ERR_OK)
    return err;
#if FTSIM_UNICORN_VIRTUAL_TLB
  err = uc_ctl_tlb_mode(*uc, UC_TLB_VIRTUAL);
  if (err != UC_ERR_OK) {
    uc_close(*uc);
    *uc = nullptr;
  }
#endif
  return err;
}

// Unicorn 2.1 keeps a TLB entry for a page it has just refused to read for its protection: the
// next read of that page, in a later start, succeeds without a fault and without the protection
// hook (bare Unicorn 2.1: a read of a UC_PROT_NONE page faults once, then reads the page; 2.0.1
// faults every time). Writes to read-only or unreadable pages, reads of unmapped memory and
// fetches from non-executable pages fault every time in both. Called with the error of a start that
// may have read an unreadable page (linux/'s patcher CPU, whose shared data is such pages), it
// drops the engine's TLB after a protection fault (2.1 and later), so that the next read faults
// again.
inline void forgetProtectionFault(uc_engine *uc, uc_err err) {
#if FTSIM_UNICORN_VIRTUAL_TLB
  if (err == UC_ERR_READ_PROT || err == UC_ERR_WRITE_PROT)
    uc_ctl_flush_tlb(uc);
#else
  (void)uc;
  (void)err;
#endif
}

} // namespace ftsim::arch
