// Boot of the built-in guest images (real gcc -pg / -mfentry output, our recordmcount, linked like
// vmlinux): every call site becomes the ISA's nop, verified byte by byte, and nothing else in the
// image changes.

#include "ftsim/model/ImageBoot.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Image.h"
#include "ftsim/model/FtraceCore.h"

#include <gtest/gtest.h>

#include <set>

using namespace ftsim;

namespace {

struct Flavour {
  const char *name;
  const char *hook;
  std::uint64_t siteOffset; // where the site sits in a function whose prologue is standard
};

class ImageBootTest : public ::testing::TestWithParam<Flavour> {};

} // namespace

TEST_P(ImageBootTest, EverySiteBecomesANopAndNothingElseChanges) {
  const Flavour flavour = GetParam();
  const std::string path = std::string(FTSIM_GUEST_DIR) + "/" + flavour.name + "/kernel.elf";
  arch::Image image = arch::loadImage(path);
  const arch::Image original = image;
  const arch::Arch &isa = *image.arch;
  ASSERT_NE(image.mcountAddr, 0u);
  EXPECT_EQ(image.symbolAt(image.mcountAddr)->name, flavour.hook);

  // Before boot, every table entry is a call to the hook.
  std::set<std::uint64_t> sites(image.mcountLocs.begin(), image.mcountLocs.end());
  ASSERT_GE(sites.size(), 30u);
  for (std::uint64_t site : sites) {
    arch::Bytes bytes(isa.siteSize());
    ASSERT_TRUE(image.read(site, bytes));
    EXPECT_EQ(isa.callTarget(site, bytes), image.mcountAddr) << std::hex << site;
  }

  model::StaticBoot booted(image);
  const model::ImageBoot &boot = booted.result();
  model::FtraceCore &core = booted.core();
  EXPECT_EQ(boot.bugText, "");
  EXPECT_EQ(boot.report.entries, sites.size());
  EXPECT_EQ(boot.report.converted, sites.size());
  EXPECT_EQ(boot.report.allocationLine(),
            "ftrace: allocating " + std::to_string(sites.size()) + " entries in 1 pages");

  // Byte by byte: sites hold the nop, every other byte of every segment is as linked.
  const arch::Bytes nop = isa.nop();
  std::size_t siteBytes = 0;
  for (std::size_t s = 0; s < image.segments.size(); ++s) {
    const auto &now = image.segments[s];
    const auto &before = original.segments[s];
    ASSERT_EQ(now.bytes.size(), before.bytes.size());
    for (std::size_t i = 0; i < now.bytes.size(); ++i) {
      const std::uint64_t addr = now.addr + i;
      auto it = sites.upper_bound(addr);
      const bool inSite = it != sites.begin() && addr < *std::prev(it) + isa.siteSize();
      if (inSite) {
        EXPECT_EQ(now.bytes[i], nop[addr - *std::prev(it)]) << std::hex << addr;
        ++siteBytes;
      } else {
        EXPECT_EQ(now.bytes[i], before.bytes[i]) << std::hex << addr;
      }
    }
  }
  EXPECT_EQ(siteBytes, sites.size() * isa.siteSize());

  // Every traced function of the guest's source is listed, with its site where the flavour puts
  // it (fentry: the first instruction; mcount: after the prologue; ppc32: after mflr/stw).
  const std::string functions = core.availableFilterFunctions();
  for (const char *fn :
       {"schedule", "__schedule", "_cond_resched", "yield", "preempt_schedule_irq", "put_page",
        "vfs_setpos", "default_llseek", "rcu_read_lock", "_raw_spin_lock", "start_kernel_once",
        "unlikely_error_path", "arch_cpu_idle_prepare", "workload_sched"}) {
    EXPECT_NE(functions.find(std::string(fn) + "\n"), std::string::npos) << fn;
    const arch::ImageSymbol *sym = image.findSymbol(fn);
    ASSERT_NE(sym, nullptr) << fn;
    bool found = false;
    for (std::uint64_t site : sites)
      found |= site >= sym->addr && site < sym->addr + sym->size;
    EXPECT_TRUE(found) << fn;
  }
  const arch::ImageSymbol *yield = image.findSymbol("yield");
  EXPECT_TRUE(sites.count(yield->addr + flavour.siteOffset)) << flavour.name;
}

INSTANTIATE_TEST_SUITE_P(BuiltInImages, ImageBootTest,
                         ::testing::Values(Flavour{"x86_64-fentry", "__fentry__", 0},
                                           Flavour{"x86_64-mcount", "mcount", 4},
                                           Flavour{"ppc32-mcount", "_mcount", 8}),
                         [](const auto &param) {
                           std::string n = param.param.name;
                           for (char &c : n)
                             if (c == '-')
                               c = '_';
                           return n;
                         });

// Found by tests/fuzz (ftsim_fuzz_image, `ftsim boot --image`): an image whose text lies more than
// 2 GiB from its profiling hook made the expected `call` unencodable, and boot aborted with an
// internal error. As in Linux (ftrace_make_nop: -EINVAL), the site is an ftrace bug.
TEST(ImageBoot, ASiteOutOfReachOfItsHookIsAnFtraceBugNotACrash) {
  arch::Image image = arch::loadImage(std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf");
  ASSERT_FALSE(image.mcountLocs.empty());
  const std::uint64_t shift = 0x7400000081000000ull - image.textStart();
  for (auto &segment : image.segments)
    if (segment.executable)
      segment.addr += shift;
  for (auto &site : image.mcountLocs)
    site += shift;
  model::StaticBoot booted(image);
  ASSERT_FALSE(booted.result().report.bugs.empty());
  // ftrace_bug(-EINVAL): "ftrace failed to modify" with the bytes the site holds.
  EXPECT_NE(booted.result().bugText.find("ftrace failed to modify"), std::string::npos)
      << booted.result().bugText;
}
