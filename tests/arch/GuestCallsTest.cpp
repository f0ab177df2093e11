// The guest's functions stay calls in every built guest, whatever the compiler: a live patch or a
// tracer acts on a function only when its callers call it. GCC 14 proved posix_cpu_timer_set free
// of side effects and deleted workload_timers' 16 calls unless the guest's functions are marked
// noipa (corpora/guest/include/guest.h); these tests fail on such folded code.

#include "common/ElfRelocatable.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Image.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace ftsim;

namespace {

struct Call {
  const char *caller;
  const char *callee;
  const char *object; // the caller's object, under the flavour's folder
};

// Calls the tests and scenarios rely on: the livepatched function, the functions the tracefs
// tests filter on and the overhead loop's callee.
const Call kCalls[] = {
    {"workload_timers", "posix_cpu_timer_set", "kernel/livepatch"},
    {"workload_sched", "ktime_get", "lib/workloads"},
    {"workload_sched", "__accumulate_pelt_segments", "lib/workloads"},
    {"workload_tight", "decay_load", "lib/workloads"},
    {"workload_boot", "start_kernel_once", "lib/workloads"},
};

std::string guestDir(const std::string &flavour) {
  return std::string(FTSIM_GUEST_DIR) + "/" + flavour;
}

// Direct calls from `caller` to `callee` in a linked image, found by decoding the caller with
// Capstone and reading each instruction's target.
std::size_t callSitesInImage(const arch::Image &image, const Call &call) {
  const arch::ImageSymbol *caller = image.findSymbol(call.caller);
  const arch::ImageSymbol *callee = image.findSymbol(call.callee);
  if (!caller || !callee || caller->size == 0)
    return 0;
  std::vector<std::uint8_t> code(caller->size);
  if (!image.read(caller->addr, code))
    return 0;
  std::size_t sites = 0;
  for (const arch::Arch::Insn &insn : image.arch->disassemble(code, caller->addr)) {
    const auto bytes = std::span(code).subspan(insn.address - caller->addr, insn.size);
    if (image.arch->callTarget(insn.address, bytes) == callee->addr)
      ++sites;
  }
  return sites;
}

// Call relocations against `callee` inside `caller` in a relocatable object.
std::size_t callSitesInObject(const std::string &path, const Call &call) {
  const arch::ElfRelocatable obj(path);
  const auto &sections = obj.sections();
  std::size_t sites = 0;
  for (std::size_t r = 1; r < sections.size(); ++r) {
    const GElf_Shdr &rel = sections[r].shdr;
    if (rel.sh_type != SHT_RELA && rel.sh_type != SHT_REL)
      continue;
    if (!(sections[rel.sh_info].shdr.sh_flags & SHF_EXECINSTR))
      continue;
    for (const auto &reloc : obj.relocations(r))
      if (obj.arch().isMcountCallReloc(reloc.type) &&
          obj.symbols()[reloc.symbol].name == call.callee &&
          obj.locate(rel.sh_info, reloc.offset).symbol == call.caller)
        ++sites;
  }
  return sites;
}

TEST(GuestCalls, EveryImageCallsTheFunctionsItsSourceCalls) {
  std::size_t images = 0;
  for (const arch::Arch *arch : arch::allArchs())
    for (const std::string &flavour : arch->guestFlavours()) {
      const arch::Image image = arch::loadImage(guestDir(flavour) + "/kernel.elf");
      ++images;
      for (const Call &call : kCalls)
        EXPECT_GE(callSitesInImage(image, call), 1u)
            << flavour << ": " << call.caller << " does not call " << call.callee;
    }
  // x86_64-fentry, x86_64-mcount, ppc32-mcount, ppc32-pfe.
  EXPECT_EQ(images, 4u);
}

TEST(GuestCalls, EveryFlavoursObjectsCallTheFunctionsTheirSourceCalls) {
  // Every flavour built, the static-only ppc64 one included.
  std::size_t flavours = 0;
  for (const auto &entry : std::filesystem::directory_iterator(FTSIM_GUEST_DIR)) {
    if (!std::filesystem::exists(entry.path() / "objects.txt"))
      continue;
    ++flavours;
    for (const Call &call : kCalls)
      EXPECT_GE(callSitesInObject((entry.path() / call.object).string() + ".o", call), 1u)
          << entry.path().filename().string() << ": " << call.caller << " does not call "
          << call.callee;
  }
  EXPECT_EQ(flavours, 5u);
}

// The checks above fail on code without the call: an image whose call to posix_cpu_timer_set
// is overwritten by the ISA's nop (what the folded code amounts to) has no call site left.
TEST(GuestCalls, ACallTurnedIntoANopIsNotCounted) {
  for (const arch::Arch *arch : arch::executableArchs()) {
    const std::string flavour = arch->guestFlavours().front();
    arch::Image image = arch::loadImage(guestDir(flavour) + "/kernel.elf");
    const Call &call = kCalls[0];
    const std::size_t before = callSitesInImage(image, call);
    ASSERT_GE(before, 1u) << flavour;
    const arch::ImageSymbol *caller = image.findSymbol(call.caller);
    const std::uint64_t callee = image.findSymbol(call.callee)->addr;
    std::vector<std::uint8_t> code(caller->size);
    ASSERT_TRUE(image.read(caller->addr, code));
    for (const arch::Arch::Insn &insn : arch->disassemble(code, caller->addr)) {
      const auto bytes = std::span(code).subspan(insn.address - caller->addr, insn.size);
      if (arch->callTarget(insn.address, bytes) == callee) {
        ASSERT_TRUE(image.write(insn.address, arch->nop()));
      }
    }
    EXPECT_EQ(callSitesInImage(image, call), 0u) << flavour;
  }
}

} // namespace
