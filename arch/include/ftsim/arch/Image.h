#pragma once
// A linked guest image in memory: what a boot loader hands the machine. Produced by loadImage()
// from a linked ELF (corpora/ builds them like vmlinux) or by syntheticImage() for images of N
// functions. The machine (sim/) copies the segments into guest memory; the ftrace core (model/)
// reads the __mcount_loc table and the symbols.

#include "ftsim/arch/Arch.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::arch {

struct ImageSegment {
  std::string name;                // "text", "data" (from the program header's flags)
  std::uint64_t addr = 0;          // guest virtual address
  std::vector<std::uint8_t> bytes; // memory image, .bss zero-filled (size = p_memsz)
  bool executable = false;
  bool writable = false;
};

struct ImageSymbol {
  std::string name;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  bool function = false;
  bool weak = false;
  bool local = false;
};

class Image {
public:
  const Arch *arch = nullptr;
  std::string name;                   // "x86_64-fentry", "synthetic-24683", a path
  std::vector<ImageSegment> segments; // sorted by address, non-overlapping
  std::vector<ImageSymbol> symbols;   // sorted by address, then name
  // The __mcount_loc table between __start_mcount_loc and __stop_mcount_loc, as linked (unsorted,
  // exactly what the boot code copies and sorts).
  std::vector<std::uint64_t> mcountLocs;
  // The profiling hook the sites call before boot turns them into nops (__fentry__, mcount or
  // _mcount); 0 when the image has none.
  std::uint64_t mcountAddr = 0;

  const ImageSymbol *findSymbol(std::string_view symbolName) const;
  // The function symbol whose [addr, addr+size) contains `addr` (or, for size-0 symbols, the
  // closest preceding one); nullptr before the first.
  const ImageSymbol *symbolAt(std::uint64_t addr) const;
  // The segment containing [addr, addr+size), nullptr if none does wholly.
  const ImageSegment *segmentAt(std::uint64_t addr, std::size_t size = 1) const;
  ImageSegment *segmentAt(std::uint64_t addr, std::size_t size = 1);
  bool read(std::uint64_t addr, std::span<std::uint8_t> out) const;
  bool write(std::uint64_t addr, std::span<const std::uint8_t> bytes);
  // Lowest and one-past-highest address of executable segments.
  std::uint64_t textStart() const;
  std::uint64_t textEnd() const;
};

// Loads a linked (ET_EXEC) ELF image. Throws FatalError "<path>: <problem>" on anything malformed,
// truncated or unsupported; never crashes on bad input.
Image loadImage(const std::string &elfPath);

// An image of `functions` functions, each starting with the ISA's profiling call (x86-64 fentry
// flavour: `call __fentry__` first; powerpc: `mflr r0; stw r0,4(r1); bl _mcount`), bodies of a few
// instructions whose length varies with `seed`, and the __mcount_loc table, laid out as a linker
// would (text at the kernel's base). Deterministic in (arch, functions, seed).
Image syntheticImage(const Arch &arch, std::size_t functions, std::uint64_t seed);

// Kernel text base address the corpora link at and synthetic images use.
std::uint64_t kernelTextBase(const Arch &arch);

} // namespace ftsim::arch
