// Building a tree's objects with its Kbuild and linking the guest image (linux/kbuild,
// LinuxGuest.h): the cached 6.12 build, and the one-line diagnoses of bad trees.

#include "LinuxTestSupport.h"
#include "TempDir.h"

#include "ftsim/arch/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace ftsim::linuxk {
namespace {

using test::guest612;

std::string errorOf(const LinuxTreeRequest &r) {
  try {
    buildLinuxGuest(r);
  } catch (const FatalError &e) {
    return e.what();
  }
  return "";
}

TEST(LinuxGuest, TheDebianTreeBuildsIntoAGuestThatNamesItsVersion) {
  const LinuxGuest &g = guest612();
  EXPECT_EQ(g.version.rfind("6.12.", 0), 0u) << g.version;
  EXPECT_NE(g.describe().find("Linux 6.12."), std::string::npos);
  EXPECT_EQ(g.textPokeArgs, 4);
  for (const char *f : {"text_poke_queue", "text_poke_finish", "poke_int3_handler", "__text_poke",
                        "insn_decode", "_stext", "ftsim_linux_batch"})
    EXPECT_NE(g.symbol(f), 0u) << f;
  // The traced workload's nine sites (traced_a to traced_i) are the image's __mcount_loc table.
  EXPECT_EQ(g.image.mcountLocs.size(), 9u);
  // Undefined symbols got stubs; the shims' symbols did not.
  EXPECT_FALSE(g.functionStubs.empty());
  EXPECT_EQ(std::count(g.functionStubs.begin(), g.functionStubs.end(), "memcpy"), 0);
  EXPECT_EQ(std::count(g.functionStubs.begin(), g.functionStubs.end(), "on_each_cpu_cond_mask"), 0);
  const std::string stub = g.functionStubs.front();
  EXPECT_EQ(g.stubAt(g.symbol(stub)), stub);
  EXPECT_EQ(g.stubAt(g.symbol("text_poke_queue")), "");
  // The configuration is the fragment's.
  std::ifstream config(std::filesystem::path(g.dir) / "config");
  std::string text((std::istreambuf_iterator<char>(config)), {});
  EXPECT_NE(text.find("CONFIG_DYNAMIC_FTRACE=y"), std::string::npos);
  EXPECT_NE(text.find("CONFIG_PREEMPT=y"), std::string::npos);
  EXPECT_EQ(text.find("CONFIG_PARAVIRT=y"), std::string::npos);
}

TEST(LinuxGuest, ASecondBuildIsTheCachedOne) {
  const LinuxGuest again = buildLinuxGuest({"6.12", "", FTSIM_LINUX_TEST_CACHE});
  EXPECT_EQ(again.dir, guest612().dir);
}

TEST(LinuxGuest, BadTreesAreOneLineNamingTheTree) {
  const ftsim::test::TempDir scratch;
  const auto file = scratch.path() / "file";
  std::ofstream(file) << "not a tree\n";
  std::string e = errorOf({"", file.string(), (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("not a directory"), std::string::npos) << e;
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;

  e = errorOf({"", (scratch.path() / "missing").string(), (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;

  const auto empty = scratch.path() / "empty";
  std::filesystem::create_directories(empty);
  e = errorOf({"", empty.string(), (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("not a Linux kernel tree"), std::string::npos) << e;

  // A kernel tree of another architecture.
  const auto arm = scratch.path() / "arm";
  std::filesystem::create_directories(arm / "scripts" / "kconfig");
  std::filesystem::create_directories(arm / "arch" / "arm64" / "configs");
  std::ofstream(arm / "Makefile") << "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n";
  std::ofstream(arm / "Kconfig") << "\n";
  e = errorOf({"", arm.string(), (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("not an x86-64 tree"), std::string::npos) << e;

  // An x86 tree whose alternative.c lacks the batch functions (pre-5.6 or post-6.15 names).
  std::filesystem::create_directories(arm / "arch" / "x86" / "configs");
  std::filesystem::create_directories(arm / "arch" / "x86" / "kernel");
  std::ofstream(arm / "arch" / "x86" / "configs" / "x86_64_defconfig") << "\n";
  std::ofstream(arm / "arch" / "x86" / "kernel" / "alternative.c")
      << "void smp_text_poke_batch_finish(void) {}\n";
  e = errorOf({"", arm.string(), (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("lacks text_poke_queue()"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;

  e = errorOf({"5.4", "", (scratch.path() / "cache").string()});
  EXPECT_NE(e.find("known versions are 6.1 and 6.12"), std::string::npos) << e;
  // Nothing was left in the cache by the failures.
  EXPECT_FALSE(std::filesystem::exists(scratch.path() / "cache" / "obj") &&
               !std::filesystem::is_empty(scratch.path() / "cache" / "obj"));
}

} // namespace
} // namespace ftsim::linuxk
