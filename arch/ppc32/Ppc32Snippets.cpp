// ppc32 guest code of site-level scenarios (SnippetEmitter.h).

#include "../common/CodeWriter.h"
#include "Ppc32Target.h"

#include <unicorn/unicorn.h>

namespace ftsim::arch {
namespace {

constexpr std::uint32_t kStwuFrame = 0x9421fff0; // stwu r1,-16(r1)
constexpr std::uint32_t kMflrR0 = 0x7c0802a6;    // mflr r0
constexpr std::uint32_t kStwR0 = 0x90010014;     // stw r0,20(r1)
constexpr std::uint32_t kLwzR0 = 0x80010014;     // lwz r0,20(r1)
constexpr std::uint32_t kMtlrR0 = 0x7c0803a6;    // mtlr r0
constexpr std::uint32_t kPopFrame = 0x38210010;  // addi r1,r1,16
constexpr std::uint32_t kBlr = 0x4e800020;       // blr
constexpr unsigned kTocSlot = 12;                // the module TOC's slot in a 16-byte frame

class Ppc32Snippets final : public SnippetEmitter {
public:
  explicit Ppc32Snippets(const Arch &arch) : arch_(arch) {
    // ppc64 ELFv1's `bl <stub>; ld r2,40(r1)` on ppc32: the stub saves r2 at 12(r1), a free word
    // of the traced function's 16-byte frame (0: back chain, 4: its callees' LR save word).
    toc_.tocReg = UC_PPC_REG_2;
    toc_.slot = kTocSlot;
    toc_.restore = bigEndian(0x8041000c);        // lwz r2,12(r1)
    toc_.foldIntoResult = bigEndian(0x7c631214); // add r3,r3,r2
    toc_.kernelToc = 0xc0a00000ull; // stands for the kernel's TOC, which the stub loads
  }
  std::uint64_t textBase() const override { return 0xc0000000ull; } // PAGE_OFFSET
  std::uint8_t fill() const override { return 0x00; }
  Bytes hypercallStub() const override {
    return {0x7f, 0xe0, 0x00, 0x08, 0x4e, 0x80, 0x00, 0x20}; // tw 31,0,0; blr
  }
  unsigned prologueSize() const override { return 12; }

  Bytes tracedFunction(std::uint64_t entry, std::span<const std::uint8_t> site) const override {
    CodeWriter c(arch_, entry);
    prologue(c);
    c.put(site);
    epilogue(c);
    return c.take();
  }

  Bytes worker(std::uint64_t entry, unsigned calls, std::span<const std::uint64_t> functions,
               std::span<const std::uint8_t> afterCall) const override {
    CodeWriter c(arch_, entry);
    prologue(c);
    c.word(0x38800000 | calls); // li r4,calls
    const std::uint64_t loop = c.here();
    for (std::uint64_t f : functions) {
      c.word(0x38630003); // addi r3,r3,3
      c.call(f);
      c.put(afterCall);
    }
    c.word(0x3884ffff); // addi r4,r4,-1
    c.word(0x2c040000); // cmpwi r4,0
    const auto disp = static_cast<std::uint32_t>(loop - c.here()) & 0xfffc;
    c.word(0x40820000 | disp); // bne loop
    epilogue(c);
    return c.take();
  }

  const ModuleTocSite *moduleTocSite() const override { return &toc_; }

private:
  static Bytes bigEndian(std::uint32_t w) {
    return {static_cast<std::uint8_t>(w >> 24), static_cast<std::uint8_t>(w >> 16),
            static_cast<std::uint8_t>(w >> 8), static_cast<std::uint8_t>(w)};
  }
  static void prologue(CodeWriter &c) {
    c.word(kStwuFrame);
    c.word(kMflrR0);
    c.word(kStwR0);
  }
  static void epilogue(CodeWriter &c) {
    c.word(kLwzR0);
    c.word(kMtlrR0);
    c.word(kPopFrame);
    c.word(kBlr);
  }
  const Arch &arch_;
  ModuleTocSite toc_;
};

} // namespace

std::unique_ptr<SnippetEmitter> makePpc32Snippets(const Arch &arch) {
  return std::make_unique<Ppc32Snippets>(arch);
}

} // namespace ftsim::arch
