// Boot: ftrace_process_locs (records, pages, the allocation line) and ftrace_update_code (every
// call site read, verified and turned into a nop; ftrace_bug on the three failure causes).

#include "FakeKernel.h"

#include "ftsim/arch/Image.h"
#include "ftsim/model/ImageBoot.h"

#include <gtest/gtest.h>

namespace ftsim::model {
namespace {

using test::FakeKernel;

TEST(BootTest, SeedFigure24683EntriesIn97PagesOnX86_64) {
  // The seed: "[ 0.139656] ftrace: allocating 24683 entries in 97 pages". 16-byte records, 256
  // per 4 KiB page: DIV_ROUND_UP(24683, 256) = 97, allocated as groups of 64 + 32 + 1 pages.
  const arch::Arch &x86 = arch::archByName("x86_64");
  arch::Image image = arch::syntheticImage(x86, 24683, 1);
  test::FakeMachinePort port;
  for (const auto &segment : image.segments) {
    port.addRegion(segment.addr, segment.bytes.size(), segment.executable);
    port.poke(segment.addr, segment.bytes);
  }
  PlainStorePatcher patcher(x86, port);
  FtraceConfig config;
  config.patcher = &patcher;
  config.port = &port;
  config.addresses.mcount = image.mcountAddr;
  config.symbolizer = imageSymbolizer(image);
  FtraceCore core(config);

  BootReport report = core.boot(imageBootOptions(image));
  EXPECT_EQ(report.allocationLine(), "ftrace: allocating 24683 entries in 97 pages");
  EXPECT_EQ(report.groups, 3u);
  EXPECT_EQ(core.records().pageCount(), 97u);
  ASSERT_EQ(core.records().pages().size(), 3u);
  EXPECT_EQ(core.records().pages()[0].order, 6u);
  EXPECT_EQ(core.records().pages()[1].order, 5u);
  EXPECT_EQ(core.records().pages()[2].order, 0u);
  EXPECT_EQ(report.converted, 24683u);
  EXPECT_TRUE(report.bugs.empty());
  // Every site is now the 5-byte nop, verified byte by byte.
  for (std::uint64_t site : image.mcountLocs)
    ASSERT_EQ(port.bytesAt(site, 5), x86.nop()) << std::hex << site;
  // Records are sorted by ip.
  std::uint64_t previous = 0;
  core.records().forEach([&](const DynFtrace &rec) {
    EXPECT_GT(rec.ip, previous);
    previous = rec.ip;
  });
}

TEST(BootTest, RecordLayoutMatchesSizeofDynFtrace) {
  EXPECT_EQ((RecordLayout{8, 0}).entrySize(), 16u);
  EXPECT_EQ((RecordLayout{8, 0}).entriesPerPage(), 256u);
  // ppc32: ip + flags + struct module *mod = 12 bytes, 341 per page.
  EXPECT_EQ((RecordLayout{4, 4}).entrySize(), 12u);
  EXPECT_EQ((RecordLayout{4, 4}).entriesPerPage(), 341u);
}

// A ppc32 patcher: the plain-store protocol with the powerpc dyn_arch_ftrace `mod` pointer (what
// the pointer holds is the target's business: Ppc32ModuleTest).
class Ppc32ModulePatcher : public PlainStorePatcher {
public:
  using PlainStorePatcher::PlainStorePatcher;
  unsigned archPrivateSize() const override { return 4; }
};

TEST(BootTest, Ppc32RecordsFit341PerPageAndNameTheirModule) {
  std::vector<FakeKernel::Function> functions;
  for (int i = 0; i < 700; ++i)
    functions.push_back({"fn_" + std::to_string(i), i >= 690 ? "ext4" : ""});
  FakeKernel kernel("ppc32", functions, 8);
  kernel.patcher = std::make_unique<Ppc32ModulePatcher>(kernel.arch, kernel.port);
  FtraceCore core(kernel.config(false));
  std::vector<std::uint64_t> locs = kernel.mcountLoc();
  BootOptions options;
  options.mcountLocs = locs;
  BootReport report = core.boot(options);
  // 700 / 341 -> 3 pages: one group of 2 pages (682 records), one of 1 page.
  EXPECT_EQ(report.allocationLine(), "ftrace: allocating 700 entries in 3 pages");
  EXPECT_EQ(report.groups, 2u);
  EXPECT_EQ(core.records().pages()[0].records.size(), 682u);
  const DynFtrace *last = core.lookupRecord(kernel.site("fn_699"));
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(kernel.port.bytesAt(kernel.site("fn_3"), 4), (arch::Bytes{0x60, 0x00, 0x00, 0x00}));
  // available_filter_functions: one name per line in record order, modules as " [mod]".
  const std::string listing = core.availableFilterFunctions();
  EXPECT_EQ(listing.substr(0, 15), "fn_0\nfn_1\nfn_2\n");
  EXPECT_NE(listing.find("\nfn_699 [ext4]\n"), std::string::npos);
}

TEST(BootTest, SkipsLinkerPaddingAndNonTextAndCorrectsThePageCount) {
  std::vector<FakeKernel::Function> functions;
  for (int i = 0; i < 300; ++i)
    functions.push_back({"f" + std::to_string(i), ""});
  FakeKernel kernel("x86_64", functions);
  std::vector<std::uint64_t> locs = kernel.mcountLoc();
  locs.resize(257);                              // 257 real sites...
  locs.insert(locs.end(), 40, std::uint64_t{0}); // ...and padding: 297 entries, 2 pages asked
  FtraceCore core(kernel.config());
  BootOptions options;
  options.mcountLocs = locs;
  BootReport report = core.boot(options);
  EXPECT_EQ(report.skipped, 40u);
  EXPECT_EQ(report.allocationLine(), "ftrace: allocating 257 entries in 2 pages");

  FakeKernel small("x86_64", test::names({"a", "b"}));
  std::vector<std::uint64_t> padded = small.mcountLoc();
  padded.insert(padded.end(), 598, std::uint64_t{0}); // 600 entries: groups of 2 + 1 pages
  FtraceCore core2(small.config());
  BootOptions options2;
  options2.mcountLocs = padded;
  BootReport report2 = core2.boot(options2);
  // The zeros sort first and are skipped; the 1-page group stays unused and is given back.
  EXPECT_EQ(report2.allocationLine(), "ftrace: allocating 2 entries in 2 pages");
  EXPECT_TRUE(core2.warnings().empty());
  EXPECT_EQ(report2.groups, 1u);
}

TEST(BootTest, EmptyTableDisablesFtrace) {
  FakeKernel kernel("x86_64", test::names({"a"}));
  FtraceCore core(kernel.config());
  BootReport report = core.boot(BootOptions{});
  EXPECT_EQ(report.allocationLine(), "ftrace: No functions to be traced?");
  EXPECT_TRUE(core.dead());
}

class BootBugTest : public ::testing::Test {
protected:
  BootBugTest() : kernel("x86_64", test::names({"schedule", "yield", "put_page", "vfs_setpos"})) {}

  BootReport boot(bool stopAtFirstBug) {
    core = std::make_unique<FtraceCore>(kernel.config());
    locs = kernel.mcountLoc();
    BootOptions options;
    options.mcountLocs = locs;
    options.stopAtFirstBug = stopAtFirstBug;
    return core->boot(options);
  }

  FakeKernel kernel;
  std::unique_ptr<FtraceCore> core;
  std::vector<std::uint64_t> locs;
};

TEST_F(BootBugTest, MismatchReportsActualAndExpectedBytesAndKillsFtrace) {
  const std::uint64_t yield = kernel.site("yield");
  const arch::Bytes expected = kernel.arch.call(yield, kernel.addresses.mcount).bytes;
  kernel.port.poke(yield, {0x0f, 0x1f, 0x2e, 0x00, 0x00}); // the slide's torn bytes
  BootReport report = boot(true);
  ASSERT_EQ(report.bugs.size(), 1u);
  const FtraceBugReport &bug = report.bugs[0];
  EXPECT_EQ(bug.failure, PatchStatus::Mismatch);
  EXPECT_EQ(bug.text(), "------------[ ftrace bug ]------------\n"
                        "ftrace failed to modify \n"
                        "[<ffffffff81000040>] yield+0x0/0x40\n"
                        " actual:   0f:1f:2e:00:00\n"
                        " expected: " +
                            colonHex(expected) +
                            "\n"
                            "Initializing ftrace call sites\n"
                            "ftrace record flags: 0\n"
                            " (0)    \n"
                            " expected tramp: ffffffff81000140\n");
  // Left alone, and Linux's ftrace_bug kills ftrace: nothing after it is converted.
  EXPECT_EQ(kernel.port.bytesAt(yield, 5), (arch::Bytes{0x0f, 0x1f, 0x2e, 0x00, 0x00}));
  EXPECT_TRUE(core->dead());
  EXPECT_EQ(report.converted, 1u); // schedule only
  EXPECT_EQ(kernel.port.bytesAt(kernel.site("put_page"), 5),
            kernel.arch.call(kernel.site("put_page"), kernel.addresses.mcount).bytes);
  FtraceOps ops("tracer", [](auto, auto, auto &, auto) {});
  EXPECT_THROW(core->registerFunction(ops), FtraceError);
}

TEST_F(BootBugTest, ReadFaultIsReportedAsFaultedOnModifying) {
  kernel.port.unreadable.insert(kernel.site("put_page"));
  BootReport report = boot(true);
  ASSERT_EQ(report.bugs.size(), 1u);
  EXPECT_EQ(report.bugs[0].failure, PatchStatus::ReadFault);
  // kernel/trace/ftrace.c prints "faulted on modifying" for -EFAULT; print_ip_ins cannot read.
  EXPECT_EQ(report.bugs[0].text().rfind("------------[ ftrace bug ]------------\n"
                                        "ftrace faulted on modifying \n"
                                        "[<ffffffff81000080>] put_page+0x0/0x40\n"
                                        "Initializing ftrace call sites\n",
                                        0),
            0u);
  EXPECT_FALSE(report.bugs[0].actual.has_value());
}

TEST_F(BootBugTest, WriteFaultIsReportedAsFaultedOnWriting) {
  kernel.port.unwritable.insert(kernel.site("vfs_setpos"));
  BootReport report = boot(true);
  ASSERT_EQ(report.bugs.size(), 1u);
  EXPECT_EQ(report.bugs[0].failure, PatchStatus::WriteFault);
  EXPECT_NE(report.bugs[0].text().find("ftrace faulted on writing \n[<ffffffff810000c0>] "
                                       "vfs_setpos+0x0/0x40\n"),
            std::string::npos);
  EXPECT_NE(report.bugs[0].text().find("Initializing ftrace call sites\n"), std::string::npos);
  EXPECT_EQ(report.converted, 3u);
}

TEST_F(BootBugTest, DiagnosticModeReportsEveryBadSiteAndDisablesItsRecord) {
  kernel.port.unreadable.insert(kernel.site("schedule"));
  kernel.port.poke(kernel.site("yield"), kernel.arch.nop());
  kernel.port.unwritable.insert(kernel.site("vfs_setpos"));
  BootReport report = boot(false);
  ASSERT_EQ(report.bugs.size(), 3u);
  EXPECT_EQ(report.bugs[0].failure, PatchStatus::ReadFault);
  EXPECT_EQ(report.bugs[1].failure, PatchStatus::Mismatch);
  EXPECT_EQ(report.bugs[2].failure, PatchStatus::WriteFault);
  EXPECT_EQ(report.converted, 1u);
  EXPECT_FALSE(core->dead());
  EXPECT_TRUE(core->lookupRecord(kernel.site("yield"))->has(RecordFlag::Disabled));
  EXPECT_FALSE(core->lookupRecord(kernel.site("put_page"))->has(RecordFlag::Disabled));
}

TEST(BootTest, WeakFunctionRecordsAreDisabledAndListedAsInvalid) {
  // x86 fentry: FTRACE_MCOUNT_MAX_OFFSET = ENDBR_INSN_SIZE. A site 0x10 into a symbol is the
  // leftover of a discarded weak function.
  FakeKernel kernel("x86_64", test::names({"schedule", "yield"}));
  FtraceCore core(kernel.config());
  std::vector<std::uint64_t> locs = kernel.mcountLoc();
  const std::uint64_t stray = kernel.functionStart(1) + 0x10;
  kernel.port.poke(stray, kernel.arch.call(stray, kernel.addresses.mcount).bytes);
  locs.push_back(stray);
  BootOptions options;
  options.mcountLocs = locs;
  options.maxMcountOffset = 4;
  core.boot(options);
  EXPECT_TRUE(core.lookupRecord(stray)->has(RecordFlag::Disabled));
  EXPECT_EQ(core.availableFilterFunctions(), "schedule\nyield\n__ftrace_invalid_address___16\n");
}

} // namespace
} // namespace ftsim::model
