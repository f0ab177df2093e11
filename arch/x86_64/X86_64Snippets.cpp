// x86-64 guest code of site-level scenarios (SnippetEmitter.h).

#include "../common/CodeWriter.h"
#include "X86_64Target.h"

namespace ftsim::arch {
namespace {

class X86_64Snippets final : public SnippetEmitter {
public:
  explicit X86_64Snippets(const Arch &arch) : arch_(arch) {}
  std::uint64_t textBase() const override { return 0xffffffff81000000ull; } // -mcmodel=kernel
  std::uint8_t fill() const override { return 0xcc; }
  Bytes hypercallStub() const override { return {0xcc, 0xc3}; } // int3; ret
  unsigned prologueSize() const override { return 4; }

  Bytes tracedFunction(std::uint64_t entry, std::span<const std::uint8_t> site) const override {
    CodeWriter c(arch_, entry);
    c.put({0x55, 0x48, 0x89, 0xe5}); // push %rbp; mov %rsp,%rbp
    c.put(site);
    c.put({0x5d, 0xc3}); // pop %rbp; ret
    return c.take();
  }

  Bytes worker(std::uint64_t entry, unsigned calls, std::span<const std::uint64_t> functions,
               std::span<const std::uint8_t> afterCall) const override {
    CodeWriter c(arch_, entry);
    c.put({0x48, 0x89, 0xf8});                                // mov %rdi,%rax
    c.put({0xb9, static_cast<std::uint8_t>(calls), 0, 0, 0}); // mov $n,%ecx
    const std::uint64_t loop = c.here();
    for (std::uint64_t f : functions) {
      c.put({0x48, 0x83, 0xc0, 0x03}); // add $3,%rax
      c.call(f);
      c.put(afterCall);
    }
    c.put({0xff, 0xc9}); // dec %ecx
    const auto rel = static_cast<std::uint32_t>(loop - (c.here() + 6));
    c.put({0x0f, 0x85, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
           static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)}); // jnz
    c.put({0xc3});                                                                       // ret
    return c.take();
  }

private:
  const Arch &arch_;
};

} // namespace

std::unique_ptr<SnippetEmitter> makeX86_64Snippets(const Arch &arch) {
  return std::make_unique<X86_64Snippets>(arch);
}

} // namespace ftsim::arch
