// The edges a new user meets: inputs that are not files or never end, negative and zero counts,
// flags that cannot apply, and output files nobody asked for. Each case was a crash, a run that
// never ended, a silent default or a silently overwritten file before it became an error.

#include "ftsim/arch/Image.h"

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using ftsim::test::CommandRun;
using ftsim::test::countLines;
using ftsim::test::runFtsim;

void expectOneLineError(const std::string &args, const std::string &named) {
  const CommandRun r = runFtsim(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_EQ(countLines(r.out), 1u) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(named), std::string::npos) << args << "\n" << r.out;
}

std::string slurp(const std::filesystem::path &path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

// Devices and directories were read without limit (/dev/zero until memory ran out).
TEST(CliEdges, OnlyRegularFilesAreReadAsInput) {
  expectOneLineError("mcount /dev/zero", "/dev/zero: is a device, not a regular file");
  expectOneLineError("boot --arch x86_64 --image /dev/zero", "/dev/zero: is a device");
  expectOneLineError("trace --arch x86_64 --image /dev/urandom", "/dev/urandom: is a device");
  expectOneLineError("check --scenario /dev/zero", "/dev/zero: is a device");
  expectOneLineError("replay /dev/zero", "/dev/zero: is a device");
  expectOneLineError("check --scenario " + std::filesystem::temp_directory_path().string(),
                     "is a directory");
}

// CLI11 read "-3" into an unsigned count as 2^64-3: runs that never ended, seeds that wrapped.
TEST(CliEdges, NegativeAndZeroCountsAreRefused) {
  expectOneLineError("check --protocol int3 --explore random --runs -3",
                     "--runs: '-3' is negative");
  expectOneLineError("check --protocol int3 --explore random --runs 2 --seed -1",
                     "--seed: '-1' is negative");
  expectOneLineError("check --protocol int3 --max-executions -5", "--max-executions");
  expectOneLineError("check --protocol int3 --explore random --runs 0", "--runs 0");
  expectOneLineError("fuzz --runs -1", "--runs");
  expectOneLineError("fuzz --runs 0", "--runs");
  expectOneLineError("fuzz --seconds 0", "--seconds");
  expectOneLineError("trace --arch x86_64 --seed -1", "--seed");
  expectOneLineError("conformance --batches 0", "--batches 0");
  expectOneLineError("conformance --batches -2", "--batches: '-2' is negative");
  expectOneLineError("conformance --batches 99999999999", "--batches 99999999999: at most 1000000");
}

// CLI11 saturated a count above 2^64-1 at 2^64-1 without a word (a run of 2^64-1 random schedules
// that never ended, a seed the user did not give), and read "010" as octal 8 (a search of eight
// sites for ten, a machine of eight CPUs).
TEST(CliEdges, IntegersAreDecimalAndWithinRange) {
  expectOneLineError("check --protocol int3 --explore random --runs 99999999999999999999",
                     "--runs: '99999999999999999999' is out of range");
  expectOneLineError("check --protocol int3 --explore random --runs 2 --seed 18446744073709551616",
                     "--seed: '18446744073709551616' is out of range");
  expectOneLineError("check --protocol int3 --bound -99999999999999999999", "--bound");
  expectOneLineError("check --protocol int3 --sites 010", "--sites: '010' starts with 0");
  expectOneLineError("trace --arch x86_64 --cpus 010", "--cpus: '010' starts with 0");
  expectOneLineError("check --protocol int3 --max-executions 0x10",
                     "--max-executions: '0x10' is not a decimal integer");
  expectOneLineError("check --protocol int3 --bound 0x1", "--bound: '0x1' is not a decimal");
  // The largest value itself is a seed like any other.
  const CommandRun r = runFtsim(
      "check --protocol int3 --explore random --runs 1 --seed 18446744073709551615 --json");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("seed 18446744073709551615"), std::string::npos) << r.out;
}

// Infinity was refused as "not above 0", and NaN was taken where a range check alone guarded.
TEST(CliEdges, CheckpointIntervalsOutsideTheirRangeSaySo) {
  const ftsim::test::TempDir dir;
  const std::string cp = dir / "cp.json";
  for (const char *every : {"0", "-1", "2000000"})
    expectOneLineError("check --protocol int3 --checkpoint " + cp + " --checkpoint-every " + every,
                       "use a number of seconds above 0 and at most 1000000");
  for (const char *every : {"inf", "nan"})
    expectOneLineError("check --protocol int3 --checkpoint " + cp + " --checkpoint-every " + every,
                       "--checkpoint-every: '" + std::string(every) + "' is not a finite number");
  EXPECT_FALSE(std::filesystem::exists(cp)); // nothing written where the run was refused
  // --resume alone saves to the file it resumes from; a directory there named --checkpoint,
  // which the command line did not hold.
  expectOneLineError("check --protocol int3 --resume " + dir.string(),
                     "--resume " + dir.string() + ": exists and is not a regular file");
  // CLI11's own range check let NaN through: fuzz ran until it found something.
  expectOneLineError("fuzz --seconds nan", "--seconds: 'nan' is not a finite number");
  expectOneLineError("repro --first-times --first-limit nan torn-nop-to-call", "--first-limit");
}

// --depth was taken as given, outside pct's 1-20 and by explorers that have no bug depth.
TEST(CliEdges, PctDepthIsCheckedLikeTheScenarioFilesOwn) {
  expectOneLineError("check --protocol int3 --explore pct --depth 0", "--depth 0");
  expectOneLineError("check --protocol int3 --explore pct --depth 21", "--depth 21");
  expectOneLineError("check --protocol int3 --explore random --depth 3",
                     "--depth belongs to pct search, not to random");
}

TEST(CliEdges, FlagsThatCannotApplyAreErrorsNamingThem) {
  expectOneLineError("fuzz --runs 2 --seconds 3", "--seconds excludes --runs");
  expectOneLineError("check --protocol int3 --runs 5", "--runs");
  expectOneLineError("check --tramp-free rcu-tasks --cpus 3", "--cpus");
  expectOneLineError("protocols --arch ppc64", "--arch ppc64 has no patch protocols");
  expectOneLineError("prove --arch ppc32 --store byte", "--store byte");
  expectOneLineError("prove --arch ppc32 --site-offset 3", "--site-offset 3");
  expectOneLineError("conformance --changes some", "--changes 'some'");
  expectOneLineError("conformance --store nibble", "unknown store model 'nibble'");
  expectOneLineError("conformance --kernel 6.12 --kernel-tree /tmp",
                     "--kernel and --kernel-tree exclude each other");
}

// ppc32 proofs restricted to one offset used to add byte stores (no real powerpc has them) and
// fail Linux's protocol; fuzz on ppc32 booted with x86's int3 protocol and refused to start.
TEST(CliEdges, Ppc32RestrictedProofsAndFuzzUseTheIsasOwnModels) {
  const CommandRun prove = runFtsim("prove --arch ppc32 --site-offset 4");
  EXPECT_EQ(prove.status, 0) << prove.out;
  EXPECT_EQ(prove.out.find("store=byte"), std::string::npos) << prove.out;
  const CommandRun fuzz = runFtsim("fuzz --arch ppc32 --runs 1 --quiet --cex /dev/null/x");
  EXPECT_EQ(fuzz.status, 2) << fuzz.out; // the output path is refused before any run
  const CommandRun ok = runFtsim("fuzz --arch ppc32 --runs 1 --quiet");
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("NO VIOLATION in 1 run"), std::string::npos) << ok.out;
}

// check wrote ./ftsim-cex.json over whatever was there; an unwritable --cex was found out only
// after the whole exploration.
TEST(CliEdges, CounterexamplesNeverOverwriteAnUnnamedFile) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  { std::ofstream(dir / "ftsim-cex.json") << "mine\n"; }
  const CommandRun r = runFtsim("check --protocol int3-nosync1 --fetch stale --quiet", dir);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(slurp(dir / "ftsim-cex.json"), "mine\n");
  EXPECT_NE(r.out.find("ftsim-cex-1.json"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "ftsim-cex-1.json"));

  const ftsim::test::TempDir quietTemp;
  const std::filesystem::path &quiet = quietTemp.path();
  EXPECT_EQ(runFtsim("check --protocol int3 --fetch stale --quiet", quiet).status, 0);
  EXPECT_TRUE(std::filesystem::is_empty(quiet)) << "a verified run writes nothing";

  const CommandRun unwritable =
      runFtsim("check --protocol int3-nosync1 --fetch stale --cex /nonexistent/dir/x.json");
  EXPECT_EQ(unwritable.status, 2) << unwritable.out;
  EXPECT_EQ(countLines(unwritable.out), 1u) << unwritable.out;
  EXPECT_NE(unwritable.out.find("--cex /nonexistent/dir/x.json"), std::string::npos);
  expectOneLineError("check --protocol int3 --chrome " +
                         std::filesystem::temp_directory_path().string(),
                     "--chrome");
}

// A guest that never finishes (here workload_sched jumping back to its own traced entry forever)
// ran for 35 s and grew to 6 GB: the machine recorded every event and the kernel every callback.
// The run stops at --max-events, says so, and keeps no per-event record.
TEST(CliEdges, ARunawayGuestStopsAtTheEventBudgetAndSaysSo) {
  const std::string source = std::string(FTSIM_GUEST_DIR) + "/x86_64-fentry/kernel.elf";
  const ftsim::arch::Image image = ftsim::arch::loadImage(source);
  const ftsim::arch::ImageSymbol *fn = image.findSymbol("workload_sched");
  ASSERT_NE(fn, nullptr);
  std::vector<std::uint8_t> head(16);
  ASSERT_TRUE(image.read(fn->addr, head));
  std::string bytes = slurp(source);
  const std::size_t at = bytes.find(std::string(head.begin(), head.end()));
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(std::string(head.begin(), head.end()), at + 1), std::string::npos);
  bytes[at + 5] = '\xeb'; // after the fentry site: jmp back to it (rel8 -7)
  bytes[at + 6] = '\xf9';
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const auto path = dir / "runaway.elf";
  std::ofstream(path, std::ios::binary) << bytes;
  const CommandRun r = runFtsim("trace --arch x86_64 --cpus 2 --workload sched --max-events "
                                "300000 --image " +
                                path.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("did not finish within --max-events 300000 events"), std::string::npos)
      << r.out;
  expectOneLineError("trace --arch x86_64 --max-events 0", "--max-events");
}

// A scenario's code.image that was not an image was reported as the --image and --arch flags,
// which the command line did not hold; it names the scenario and its key now.
TEST(CliEdges, ABadImageIsNamedAsTheUserWroteIt) {
  expectOneLineError("boot --arch x86_64 --image nosuch",
                     "--image nosuch: no such file, and not a built-in image (built-in: ");
  expectOneLineError("boot --arch x86_64 --image ppc32-pfe",
                     "--image ppc32-pfe is a built-in image for another architecture than --arch "
                     "x86_64");
  const ftsim::test::TempDir dir;
  for (const auto &[image, says] :
       {std::pair<std::string, std::string>{
            "nosuch", "img: code.image 'nosuch': no such file, and not a built-in image"},
        {"ppc32-pfe", "img: code.image 'ppc32-pfe' is a built-in image for another architecture "
                      "than its arch x86_64"}}) {
    std::ofstream(dir / "img.toml", std::ios::trunc)
        << "arch = \"x86_64\"\nprotocol = \"int3\"\ncpus = 2\n[code]\nkind = \"kernel\"\n"
        << "image = \"" << image << "\"\n[engine]\nworkloads = [\"sched\"]\n";
    expectOneLineError("check --scenario " + (dir / "img.toml"), says);
  }
}

// `mcount` on a -fpatchable-function-entry object printed nothing at all: its sites are in
// __patchable_function_entries, and an object without any site says so.
TEST(CliEdges, McountListsPatchableEntriesAndSaysWhenThereAreNoSites) {
  const std::string dir = std::string(FTSIM_GUEST_DIR) + "/ppc32-pfe/";
  const CommandRun pfe = runFtsim("mcount " + dir + "mm/swap.o");
  EXPECT_EQ(pfe.status, 0) << pfe.out;
  EXPECT_NE(pfe.out.find("&put_page + 0x0"), std::string::npos) << pfe.out;
  const CommandRun none = runFtsim("mcount " + dir + "entry.o");
  EXPECT_EQ(none.status, 0) << none.out;
  EXPECT_NE(none.out.find("no profiling call sites"), std::string::npos) << none.out;
}

// An ftsim copied out of its build tree answered a scenario on a kernel tree's own code with the
// shell's "sh: 1: .../linux-objects: not found": the script that builds the tree's objects lives
// beside an installed ftsim, not inside the executable. The copy now says what is missing.
TEST(CliEdges, ACopiedFtsimSaysItCannotBuildAKernelTreesObjects) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  std::filesystem::create_directories(dir / "bin");
  std::filesystem::copy_file(FTSIM_EXE, dir / "bin/ftsim");
  std::ofstream(dir / "linux.toml") << "name = \"copied\"\narch = \"x86_64\"\n"
                                       "protocol = \"int3\"\ncpus = 2\n"
                                       "[code]\nkind = \"linux\"\nkernel = \"6.12\"\n"
                                       "[[sites]]\ntransition = \"nop-to-call\"\n";
  const std::string cmd = "FTSIM_GUEST_DIR='" + std::string(FTSIM_GUEST_DIR) + "' timeout 60 '" +
                          (dir / "bin/ftsim").string() + "' check --scenario '" +
                          (dir / "linux.toml").string() + "' 2>&1";
  const CommandRun r = ftsim::test::runCommand(cmd);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(countLines(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("kbuild/linux-objects is missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reinstall ftsim"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sh: "), std::string::npos) << r.out;
}
