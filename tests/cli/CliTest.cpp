// The ftsim command as a user runs it: its output, its exit status, and one-line errors for bad
// input.

#include "ftsim/arch/Image.h"

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

using ftsim::test::CommandRun;
using ftsim::test::runFtsim;

std::size_t lines(const std::string &s) { return ftsim::test::countLines(s); }

std::string guest(const std::string &rel) { return std::string(FTSIM_GUEST_DIR) + "/" + rel; }

} // namespace

TEST(Cli, BootReproducesTheSeedsAllocationLine) {
  const CommandRun r = runFtsim("boot --arch x86_64 --synthetic 24683");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "ftrace: allocating 24683 entries in 97 pages\n");
  // ppc32 records are 12 bytes (ip, flags, dyn_arch_ftrace.mod): 341 per page.
  EXPECT_EQ(runFtsim("boot --arch ppc32 --synthetic 24683").out,
            "ftrace: allocating 24683 entries in 73 pages\n");
}

TEST(Cli, BootOfBuiltInImagesListsTheirFunctions) {
  const std::pair<const char *, const char *> cases[] = {
      {"boot --arch x86_64", "x86_64-fentry"},
      {"boot --arch x86_64 --image x86_64-mcount", "x86_64-mcount"},
      {"boot --arch ppc32", "ppc32-mcount"},
      {"boot --arch ppc32 --image ppc32-pfe", "ppc32-pfe"}};
  for (const auto &[args, flavour] : cases) {
    // One record per __mcount_loc entry of the linked image, one line per record.
    const std::size_t sites =
        ftsim::arch::loadImage(guest(std::string(flavour) + "/kernel.elf")).mcountLocs.size();
    ASSERT_GT(sites, 30u);
    const CommandRun r = runFtsim(std::string(args) + " --list");
    EXPECT_EQ(r.status, 0) << args << "\n" << r.out;
    EXPECT_EQ(
        r.out.rfind("ftrace: allocating " + std::to_string(sites) + " entries in 1 pages\n", 0), 0u)
        << r.out;
    EXPECT_NE(r.out.find("\nschedule\n"), std::string::npos);
    EXPECT_NE(r.out.find("\n_raw_spin_lock\n"), std::string::npos);
    EXPECT_EQ(lines(r.out), sites + 1);
  }
}

TEST(Cli, McountListsSitesInTheSlidesForm) {
  const CommandRun r = runFtsim("mcount " + guest("x86_64-mcount/kernel/sched/core.o"));
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("&yield + 0x4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("&schedule + 0x"), std::string::npos) << r.out;
  const CommandRun f = runFtsim("mcount " + guest("x86_64-fentry/kernel/sched/core.o"));
  EXPECT_NE(f.out.find("&yield + 0x0\n"), std::string::npos) << f.out;
  const CommandRun p =
      runFtsim("mcount " + guest("ppc32-mcount/mm/swap.o") + " " + guest("ppc64-elfv2/mm/swap.o"));
  EXPECT_NE(p.out.find("&put_page + 0x8\n"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("ppc64-elfv2/mm/swap.o:\n"), std::string::npos) << p.out;
}

TEST(Cli, BadInputIsOneLineNamingItAndExitTwo) {
  const ftsim::test::TempDir dir;
  const std::string garbage = dir / "garbage.elf";
  {
    std::ofstream out(garbage);
    out << "\x7f"
           "ELF this is not really an object";
  }
  const std::string truncated = dir / "trunc.elf";
  std::filesystem::copy_file(guest("x86_64-fentry/kernel.elf"), truncated);
  std::filesystem::resize_file(truncated, 700);
  const std::pair<std::string, std::string> cases[] = {
      {"mcount " + garbage, garbage},
      {"boot --arch x86_64 --image " + garbage, garbage},
      {"boot --arch x86_64 --image " + truncated, truncated},
      {"boot --arch x86_64 --image /nonexistent/kernel.elf", "/nonexistent/kernel.elf"},
      {"boot --arch mips", "mips"},
      {"boot --arch x86_64 --frobnicate", "--frobnicate"},
      {"frobnicate", "frobnicate"},
      {"prove --protocol int4", "int4"},
      {"boot --arch ppc32 --image x86_64-fentry", "x86_64-fentry"},
      {"boot --arch x86_64 --synthetic 0", "0 functions"},
  };
  for (const auto &[args, named] : cases) {
    const CommandRun r = runFtsim(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(named), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
  }
}

TEST(Cli, ProveExitsZeroWhenAllHoldAndOneWithACounterexample) {
  const CommandRun ok = runFtsim("prove --arch x86_64 --protocol int3 --fetch stale --store byte");
  EXPECT_EQ(ok.status, 0) << ok.out;
  const CommandRun bad =
      runFtsim("prove --arch x86_64 --protocol direct --fetch stale --store word");
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("counterexample: a CPU executing the site"), std::string::npos);
}

TEST(Cli, CheckFindsAShippedScenarioByName) {
  // A bare name (with or without .toml) that is no file here names one of corpora/scenarios.
  for (const char *name :
       {"tramp-free-sched-sync-nopreempt", "tramp-free-sched-sync-nopreempt.toml"}) {
    const CommandRun r = runFtsim(std::string("check --quiet --scenario ") + name);
    EXPECT_EQ(r.status, 0) << name << "\n" << r.out;
    EXPECT_NE(r.out.find("VERIFIED"), std::string::npos) << r.out;
    // The verdict says which Linux commits it stands for and how faithful it is.
    EXPECT_NE(r.out.find("fidelity: faithful"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("12cce594fa8f"), std::string::npos) << r.out;
  }
  const CommandRun unknown = runFtsim("check --quiet --scenario no-such-scenario");
  EXPECT_EQ(unknown.status, 2) << unknown.out;
  EXPECT_EQ(lines(unknown.out), 1u) << unknown.out;
  EXPECT_NE(unknown.out.find("no-such-scenario"), std::string::npos) << unknown.out;
}

// powerpc as Linux patches it: Linux's protocol (patch_instruction(), no IPI) is what `--linux`
// selects and it verifies exhaustively; `mutants` does not kill it; check names the profile.
TEST(Cli, PowerpcLinuxProtocolVerifiesAndSurvivesTheMutationScore) {
  const CommandRun check = runFtsim("check --quiet --arch ppc32 --linux 6.12 --explore exhaustive");
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("ppc32 patch-instruction"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("VERIFIED"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("linux: Linux 6.12 (v6.12"), std::string::npos) << check.out;
  const CommandRun mutants = runFtsim("mutants --arch ppc32");
  EXPECT_EQ(mutants.status, 0) << mutants.out;
  EXPECT_NE(mutants.out.find("patch-instruction  survives every checker"), std::string::npos)
      << mutants.out;
  EXPECT_NE(mutants.out.find("4/4 mutants killed"), std::string::npos) << mutants.out;
  // The protocol mutant outside the table is found by check too (the others by the
  // ppc32-mflr-* scenario files, EngineScenarioTest).
  const ftsim::test::TempDir dir;
  const std::string cex = dir / "trap-first.json";
  const CommandRun trap =
      runFtsim("check --quiet --arch ppc32 --protocol word-trap-first --cex " + cex);
  EXPECT_EQ(trap.status, 1) << trap.out;
  EXPECT_NE(trap.out.find("VIOLATION live-patching"), std::string::npos) << trap.out;
  const CommandRun protocols = runFtsim("protocols --arch ppc32");
  EXPECT_NE(protocols.out.find("patch-instruction     [linux 6.12, 6.1, 4.19]"), std::string::npos)
      << protocols.out;
}
