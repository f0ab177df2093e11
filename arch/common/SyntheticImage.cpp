// Synthetic images of N functions, for boot-scale figures (the slides' "ftrace: allocating 24683
// entries in 97 pages") without compiling N functions. The machine code is real and executable:
// each function starts with the ISA's profiling call, then a short body, then a return.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace ftsim::arch {
namespace {

constexpr std::size_t kMaxSyntheticFunctions = 1'000'000;

void putWord(std::vector<std::uint8_t> &out, const Arch &arch, std::uint64_t v) {
  std::uint8_t b[8];
  storeInteger(arch.endian(), v, std::span(b, arch.wordSize()));
  out.insert(out.end(), b, b + arch.wordSize());
}

void append(std::vector<std::uint8_t> &out, std::initializer_list<std::uint8_t> bytes) {
  out.insert(out.end(), bytes);
}

void append(std::vector<std::uint8_t> &out, const Bytes &bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

} // namespace

Image syntheticImage(const Arch &arch, std::size_t functions, std::uint64_t seed) {
  if (functions == 0 || functions > kMaxSyntheticFunctions)
    fatal("synthetic image: {} functions requested, must be 1..{}", functions,
          kMaxSyntheticFunctions);
  const bool x86 = arch.name() == "x86_64";
  const std::uint64_t base = kernelTextBase(arch);
  Image image;
  image.arch = &arch;
  image.name = fmt::format("synthetic-{}", functions);
  std::mt19937_64 rng(seed);

  ImageSegment text{"text", base, {}, true, false};
  auto &code = text.bytes;
  // The profiling hook first: x86 fentry just returns; ppc32 _mcount returns to the caller with
  // LR restored from r0 (arch/powerpc/kernel/trace/ftrace_32.S without CONFIG_DYNAMIC_FTRACE).
  const std::string hook = x86 ? "__fentry__" : "_mcount";
  image.mcountAddr = base;
  if (x86)
    append(code, {0xc3});
  else
    append(code, {0x7d, 0x88, 0x02, 0xa6, 0x7d, 0x89, 0x03, 0xa6, 0x7c, 0x08, 0x03, 0xa6, 0x4e,
                  0x80, 0x04, 0x20});
  image.symbols.push_back({hook, base, code.size(), true, false, false});

  std::vector<std::uint64_t> sites;
  sites.reserve(functions);
  for (std::size_t i = 0; i < functions; ++i) {
    while (code.size() % 16 != 0)
      append(code, x86 ? Bytes{0x90} : Bytes{0x60, 0x00, 0x00, 0x00});
    const std::uint64_t fn = base + code.size();
    const unsigned bodyInsns = 1 + static_cast<unsigned>(rng() % 4);
    if (x86) {
      sites.push_back(fn);
      append(code, arch.call(fn, image.mcountAddr).bytes);
      for (unsigned k = 0; k < bodyInsns; ++k)
        append(code, {0x48, 0x8d, 0x7f, 0x01}); // lea 0x1(%rdi),%rdi
      append(code, {0x48, 0x89, 0xf8, 0xc3});   // mov %rdi,%rax; ret
    } else {
      append(code, {0x7c, 0x08, 0x02, 0xa6, 0x90, 0x01, 0x00, 0x04}); // mflr r0; stw r0,4(r1)
      sites.push_back(base + code.size());
      const EncodeResult bl = arch.call(base + code.size(), image.mcountAddr);
      if (!bl.ok)
        fatal("synthetic image: {} functions do not fit in the reach of bl: {}", functions,
              bl.error);
      append(code, bl.bytes);
      for (unsigned k = 0; k < bodyInsns; ++k)
        append(code, {0x38, 0x63, 0x00, 0x01}); // addi r3,r3,1
      append(code, {0x4e, 0x80, 0x00, 0x20});   // blr
    }
    image.symbols.push_back(
        {fmt::format("synthetic_fn_{}", i), fn, base + code.size() - fn, true, false, false});
  }
  while (code.size() % 4096 != 0)
    code.push_back(0);

  ImageSegment data{"data", base + code.size(), {}, false, true};
  image.symbols.push_back({"__start_mcount_loc", data.addr, 0, false, false, false});
  for (std::uint64_t site : sites)
    putWord(data.bytes, arch, site);
  image.symbols.push_back(
      {"__stop_mcount_loc", data.addr + data.bytes.size(), 0, false, false, false});
  image.mcountLocs = std::move(sites);
  image.segments.push_back(std::move(text));
  image.segments.push_back(std::move(data));
  std::stable_sort(image.symbols.begin(), image.symbols.end(),
                   [](const ImageSymbol &a, const ImageSymbol &b) { return a.addr < b.addr; });
  return image;
}

} // namespace ftsim::arch
