#include "ftsim/arch/Image.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ftsim::arch {

const ImageSymbol *Image::findSymbol(std::string_view symbolName) const {
  for (const auto &sym : symbols)
    if (sym.name == symbolName)
      return &sym;
  return nullptr;
}

const ImageSymbol *Image::symbolAt(std::uint64_t addr) const {
  // symbols are sorted by address: the nearest function symbol at or below addr owns it.
  auto it = std::upper_bound(symbols.begin(), symbols.end(), addr,
                             [](std::uint64_t a, const ImageSymbol &s) { return a < s.addr; });
  while (it != symbols.begin()) {
    --it;
    if (it->function)
      return it->size == 0 || addr < it->addr + it->size ? &*it : nullptr;
  }
  return nullptr;
}

const ImageSegment *Image::segmentAt(std::uint64_t addr, std::size_t size) const {
  for (const auto &seg : segments)
    if (addr >= seg.addr && addr - seg.addr <= seg.bytes.size() &&
        size <= seg.bytes.size() - (addr - seg.addr))
      return &seg;
  return nullptr;
}

ImageSegment *Image::segmentAt(std::uint64_t addr, std::size_t size) {
  return const_cast<ImageSegment *>(std::as_const(*this).segmentAt(addr, size));
}

bool Image::read(std::uint64_t addr, std::span<std::uint8_t> out) const {
  const ImageSegment *seg = segmentAt(addr, out.size());
  if (!seg)
    return false;
  std::memcpy(out.data(), seg->bytes.data() + (addr - seg->addr), out.size());
  return true;
}

bool Image::write(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  ImageSegment *seg = segmentAt(addr, bytes.size());
  if (!seg)
    return false;
  std::memcpy(seg->bytes.data() + (addr - seg->addr), bytes.data(), bytes.size());
  return true;
}

std::uint64_t Image::textStart() const {
  std::uint64_t start = ~0ull;
  for (const auto &seg : segments)
    if (seg.executable)
      start = std::min(start, seg.addr);
  return start == ~0ull ? 0 : start;
}

std::uint64_t Image::textEnd() const {
  std::uint64_t end = 0;
  for (const auto &seg : segments)
    if (seg.executable)
      end = std::max(end, seg.addr + seg.bytes.size());
  return end;
}

std::uint64_t kernelTextBase(const Arch &arch) {
  // x86-64: __START_KERNEL_map + 16 MiB (arch/x86/include/asm/page_64_types.h);
  // powerpc 32-bit: PAGE_OFFSET 0xc0000000.
  return arch.wordSize() == 8 && arch.endian() == Endian::Little ? 0xffffffff81000000ull
         : arch.wordSize() == 8                                  ? 0xc000000000000000ull
                                                                 : 0xc0000000ull;
}

} // namespace ftsim::arch
