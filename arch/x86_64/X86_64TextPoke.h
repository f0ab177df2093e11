#pragma once
// x86-64 live patching: text_poke_bp_batch() and poke_int3_handler() of
// arch/x86/kernel/alternative.c, as one interpreter of protocol programs (ProtocolProgram.h):
// today's protocol and every historical or broken variant are programs that differ from today's
// in exactly one documented way, and a protocol file is compiled into the same value.

#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/ProtocolProgram.h"

#include <string>
#include <vector>

namespace ftsim::arch {

struct X86_64PokeStep {
  enum class Op { Write, Sync, Publish, Withdraw } op = Op::Sync;
  enum class Part { First, Tail, Whole } part = Part::Whole; // Write only
  enum class Value { Int3, Old, New } value = Value::New;    // Write only
  bool operator==(const X86_64PokeStep &) const = default;
};

struct X86_64PokeProgram {
  std::vector<X86_64PokeStep> steps;
  enum class Handler {
    Emulate,  // today's: emulate the new instruction (call: push+jump, jmp, nop: jump over)
    SkipSite, // pre-2019 ftrace_int3_handler: resume after the site, as if it were a nop
    Unknown   // the handler knows no site: every int3 is "not mine"
  } handler = Handler::Emulate;
  // TP_VEC_MAX: PAGE_SIZE / sizeof(struct text_poke_loc) in Linux.
  static constexpr std::size_t kTextPokeVecMax = 256;
  // bsearch over the sorted vector; FirstOnly compares only vec[0], missing every other site.
  enum class Lookup { Bsearch, FirstOnly } lookup = Lookup::Bsearch;
  // text_poke_queue() flushes when the next address is lower (tp_order_fail); false leaves the
  // vector unsorted, so the handler's bsearch misses (cf. 2aebf5ee43bf).
  bool sorted = true;
  // Sites per batch: TP_VEC_MAX (text_poke_queue(), v5.6 on), or 0 for no limit: ftrace's own
  // breakpoint code (arch/x86/kernel/ftrace.c ftrace_replace_code() before v5.6) makes each pass
  // over every record, three syncs per update however many sites change.
  std::size_t vecMax = kTextPokeVecMax;
};

std::unique_ptr<PatchProtocol> makeX86_64Poke(const Arch &arch, std::string name,
                                              std::string difference, X86_64PokeProgram program);

// ProtocolProgram (the data form) -> X86_64PokeProgram; FatalError names the step and the key.
X86_64PokeProgram compileX86_64Program(const ProtocolProgram &program);
ProtocolEntry compileX86_64Protocol(const ProtocolProgram &program);

} // namespace ftsim::arch
