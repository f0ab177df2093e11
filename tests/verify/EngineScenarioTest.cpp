// Engine-level scenarios (code kind "kernel", KernelHarness.h) through the library entry that
// `ftsim check --scenario FILE` uses (loadScenarioFile, KernelHarness, check): the published
// buggy variants are found by the oracle their papers page names,
// the fixed variants pass their stated runs, and an engine-level counterexample replays byte for
// byte (and an edited replay file is refused with a one-line error). Also the Chrome trace-event
// JSON of the replayed execution.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/harness/KernelHarness.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/replay/Timeline.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "Corpus.h"
#include "FatalMessage.h"
#include "TempDir.h"
#include <fmt/format.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ftsim::verify {
namespace {

using test::builtImagePath;
using test::corpusScenario; // what `ftsim check --scenario FILE` does before it explores

using test::fatalMessage;

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A file in this test process's own directory.
std::string tempPath(const std::string &leaf) {
  static const ftsim::test::TempDir dir;
  return dir / leaf;
}

// `s` searched as its file says (exploreOptionsFor): a function-trace-op counterexample whose
// message has `calledFor` ("ops 'X' called for F") and `withOp` ("with op 'Y', not its own 'X'").
ExploreResult expectFunctionTraceOp(KernelHarness &harness, const Scenario &s,
                                    const std::string &calledFor, const std::string &withOp) {
  ExploreResult r = explore(harness, exploreOptionsFor(s));
  EXPECT_TRUE(r.counterexample) << r.stats.executions;
  if (!r.counterexample)
    return r;
  const Violation &v = r.counterexample->violation;
  EXPECT_EQ(v.oracle, "function-trace-op");
  EXPECT_NE(v.message.find(calledFor), std::string::npos) << v.message;
  EXPECT_NE(v.message.find(withOp), std::string::npos) << v.message;
  return r;
}

// The scenario files' own words: kind kernel, the image the fuzzer and check use, and an expected
// verdict for every variant.
TEST(EngineScenario, FilesAreEngineLevelWithAnExpectedVerdict) {
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"list-to-single-race", {"violation", "trace-completeness"}},
      {"list-to-single-race-fixed", {"verified", ""}},
      {"int3-skips-call", {"violation", "transparency"}},
      {"int3-skips-call-fixed", {"verified", ""}},
      {"ppc32-mflr-wrong-order", {"violation", "live-patching"}},
      {"ppc32-mflr-wrong-order-fixed", {"verified", ""}},
      {"ppc32-mflr-no-grace", {"violation", "live-patching"}},
      {"op-func-switch-race", {"violation", "function-trace-op"}},
      {"op-func-switch-race-fixed", {"verified", ""}},
      {"op-func-residual-race", {"violation", "function-trace-op"}},
      {"ppc32-op-func-residual-race", {"violation", "function-trace-op"}},
      {"ppc32-op-func-residual-race-dynamic", {"verified", ""}},
      {"ppc32-op-func-residual-race-wait", {"verified", ""}},
      {"ppc32-op-func-residual-race-regs", {"violation", "function-trace-op"}},
  };
  // Every engine-level file in the corpus is one of these (ExploreTest's site-level sweep skips
  // them), so a new one cannot go untested.
  std::set<std::string> kernelFiles;
  for (const auto &entry : std::filesystem::directory_iterator(test::corpusDir("scenarios")))
    if (entry.path().extension() == ".toml" &&
        loadScenarioFile(entry.path().string()).code == CodeKind::Kernel)
      kernelFiles.insert(entry.path().stem().string());
  std::set<std::string> names;
  for (const auto &[name, verdict] : expected)
    names.insert(name);
  EXPECT_EQ(kernelFiles, names);
  for (const auto &[name, verdict] : expected) {
    SCOPED_TRACE(name);
    const Scenario s = corpusScenario(name);
    EXPECT_EQ(s.code, CodeKind::Kernel);
    EXPECT_EQ(s.expectVerdict, verdict.first);
    EXPECT_EQ(s.expectOracle, verdict.second);
    EXPECT_TRUE(std::filesystem::exists(builtImagePath(s))) << builtImagePath(s);
  }
}

// list-to-single-race (59338f754a55): with the pre-fix order the single ops 'a' (filter ktime_get)
// is still called directly from ftrace_call when decay_load's site already calls ftrace_caller, so
// 'a' runs for decay_load.
TEST(EngineScenario, ListToSingleRaceIsATraceCompletenessViolationOfOpsA) {
  const Scenario s = corpusScenario("list-to-single-race");
  ASSERT_TRUE(s.engine.pre59338f754a55);
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_EQ(r.verdict, Verdict::Violation);
  ASSERT_TRUE(r.minimised) << r.coverage;
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.found->violation.oracle, "trace-completeness");
  const Violation &v = r.minimised->violation;
  EXPECT_EQ(v.oracle, s.expectOracle);
  EXPECT_NE(v.message.find("ops 'a' called for decay_load"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("filter 'ktime_get'"), std::string::npos) << v.message;
  // The engine-level exhaustive search meets it in its first executions.
  EXPECT_LE(r.result.stats.executions, 10u);
  EXPECT_EQ(r.result.violatingExecutions, 1u); // stops at the first
  EXPECT_LE(r.minimised->preemptions, r.found->preemptions);
  EXPECT_FALSE(v.trail.empty());
  // Delta debugging: a handful of deviations (the schedule that found it has thousands of
  // decisions), the rest of the execution the continuation's, and the replay file still
  // reproduces byte for byte.
  EXPECT_GT(r.found->choices.size(), 1000u);
  // The file stores the deviations and the continuation's runs between them, not each of its
  // decisions.
  EXPECT_LE(r.minimised->deviations, 60u);
  EXPECT_LE(storedDecisions(*r.minimised), 60u);
  EXPECT_GT(r.minimised->choices.size(), 1000u);
  EXPECT_TRUE(r.minimised->continues);
  const std::string json = replayToJson(s, *r.minimised);
  EXPECT_NE(json.find("\"then\": \"continue\""), std::string::npos);
  const ReplayFile file = parseReplay(json, "list-to-single-race.json");
  EXPECT_TRUE(file.counterexample.continues);
  const Reproduction again = reproduce(harness, file, "list-to-single-race.json");
  EXPECT_EQ(again.execution.logHash, r.minimised->logHash);
  EXPECT_EQ(again.violation.oracle, "trace-completeness");
}

// Exhaustively within one deviation from the non-preemptive continuation, earliest first: the
// race is one early switch away, so it is found in a few executions of thousands of decisions each
// (random search needs a lucky run; rr-bounded around round robin does not reach it in thousands).
TEST(EngineScenario, ListToSingleRaceIsOneDeviationFromTheContinuation) {
  const Scenario s = corpusScenario("list-to-single-race");
  KernelHarness harness(s, builtImagePath(s));
  ExploreOptions o;
  o.explorer = "deviation-bounded";
  o.preemptionBound = 1;
  // On the file's 3.13 profile (the int3 handler that skips the site) the race is 531 executions
  // into the bound-1 search, earliest deviations first, with the guest built by Debian 12's GCC 12,
  // and 1,043 with Debian 13's GCC 14 (its code differs, and with it where the switch falls).
  o.maxExecutions = 2000;
  const ExploreResult r = explore(harness, o);
  ASSERT_TRUE(r.counterexample);
  EXPECT_EQ(r.counterexample->violation.oracle, "trace-completeness");
  EXPECT_LE(r.stats.executions, 1200u);
  EXPECT_GT(r.stats.decisions / r.stats.executions, 1000u);
}

// The same workload and schedules with today's order: ftrace_call goes through the list function
// while the sites move. The engine-level exhaustive search within the file's bound (one deviation
// from the fair continuation at visible events) finds nothing: VERIFIED within that bound.
TEST(EngineScenario, ListToSingleRaceFixedIsVerifiedWithinItsStatedBound) {
  const Scenario s = corpusScenario("list-to-single-race-fixed");
  ASSERT_FALSE(s.engine.pre59338f754a55);
  ASSERT_EQ(s.bounds.preemptions, 1);
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_FALSE(r.minimised) << formatViolation(r.minimised->violation);
  EXPECT_EQ(r.verdict, Verdict::Verified);
  EXPECT_TRUE(r.result.stats.complete);
  EXPECT_GT(r.result.stats.executions, 100u);
  EXPECT_EQ(r.result.violatingExecutions, 0u);
  EXPECT_NE(r.coverage.find("deviations <= 1 from the fair continuation"), std::string::npos)
      << r.coverage;
}

// op-func-switch-race (405e1d834807): before it, registering b set function_trace_op to
// ftrace_list_end at once, while ftrace_call still called a's func directly until the sites had
// moved. The workload's first posix_cpu_timer_set after the patcher's first sync passes a's
// callback ftrace_list_end: one deviation from the non-preemptive schedule, and the replay file
// reproduces it.
TEST(EngineScenario, OpFuncSwitchRacePassesTheListEndOpToOpsA) {
  const Scenario s = corpusScenario("op-func-switch-race");
  ASSERT_TRUE(s.engine.pre405e1d834807);
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_EQ(r.verdict, Verdict::Violation);
  ASSERT_TRUE(r.minimised) << r.coverage;
  const Violation &v = r.minimised->violation;
  EXPECT_EQ(v.oracle, "function-trace-op");
  EXPECT_NE(v.message.find("ops 'a' called for posix_cpu_timer_set"), std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("with op 'ftrace_list_end', not its own 'a'"), std::string::npos)
      << v.message;
  EXPECT_EQ(v.cpus, std::vector<unsigned>{1});
  EXPECT_LE(r.result.stats.executions, 2u);
  const ReplayFile file = parseReplay(replayToJson(s, *r.minimised), "op-func-switch-race.json");
  const Reproduction again = reproduce(harness, file, "op-func-switch-race.json");
  EXPECT_EQ(again.execution.logHash, r.minimised->logHash);
  EXPECT_EQ(again.violation.oracle, "function-trace-op");
}

// With the fix the same workload, ops and bound are searched completely: no callback gets an op
// that is not its own, and no other oracle objects.
TEST(EngineScenario, OpFuncSwitchRaceFixedIsVerifiedWithinOneDeviation) {
  const Scenario s = corpusScenario("op-func-switch-race-fixed");
  ASSERT_FALSE(s.engine.pre405e1d834807);
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_FALSE(r.minimised) << formatViolation(r.minimised->violation);
  EXPECT_EQ(r.verdict, Verdict::Verified) << r.coverage;
  EXPECT_GT(r.result.stats.executions, 100u);
  EXPECT_NE(r.coverage.find("deviations <= 1"), std::string::npos) << r.coverage;
}

// The pre-405e1d834807 publication on today's update order (ftrace_call goes to the list function
// first): the window is the patcher's two events between the publication and the int3 on
// ftrace_call, which one deviation does not reach and two do.
TEST(EngineScenario, OpFuncSwitchRaceOnTodaysOrderIsTwoDeviationsAway) {
  Scenario s = corpusScenario("op-func-switch-race");
  s.engine.pre59338f754a55 = false;
  s.protocol = "int3";
  s.linuxProfile.clear();
  KernelHarness harness(s, builtImagePath(s));
  ExploreOptions o = exploreOptionsFor(s);
  o.preemptionBound = 2;
  o.maxExecutions = 50;
  const ExploreResult r = explore(harness, o);
  ASSERT_TRUE(r.counterexample);
  EXPECT_EQ(r.counterexample->violation.oracle, "function-trace-op");
  EXPECT_LE(r.stats.executions, 10u);
}

// The race 405e1d834807 leaves, on Linux 6.12's own order (ppc32: every site calls ftrace_caller):
// a CPU that loaded function_trace_op (ftrace_list_end, no ops yet) before the publication takes
// ftrace_sync_ipi inside ftrace_caller and then calls the function tracer's func, patched into
// ftrace_call after the IPI, with ftrace_list_end. One deviation from the fair continuation
// reaches it; a dynamic ops, which ftrace_call never calls directly, is VERIFIED within the same
// bound.
TEST(EngineScenario, OpFuncResidualRaceHitsLinux612sOwnOrder) {
  const Scenario s = corpusScenario("ppc32-op-func-residual-race");
  ASSERT_FALSE(s.engine.pre405e1d834807);
  ASSERT_FALSE(s.engine.pre59338f754a55);
  ASSERT_EQ(s.linuxProfile, "6.12");
  KernelHarness harness(s, builtImagePath(s));
  const ExploreResult r =
      expectFunctionTraceOp(harness, s, "ops 'global:function' called for",
                            "with op 'ftrace_list_end', not its own 'global:function'");
  ASSERT_TRUE(r.counterexample);
  EXPECT_EQ(r.counterexample->violation.cpus, std::vector<unsigned>{1});
  EXPECT_LE(r.stats.executions, 40u);

  const Scenario dynamic = corpusScenario("ppc32-op-func-residual-race-dynamic");
  ASSERT_TRUE(dynamic.engine.ops.at(0).dynamic);
  KernelHarness spared(dynamic, builtImagePath(dynamic));
  const CheckReport c = check(spared, exploreOptionsFor(dynamic));
  EXPECT_FALSE(c.minimised) << formatViolation(c.minimised->violation);
  EXPECT_EQ(c.verdict, Verdict::Verified) << c.coverage;
  EXPECT_NE(c.coverage.find("deviations <= 1"), std::string::npos) << c.coverage;
}

// The same race through ftrace_regs_caller (a static SAVE_REGS ops, as kprobes' is): found within
// two deviations because ftrace_regs_caller's load of function_trace_op is a shared read, a visible
// event; as an invisible step the search reported it VERIFIED within that bound.
TEST(EngineScenario, OpFuncResidualRaceThroughFtraceRegsCaller) {
  const Scenario s = corpusScenario("ppc32-op-func-residual-race-regs");
  ASSERT_TRUE(s.engine.ops.at(0).saveRegs);
  ASSERT_FALSE(s.engine.ops.at(0).dynamic);
  KernelHarness harness(s, builtImagePath(s));
  const ExploreResult r = expectFunctionTraceOp(harness, s, "ops 'kprobe' called for ktime_get",
                                                "with op 'ftrace_list_end', not its own 'kprobe'");
  ASSERT_TRUE(r.counterexample);
  // The load the counterexample's CPU made is a shared read: a step at one of the loads the
  // trampolines report, inside ftrace_regs_caller.
  // A copy: the replay below boots another kernel, with trampolines of its own.
  const arch::TrampolineCode code = harness.kernel().trampolines();
  ASSERT_FALSE(code.opLoads.empty());
  bool regsLoad = false;
  for (std::uint64_t load : code.opLoads)
    regsLoad |= load > code.ftraceRegsCaller && load < code.ftraceRegsCall;
  EXPECT_TRUE(regsLoad);
  const ReplayFile file = parseReplay(replayToJson(s, *r.counterexample), "regs.json");
  const Reproduction again = reproduce(harness, file, "regs.json");
  EXPECT_EQ(again.violation.oracle, "function-trace-op");
  EXPECT_EQ(harness.kernel().trampolines().opLoads, code.opLoads); // the same image and layout
  bool sharedLoad = false;
  for (const sim::EventRecord &e : harness.machine().events())
    for (std::uint64_t load : code.opLoads)
      sharedLoad |= e.kind == sim::EventKind::Step && e.pc == load && e.sharedRead && e.cpu == 1;
  EXPECT_TRUE(sharedLoad);
}

// The hypothesis against it: grace periods between publishing function_trace_op and patching
// ftrace_call. VERIFIED within the bound that finds the race, and not vacuously: the workload
// still calls the tracer's func directly through the patched ftrace_call after the wait.
TEST(EngineScenario, GracePeriodsAfterThePublicationCloseTheResidualRace) {
  const Scenario s = corpusScenario("ppc32-op-func-residual-race-wait");
  ASSERT_TRUE(s.engine.functionTraceOpWait);
  EXPECT_EQ(parseScenario(s.toToml(), "round-trip"), s); // what a replay file embeds
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_FALSE(r.minimised) << formatViolation(r.minimised->violation);
  EXPECT_EQ(r.verdict, Verdict::Verified) << r.coverage;
  EXPECT_NE(r.coverage.find("deviations <= 1"), std::string::npos) << r.coverage;
  sim::RoundRobinScheduler rr;
  harness.runExecution(rr);
  unsigned direct = 0;
  for (const kernel::CallbackEvent &c : harness.kernel().callbacks())
    direct += c.cpu == 1 && c.function == "global:function";
  EXPECT_GT(direct, 0u);
  EXPECT_TRUE(harness.kernel().opMismatches().empty());
}

// The same race on x86_64 with Linux 6.12's per-ops trampolines, in Rutland's sequence: a CPU
// that entered ftrace_caller while a and b shared posix_cpu_timer_set loaded a, and is still before
// ftrace_call when unregistering a has moved the site to b's trampoline, published b and put the
// int3 on ftrace_call: the handler's emulated call runs b's func with a.
TEST(EngineScenario, OpFuncResidualRaceOnX86WithPerOpsTrampolines) {
  const Scenario s = corpusScenario("op-func-residual-race");
  ASSERT_TRUE(s.engine.opsTrampolines);
  ASSERT_EQ(s.linuxProfile, "6.12");
  KernelHarness harness(s, builtImagePath(s));
  expectFunctionTraceOp(harness, s, "ops 'b' called for posix_cpu_timer_set",
                        "with op 'a', not its own 'b'");
}

// int3-skips-call (2700fefdb2d9 & co): the old handler skips the site as if it were a nop, so a
// task that hits the int3 while the site moves from the livepatch trampoline to
// ftrace_regs_caller runs the old posix_cpu_timer_set although the livepatch is active.
TEST(EngineScenario, Int3SkipsCallIsATransparencyViolation) {
  const Scenario s = corpusScenario("int3-skips-call");
  ASSERT_EQ(s.protocol, "int3-skip");
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  ASSERT_TRUE(r.minimised) << r.coverage;
  const Violation &v = r.minimised->violation;
  EXPECT_EQ(v.oracle, "transparency");
  // The reference (livepatch in place, no patcher) runs version 2 on every call.
  EXPECT_NE(v.message.find("the reference run returned"), std::string::npos) << v.message;
  ASSERT_FALSE(harness.referenceResults().empty());
  EXPECT_NE(v.message.find("returned 0x10,"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("reference run returned 0x1000"), std::string::npos) << v.message;
}

TEST(EngineScenario, Int3SkipsCallFixedIsVerifiedWithinItsStatedBound) {
  const Scenario s = corpusScenario("int3-skips-call-fixed");
  ASSERT_EQ(s.protocol, "int3");
  ASSERT_EQ(s.bounds.preemptions, 2);
  KernelHarness harness(s, builtImagePath(s));
  const CheckReport r = check(harness, exploreOptionsFor(s));
  EXPECT_FALSE(r.minimised) << formatViolation(r.minimised->violation);
  EXPECT_EQ(r.verdict, Verdict::Verified);
  EXPECT_TRUE(r.result.stats.complete);
  EXPECT_NE(r.coverage.find("deviations <= 2 from the fair continuation"), std::string::npos)
      << r.coverage;
}

// The ISA's live-patching rule on the simulated kernel, as `ftsim check` runs it: ppc32's
// two-instruction sites written in the wrong order, or without the grace period between the two
// words, break CMODX (the bl before its mflr r0 slot; the bl right after it); boot's
// ftrace_init_nop writes are not live writes, and the right order is VERIFIED within one deviation
// from round robin. Together with word-trap-first
// (tests/fuzz/seeds/replay/ppc32-word-trap-first.json, a snippet check), every protocol mutant
// `ftsim mutants --arch ppc32` kills is found by check on some scenario; the encoder mutant
// bl-truncate says in its description why only the z3:bl-range rule sees it.
TEST(EngineScenario, Ppc32MflrOrderIsJudgedByTheLivePatchingRule) {
  const std::map<std::string, std::string> finding = {
      {"ppc32-mflr-wrong-order", "bl written after a nopped mflr r0"},
      {"ppc32-mflr-no-grace", "bl written without an RCU-tasks grace period"},
  };
  for (const char *name :
       {"ppc32-mflr-wrong-order", "ppc32-mflr-no-grace", "ppc32-mflr-wrong-order-fixed"}) {
    SCOPED_TRACE(name);
    const Scenario s = corpusScenario(name);
    KernelHarness harness(s, builtImagePath(s));
    const CheckReport r = check(harness, exploreOptionsFor(s));
    // The engine-level search from round robin, within one deviation.
    EXPECT_EQ(exploreOptionsFor(s).continuation, Continuation::RoundRobin);
    if (s.expectVerdict == "verified") {
      EXPECT_EQ(r.verdict, Verdict::Verified)
          << (r.minimised ? formatViolation(r.minimised->violation) : r.coverage);
      EXPECT_TRUE(r.result.stats.complete);
      continue;
    }
    ASSERT_EQ(r.verdict, Verdict::Violation);
    EXPECT_EQ(r.minimised->violation.oracle, s.expectOracle);
    EXPECT_NE(r.minimised->violation.message.find(finding.at(name)), std::string::npos)
        << r.minimised->violation.message;
  }
}

// --- Replay and Chrome trace of an engine-level counterexample

class EngineReplay : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // int3-skips-call: its counterexample is found in the first runs, so this stays cheap.
    scenario_ = new Scenario(corpusScenario("int3-skips-call"));
    harness_ = new KernelHarness(*scenario_, builtImagePath(*scenario_));
    const CheckReport r = check(*harness_, exploreOptionsFor(*scenario_));
    ASSERT_TRUE(r.minimised);
    cex_ = new Counterexample(*r.minimised);
    path_ = new std::string(tempPath("int3-skips-call.json"));
    writeReplayFile(*path_, *scenario_, *cex_);
  }
  static void TearDownTestSuite() {
    delete harness_;
    delete scenario_;
    delete cex_;
    delete path_;
  }
  static Scenario *scenario_;
  static KernelHarness *harness_;
  static Counterexample *cex_;
  static std::string *path_;
};
Scenario *EngineReplay::scenario_ = nullptr;
KernelHarness *EngineReplay::harness_ = nullptr;
Counterexample *EngineReplay::cex_ = nullptr;
std::string *EngineReplay::path_ = nullptr;

TEST_F(EngineReplay, TheWrittenFileReproducesWithTheSameEventLogHash) {
  const ReplayFile file = loadReplayFile(*path_);
  EXPECT_EQ(file.scenario, *scenario_); // the file stands alone
  EXPECT_EQ(file.counterexample.choices, cex_->choices);
  EXPECT_EQ(file.counterexample.logHash, cex_->logHash);
  // A harness built from the file alone, as `ftsim replay` does.
  KernelHarness harness(file.scenario, builtImagePath(file.scenario));
  const Reproduction r = reproduce(harness, file, *path_);
  EXPECT_EQ(r.execution.logHash, cex_->logHash);
  EXPECT_EQ(summarizeViolation(r.violation), summarizeViolation(cex_->violation));
  EXPECT_EQ(r.violation.oracle, "transparency");
  // The int3 written over the site, and a CPU's trap there handled. The symbol is printed as the
  // kernel's %pS does (name+offset/size), with the size the compiler gave the function.
  const arch::Image image = arch::loadImage(builtImagePath(file.scenario));
  const arch::ImageSymbol *patched = image.findSymbol("posix_cpu_timer_set");
  ASSERT_NE(patched, nullptr);
  EXPECT_NE(r.timeline.find(
                fmt::format("patcher store posix_cpu_timer_set+0x0/{:#x} [cc]", patched->size)),
            std::string::npos)
      << r.timeline;
  EXPECT_NE(r.timeline.find("trap-handled(posix_cpu_timer_set"), std::string::npos);
  // And again: byte for byte.
  EXPECT_EQ(reproduce(harness, file, *path_).execution.logHash, cex_->logHash);
}

TEST_F(EngineReplay, AnEditedFileIsRefusedWithOneLine) {
  const std::string text = readFile(*path_);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  ASSERT_TRUE(j["choices"].is_array());
  ASSERT_GT(j["choices"].size(), 0u);
  // Edits that still parse: another schedule, another recorded hash, another expected finding.
  std::vector<std::pair<std::string, nlohmann::ordered_json>> edits;
  {
    // Another answer at a stored decision (the file keeps the continuation's runs as objects).
    nlohmann::ordered_json e = j;
    for (nlohmann::ordered_json &choice : e["choices"])
      if (choice.is_number()) {
        choice = choice.get<std::uint32_t>() == 0 ? 1 : 0;
        break;
      }
    ASSERT_NE(e["choices"], j["choices"]);
    edits.emplace_back("choices", e);
  }
  {
    nlohmann::ordered_json e = j;
    e["log_fnv1a"] = "0x0123456789abcdef";
    edits.emplace_back("log_fnv1a", e);
  }
  {
    nlohmann::ordered_json e = j;
    e["expect"]["summary"] = "transparency cpu1 at event #1: nothing of the sort";
    edits.emplace_back("expect.summary", e);
  }
  for (const auto &[what, e] : edits) {
    SCOPED_TRACE(what);
    const std::string path = tempPath("edited-" + what + ".json");
    writeFile(path, e.dump(1));
    const std::string message = fatalMessage([&] {
      const ReplayFile file = loadReplayFile(path);
      KernelHarness harness(file.scenario, builtImagePath(file.scenario));
      reproduce(harness, file, path);
    });
    ASSERT_FALSE(message.empty()) << "the edited file was accepted";
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // Not JSON at all.
  const std::string broken = tempPath("truncated.json");
  writeFile(broken, text.substr(0, text.size() / 2));
  const std::string message = fatalMessage([&] { loadReplayFile(broken); });
  EXPECT_EQ(message.rfind(broken + ": ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(EngineReplay, ChromeTraceHasOneTrackPerCpuAndThePatcher) {
  const ReplayFile file = loadReplayFile(*path_);
  const Reproduction r = reproduce(*harness_, file, *path_);
  const std::string chrome = chromeTrace(*harness_, r.execution.violations);
  ASSERT_FALSE(chrome.empty());
  const nlohmann::json j = nlohmann::json::parse(chrome); // throws on malformed output
  ASSERT_TRUE(j.contains("traceEvents"));
  const auto &events = j["traceEvents"];
  std::map<unsigned, std::string> threads;
  std::map<unsigned, std::uint64_t> complete; // X events per tid
  std::map<unsigned, std::uint64_t> lastTs;
  bool monotone = true;
  std::uint64_t stores = 0;
  std::set<std::string> instantNames, summaries;
  std::set<std::string> phases;
  for (const auto &e : events) {
    const std::string ph = e.at("ph");
    phases.insert(ph);
    if (ph == "M" && e.at("name") == "thread_name")
      threads[e.at("tid").get<unsigned>()] = e.at("args").at("name");
    if (ph == "X") {
      const unsigned tid = e.at("tid");
      const std::uint64_t ts = e.at("ts");
      EXPECT_EQ(e.at("dur").get<std::uint64_t>(), 1u);
      if (complete[tid]++ && ts <= lastTs[tid])
        monotone = false;
      lastTs[tid] = ts;
      if (e.at("cat") == "store") {
        ++stores;
        EXPECT_TRUE(e.at("args").contains("bytes"));
      }
    }
    if (ph == "i") {
      instantNames.insert(e.at("name").get<std::string>());
      if (e.at("args").contains("summary"))
        summaries.insert(e.at("args").at("summary").get<std::string>());
      EXPECT_LE(e.at("ts").get<std::uint64_t>(), r.execution.events);
    }
  }
  EXPECT_TRUE(monotone);
  EXPECT_EQ(phases, (std::set<std::string>{"M", "X", "i"}));
  // cpu0, cpu1 and the patcher (tid 100).
  ASSERT_EQ(threads.size(), scenario_->cpus + 1);
  for (unsigned c = 0; c < scenario_->cpus; ++c)
    EXPECT_EQ(threads[c], "cpu" + std::to_string(c));
  EXPECT_EQ(threads[100].rfind("patcher", 0), 0u);
  // The workload runs on CPU 1; the patcher's stores are on its own track.
  EXPECT_GT(complete[1], 100u);
  EXPECT_GT(complete[100], 0u);
  EXPECT_GT(stores, 0u);
  std::uint64_t x = 0;
  for (const auto &[tid, n] : complete)
    x += n;
  EXPECT_EQ(x, r.execution.events); // every machine event once
  // The finding: the counterexample's violation as a global instant event.
  EXPECT_TRUE(instantNames.count("violation: transparency"));
  EXPECT_TRUE(summaries.count(summarizeViolation(r.violation)));
}

} // namespace
} // namespace ftsim::verify
