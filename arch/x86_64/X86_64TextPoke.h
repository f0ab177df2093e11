#pragma once
// x86-64 live patching: text_poke_bp_batch() and poke_int3_handler() of
// arch/x86/kernel/alternative.c, with every historical or broken variant expressed as one option
// of the same engine (X86_64PokeOptions), so each variant differs from today's protocol in exactly
// one documented way.

#include "ftsim/arch/PatchProtocol.h"

#include <string>

namespace ftsim::arch {

struct X86_64PokeOptions {
  // false: `direct` — plain stores of the new bytes, no breakpoint (the slides' torn crash).
  bool breakpoint = true;
  // text_poke_sync() after phase 1 (int3), phase 2 (tails), phase 3 (first bytes).
  bool syncAfterInt3 = true;
  bool syncAfterTail = true;
  bool syncAfterFirstByte = true;
  // Phase 3 (first byte) written before phase 2 (tails): the int3 is gone while tails are stale.
  bool firstByteBeforeTail = false;
  enum class Handler {
    Emulate,  // today's: emulate the new instruction (call: push+jump, jmp, nop: jump over)
    SkipSite, // pre-2019 ftrace_int3_handler: resume after the site, as if it were a nop
    FirstOnly // the handler compares only vec[0] (no bsearch), missing every other batched site
  } handler = Handler::Emulate;
  // text_poke_queue() flushes when the next address is lower (tp_order_fail); false leaves the
  // vector unsorted, so the handler's bsearch misses (cf. 2aebf5ee43bf).
  bool keepSorted = true;
  // The vector is published (bp_desc) before the first int3 is written; false publishes it after,
  // so a CPU can trap on an int3 no handler knows yet.
  bool publishBeforeInt3 = true;
  // The vector is withdrawn only after the last sync; false withdraws it before.
  bool withdrawAfterLastSync = true;
};

// TP_VEC_MAX: PAGE_SIZE / sizeof(struct text_poke_loc) in Linux.
inline constexpr std::size_t kTextPokeVecMax = 256;

std::unique_ptr<PatchProtocol> makeX86_64Poke(const Arch &arch, std::string name,
                                              std::string difference, X86_64PokeOptions options);

} // namespace ftsim::arch
