#pragma once
// The guest code of a site-level scenario, from an ISA-neutral description: the verifier says
// which functions exist and what their patch sites hold; the target encodes them. Layout (fixed by
// the verifier, the same on every ISA): hypercall stubs at the start of text, a worker that calls
// every traced function in a loop, one traced function per 256-byte block with its site inside.

#include "ftsim/arch/Arch.h"

#include <cstdint>
#include <span>

namespace ftsim::arch {

// Module call sites that keep a TOC pointer (ppc64 ELFv1 modules: `bl <module stub>;
// ld r2,40(r1)`): the stub saves the caller's TOC register in a slot of the caller's frame and the
// instruction after the site reloads it. ppc64 does not execute here, so ppc32 models it with r2
// as the TOC.
struct ModuleTocSite {
  int tocReg = 0;          // the guest register holding the TOC (a Unicorn register id)
  unsigned slot = 0;       // the stack slot the stub saves it in: sp + slot at the site
  Bytes restore;           // the instruction after the site: reload the TOC from the slot
  Bytes foldIntoResult;    // in the worker after every call: acc += the TOC register
  std::uint64_t kernelToc; // what the stub leaves in the TOC register (the kernel's TOC)
};

class SnippetEmitter {
public:
  virtual ~SnippetEmitter() = default;
  // Where the scenario's text starts: the kernel's text base (x86 -mcmodel=kernel, ppc32
  // PAGE_OFFSET).
  virtual std::uint64_t textBase() const = 0;
  // The byte unused text is filled with: x86 int3 (a stray jump traps, unowned: a guest fault),
  // powerpc 0 (an illegal instruction).
  virtual std::uint8_t fill() const = 0;
  // A hypercall stub: trap, then return to the caller.
  virtual Bytes hypercallStub() const = 0;
  // Bytes from a traced function's entry to its patch site (the prologue).
  virtual unsigned prologueSize() const = 0;
  // A traced function at `entry` that sets up a frame, executes `site` (its patch site, at
  // entry + prologueSize()), and returns.
  virtual Bytes tracedFunction(std::uint64_t entry, std::span<const std::uint8_t> site) const = 0;
  // worker(seed) at `entry`: acc = seed; `calls` times { for each f in functions: acc += 3; f();
  // afterCall }; return acc. FTSIM_PANIC when a call cannot be encoded.
  virtual Bytes worker(std::uint64_t entry, unsigned calls,
                       std::span<const std::uint64_t> functions,
                       std::span<const std::uint8_t> afterCall = {}) const = 0;
  // Module call sites with a TOC, where the ISA can model them (ppc32); nullptr elsewhere.
  virtual const ModuleTocSite *moduleTocSite() const { return nullptr; }
};

} // namespace ftsim::arch
