// Scenarios, oracles, exploration (source-DPOR against naive), minimisation, replay and the
// mutation score, on site-level scenarios.

#include "ftsim/verify/explore/Explore.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/check/Mutants.h"
#include "ftsim/verify/harness/SiteHarness.h"
#include "ftsim/verify/replay/Replay.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "Corpus.h"
#include "FatalMessage.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace ftsim::verify {
namespace {

Scenario site(const std::string &protocol, unsigned cpus = 2, unsigned sites = 1,
              Transition t = Transition::NopToCall) {
  Scenario s;
  s.name = "test";
  s.protocol = protocol;
  s.cpus = cpus;
  s.sites.assign(sites, t);
  return s;
}

ExploreResult exhaustive(const Scenario &s, bool reduction = true, int bound = -1,
                         bool stopAtFirst = true) {
  SiteHarness instance(s);
  ExploreOptions o;
  o.reduction = reduction;
  o.preemptionBound = bound;
  o.stopAtFirst = stopAtFirst;
  return explore(instance, o);
}

using test::fatalMessage;

// --- Scenario files ------------------------------------------------------------------------------

TEST(ScenarioFiles, PublishedScenariosHaveTheirExpectedVerdict) {
  unsigned files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(test::corpusDir("scenarios"))) {
    if (entry.path().extension() != ".toml")
      continue;
    ++files;
    Scenario s = loadScenarioFile(entry.path().string());
    SCOPED_TRACE(entry.path().string());
    ASSERT_FALSE(s.expectVerdict.empty());
    // A published scenario says how faithful it is to Linux (papers/README.md's words).
    if (!s.source.empty()) {
      EXPECT_TRUE(isFidelityWord(s.fidelity)) << "fidelity '" << s.fidelity << "'";
    }
    if (s.code != CodeKind::Snippet) // EngineScenarioTest.cpp, TrampolineCheckTest.cpp
      continue;
    ExploreResult r = exhaustive(s);
    if (s.expectVerdict == "verified") {
      EXPECT_FALSE(r.counterexample) << formatViolation(r.counterexample->violation);
      EXPECT_TRUE(r.stats.complete);
    } else {
      ASSERT_TRUE(r.counterexample);
      EXPECT_EQ(r.counterexample->violation.oracle, s.expectOracle);
    }
  }
  EXPECT_GE(files, 9u);
}

TEST(ScenarioFiles, TomlRoundTrip) {
  Scenario s = site("int3-unsorted", 3, 2, Transition::CallToCall);
  s.descending = true;
  s.siteOffset = 61;
  s.store = sim::StoreModel::Line;
  s.fetch = &sim::fetchModelByName("line");
  s.bounds.preemptions = 2;
  s.expectVerdict = "violation";
  s.expectOracle = "guest-fault";
  s.source = "a \"quoted\" source";
  s.fidelity = "model-hypothesis";
  EXPECT_EQ(parseScenario(s.toToml(), "round-trip"), s);
  // Every string is written as a TOML string, quotes, backslashes and brackets included.
  s.expectOracle = "a \"quoted\" \\[code]\\\\[[oracle";
  const std::string text = s.toToml();
  EXPECT_EQ(parseScenario(text, "round-trip"), s);
  EXPECT_EQ(parseScenario(text, "round-trip").toToml(), text);
}

TEST(ScenarioFiles, AnExpectedOracleTheScenarioDoesNotHaveIsAnError) {
  Scenario s = site("int3-nosync1");
  s.expectVerdict = "violation";
  s.expectOracle = "torn-fetch";
  EXPECT_NO_THROW(makeHarness(s, HarnessEnv{}));
  s.expectOracle = "linux"; // the oracle of scenarios that run Linux's own code
  const std::string message = fatalMessage([&] { makeHarness(s, HarnessEnv{}); });
  EXPECT_NE(message.find("expect.oracle = 'linux' is not an oracle of this scenario (its "
                         "oracles: torn-fetch, trampoline-lifetime, guest-fault"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ScenarioFiles, BrokenFilesAreOneLineErrorsNamingTheFile) {
  const std::pair<const char *, const char *> cases[] = {
      {"arch = \"x86_64\"\nprotocol = \"int3\"\ncpu = 2\n", "unknown key 'cpu'"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\ncpus = 9\n", "out of range"},
      {"arch = \"x86_64\"\nprotocol = \"nosuch\"\n", "unknown protocol 'nosuch'"},
      {"protocol = \"int3\"\n", "missing 'arch'"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[[sites]]\ntransition = \"jmp\"\n",
       "unknown transition 'jmp'"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\nstore = \"dword\"\n", "store"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\ncpus = \"two\"\n", "must be an integer"},
      {"arch = \"x86_64\"\nprotocol = \"int3\n", "bad.toml:"},
      {"arch = \"ppc32\"\nprotocol = \"patch-instruction\"\nstore = \"byte\"\n",
       "not a real powerpc"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[code]\nkind = \"kernel\"\n[engine]\n"
       "workloads = [\"sched\", \"mm\"]\n",
       "engine.workloads: 2 workloads for 1 task CPUs"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[engine]\nruns = 3\n",
       "an [engine] table belongs to code kind = \"kernel\""},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[code]\nsite_offset = 3\ntask_cpus = [5]\n",
       "task_cpus names CPU 5"},
      // A task sharing the patcher's CPU without preemption never overlaps it: one execution,
      // "verified" having explored nothing.
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[code]\ntask_cpus = [0]\n",
       "task_cpus puts a task on CPU 0"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[code]\ntask_cpus = []\n",
       "'code.task_cpus' is empty"},
      {"arch = \"x86_64\"\nprotocol = \"int3\"\nfidelity = \"exact\"\n",
       "fidelity 'exact' is not one of faithful, model-hypothesis, teaching-strawman"},
      // Every event of an execution stays in memory: a bound of 2^63 let a runaway execution
      // take it all.
      {"arch = \"x86_64\"\nprotocol = \"int3\"\n[bounds]\nmax_events = 9223372036854775807\n",
       "max_events = 9223372036854775807 is out of range (1-10000000"},
  };
  for (const auto &[text, expected] : cases) {
    // clang before 16 cannot capture a structured binding in a lambda: capture a reference.
    const std::string &source = text;
    test::expectOneLineRefusal(
        "bad.toml", [&] { parseScenario(source, "bad.toml"); }, expected);
  }
  EXPECT_NE(fatalMessage([] {
              loadScenarioFile("/nonexistent/x.toml");
            }).find("/nonexistent/x.toml: cannot open"),
            std::string::npos);
}

// Found by tests/fuzz (ftsim_fuzz_replay, ftsim_fuzz_scenario): toml++'s description of what it
// saw, and the values a message quotes, held the file's newlines: a FatalError of several lines.
TEST(ScenarioFiles, ErrorsAreOneLineWhateverTheFileHolds) {
  const std::string head = "arch = \"x86_64\"\nprotocol = \"int3\"\n";
  const std::pair<std::string, std::string> cases[] = {
      {head + "cpus = n\n", "expected 'nan'"},
      {head + "[code]\nkind = \"snip\\npet\"\n", "code.kind = 'snip\\npet'"},
      {head + "[[sites]]\ntransition = \"a\\r\\nb\"\n", "unknown transition 'a\\r\\nb'"},
      {head + "[patch]\norder = \"up\\tdown\"\n", "patch.order = 'up\\tdown'"},
  };
  for (const auto &[text, expected] : cases) {
    // clang before 16 cannot capture a structured binding in a lambda: capture a reference.
    const std::string &source = text;
    test::expectOneLineRefusal(
        "bad.toml", [&] { parseScenario(source, "bad.toml"); }, expected);
  }
}

// --- Exhaustive exploration ----------------------------------------------------------------------

TEST(Exhaustive, DirectFindsTheSlidesTornFetchAndMinimisesIt) {
  SiteHarness instance(site("direct"));
  const CheckReport r = check(instance, exploreOptionsFor(instance.scenario()));
  EXPECT_EQ(r.verdict, Verdict::Violation);
  ASSERT_TRUE(r.found && r.minimised);
  const Counterexample &min = *r.minimised;
  // Never more preemptions than what was found, nor more events when as many.
  EXPECT_LE(min.preemptions, r.found->preemptions);
  if (min.preemptions == r.found->preemptions) {
    EXPECT_LE(min.events, r.found->events);
  }
  EXPECT_EQ(min.violation.oracle, "torn-fetch");
  EXPECT_EQ(min.violation.site, "site0");
  EXPECT_EQ(min.violation.cpus, (std::vector<unsigned>{1, 0}));
  // Found after a preemption; the minimised one needs none: the patcher writes the whole call
  // byte by byte, then cpu1 fetches a mix of stale and new bytes (the call's opcode over the old
  // nop's tail), neither the nop nor the call.
  EXPECT_EQ(r.found->preemptions, 1u);
  EXPECT_EQ(min.preemptions, 0u);
  EXPECT_EQ(min.violation.bytes, (arch::Bytes{0xe8, 0x1f, 0x2e, 0x00, 0x00}));
  EXPECT_EQ(min.violation.decoded, "callq 0xffffffff81002f28");
  ASSERT_FALSE(min.violation.trail.empty());
  EXPECT_NE(min.violation.trail.back().find("fetch site0 [e8 1f 2e 00 00]"), std::string::npos);
}

TEST(Exhaustive, Int3VerifiesUnderEveryModelForOneAndTwoSites) {
  for (auto store : {sim::StoreModel::Byte, sim::StoreModel::Word, sim::StoreModel::Line})
    for (const sim::FetchModel *fetch : sim::allFetchModels())
      for (unsigned sites : {1u, 2u}) {
        if (sites == 2 &&
            (fetch != &sim::fetchModelByName("stale") || store != sim::StoreModel::Byte))
          continue; // two sites: the most permissive models only (CI time)
        Scenario s = site("int3", 2, sites);
        s.store = store;
        s.fetch = fetch;
        // One site straddling two lines (the line fetch model splits its fetch); two sites at
        // the slide's offset.
        s.siteOffset = sites == 1 ? 62 : 4;
        SCOPED_TRACE(s.describe());
        ExploreResult r = exhaustive(s);
        EXPECT_FALSE(r.counterexample) << formatViolation(r.counterexample->violation);
        EXPECT_TRUE(r.stats.complete);
        EXPECT_GT(r.stats.executions, 1u);
      }
}

TEST(Exhaustive, DporReachesEveryFinalStateNaiveReachesWithFewerExecutions) {
  // Naive exploration of the stale model explodes without a bound; compare at bound 1 there,
  // and unbounded under atomic fetch with line stores.
  for (const char *protocol : {"int3", "int3-nosync2", "direct"}) {
    SCOPED_TRACE(protocol);
    Scenario s = site(protocol, 2, 1, Transition::CallToCall);
    const bool atomic = std::string(protocol) == "direct";
    if (atomic) {
      s.store = sim::StoreModel::Line;
      s.fetch = &sim::fetchModelByName("atomic");
    }
    ExploreResult naive = exhaustive(s, false, atomic ? -1 : 1, false);
    ExploreResult dpor = exhaustive(s, true, atomic ? -1 : 1, false);
    EXPECT_TRUE(naive.stats.complete);
    EXPECT_TRUE(dpor.stats.complete);
    EXPECT_EQ(dpor.stats.distinctStates, naive.stats.distinctStates);
    EXPECT_EQ(bool(dpor.counterexample), bool(naive.counterexample));
    EXPECT_LT(dpor.stats.executions * 2, naive.stats.executions);
    EXPECT_EQ(naive.stats.sleepBlocked, 0u);
  }
}

TEST(Exhaustive, PreemptionBoundZeroCoversLessAndCountsItsCuts) {
  Scenario s = site("int3", 2, 2);
  ExploreResult bounded = exhaustive(s, false, 0);
  ExploreResult one = exhaustive(s, false, 1);
  ExploreResult unbounded = exhaustive(s, true, -1);
  EXPECT_TRUE(bounded.stats.complete);
  EXPECT_LT(bounded.stats.executions, one.stats.executions);
  EXPECT_GT(bounded.stats.boundCuts, 0u);
  EXPECT_EQ(bounded.stats.maxPreemptions, 0u);
  EXPECT_EQ(one.stats.maxPreemptions, 1u);
  EXPECT_EQ(unbounded.stats.boundCuts, 0u);
}

TEST(Exhaustive, SameInputsSameResult) {
  ExploreResult a = exhaustive(site("int3-nosync1"));
  ExploreResult b = exhaustive(site("int3-nosync1"));
  ASSERT_TRUE(a.counterexample && b.counterexample);
  EXPECT_EQ(a.counterexample->choices, b.counterexample->choices);
  EXPECT_EQ(a.counterexample->logHash, b.counterexample->logHash);
  EXPECT_EQ(a.stats.executions, b.stats.executions);
}

// --- Randomised ----------------------------------------------------------------------------------

TEST(Randomised, PctAndRandomAreSeededAndFindTheTornFetch) {
  for (const char *mode : {"pct", "random"}) {
    SCOPED_TRACE(mode);
    auto run = [&](std::uint64_t seed) {
      SiteHarness instance(site("direct"));
      ExploreOptions o;
      o.explorer = mode;
      o.maxExecutions = 500;
      o.seed = seed;
      return explore(instance, o);
    };
    ExploreResult a = run(7), b = run(7);
    ASSERT_TRUE(a.counterexample);
    ASSERT_TRUE(b.counterexample);
    EXPECT_EQ(a.counterexample->choices, b.counterexample->choices);
    EXPECT_EQ(a.stats.executions, b.stats.executions);
    SiteHarness instance(site("int3"));
    ExploreOptions o;
    o.explorer = mode;
    o.maxExecutions = 100;
    ExploreResult ok = explore(instance, o);
    EXPECT_FALSE(ok.counterexample);
    EXPECT_EQ(ok.stats.executions, 100u);
  }
}

// --- Deviation-bounded -------------------------------------------------------------------------

// Every schedule within the bound, once: int3 verifies within it (complete), direct's torn fetch is
// found, and a larger bound covers more; no bound is a one-line error.
TEST(DeviationBounded, CoversItsBoundOnceAndFindsTheTornFetch) {
  ExploreOptions o;
  o.explorer = "deviation-bounded";
  o.preemptionBound = 1;
  SiteHarness int3(site("int3"));
  const ExploreResult one = explore(int3, o);
  EXPECT_FALSE(one.counterexample);
  EXPECT_TRUE(one.stats.complete);
  EXPECT_TRUE(one.exhaustive);
  o.preemptionBound = 2;
  const ExploreResult two = explore(int3, o);
  EXPECT_FALSE(two.counterexample);
  EXPECT_TRUE(two.stats.complete);
  EXPECT_GT(two.stats.executions, one.stats.executions);
  EXPECT_GE(two.stats.distinctStates, one.stats.distinctStates);
  SiteHarness direct(site("direct"));
  const ExploreResult torn = explore(direct, o);
  ASSERT_TRUE(torn.counterexample);
  EXPECT_EQ(torn.counterexample->violation.oracle, "torn-fetch");
  o.preemptionBound = -1;
  EXPECT_NE(fatalMessage([&] { explore(int3, o); }).find("needs a finite bound"),
            std::string::npos);
}

// --- Minimisation --------------------------------------------------------------------------------

// A random schedule that tears a fetch answers every decision at random; delta debugging keeps only
// the deviations from the continuation the violation needs: its decisions end at the last one, and
// without that one the violation is gone.
TEST(Minimise, DeltaDebuggingKeepsOnlyTheDeviationsTheViolationNeeds) {
  SiteHarness instance(site("direct", 2, 2));
  ExploreOptions o;
  o.explorer = "random";
  o.maxExecutions = 200;
  const ExploreResult r = explore(instance, o);
  ASSERT_TRUE(r.counterexample);
  const Counterexample &found = *r.counterexample;
  const Counterexample min = minimise(instance, found);
  EXPECT_TRUE(min.continues);
  EXPECT_LT(min.choices.size(), found.choices.size());
  EXPECT_LE(min.preemptions, found.preemptions);
  if (min.preemptions == found.preemptions) {
    EXPECT_LE(min.events, found.events);
  }
  EXPECT_EQ(min.violation.oracle, found.violation.oracle);
  // It replays to its own log, with the violation first.
  const ReplayedExecution again = replayChoices(instance, min.choices, {}, true);
  EXPECT_EQ(again.logHash, min.logHash);
  ASSERT_FALSE(again.violations.empty());
  EXPECT_EQ(again.violations.front().oracle, min.violation.oracle);
  // Without its last deviation, no violation of that oracle within as many events.
  ASSERT_FALSE(min.choices.empty());
  std::vector<std::uint32_t> shorter = min.choices;
  shorter.pop_back();
  const ReplayedExecution without = replayChoices(instance, shorter, {}, true);
  const bool same = !without.violations.empty() &&
                    without.violations.front().oracle == min.violation.oracle &&
                    without.violations.front().event < min.events;
  EXPECT_FALSE(same);
  // And the same inputs give the same counterexample.
  const Counterexample twice = minimise(instance, found);
  EXPECT_EQ(twice.choices, min.choices);
  EXPECT_EQ(twice.logHash, min.logHash);
}

// --- Replay --------------------------------------------------------------------------------------

TEST(Replay, ReproducesByteForByteAndRejectsEditedFiles) {
  Scenario s = site("int3-late-vector", 2, 2);
  SiteHarness instance(s);
  ExploreResult r = explore(instance, {});
  ASSERT_TRUE(r.counterexample);
  const Counterexample min = minimise(instance, *r.counterexample);
  const std::string json = replayToJson(s, min);
  ReplayFile file = parseReplay(json, "cex.json");
  EXPECT_EQ(file.scenario, s);
  Reproduction rep = reproduce(instance, file, "cex.json");
  EXPECT_EQ(rep.execution.logHash, min.logHash);
  EXPECT_EQ(rep.violation.oracle, "guest-fault");
  EXPECT_NE(rep.timeline.find("unexpected trap"), std::string::npos);

  // Another scenario: the same choices do not fit (or reproduce something else).
  SiteHarness other(site("int3", 2, 2));
  std::string message = fatalMessage([&] { reproduce(other, file, "cex.json"); });
  EXPECT_EQ(message.rfind("cex.json: does not", 0), 0u) << message;
  // An edited decision.
  ReplayFile edited = file;
  edited.counterexample.choices.back() ^= 1;
  message = fatalMessage([&] { reproduce(instance, edited, "cex.json"); });
  EXPECT_EQ(message.rfind("cex.json: does not", 0), 0u) << message;
  // An edited expectation is named, not "reproduced".
  ReplayFile expectation = file;
  expectation.counterexample.violation.bytes.push_back(0x90);
  EXPECT_NE(
      fatalMessage([&] { reproduce(instance, expectation, "cex.json"); }).find("expect.bytes"),
      std::string::npos);
  // An edited hash, and files that are not replay files.
  ReplayFile hashed = file;
  hashed.counterexample.logHash ^= 1;
  EXPECT_NE(fatalMessage([&] { reproduce(instance, hashed, "cex.json"); }).find("byte for byte"),
            std::string::npos);
  EXPECT_NE(fatalMessage([] { parseReplay("{", "x.json"); }).find("x.json: not JSON"),
            std::string::npos);
  EXPECT_NE(fatalMessage([] { parseReplay("{\"format\": 1}", "x.json"); }).find("x.json"),
            std::string::npos);
  std::string wrongArch = json;
  wrongArch.replace(wrongArch.find("\"arch\": \"x86_64\""), 16, "\"arch\": \"ppc32\"");
  EXPECT_NE(fatalMessage([&] { parseReplay(wrongArch, "x.json"); }).find("disagree"),
            std::string::npos);
}

// An edited expectation used to be "reproduced" with exit 0 when the edit did not reach the
// compared fields; the digests cover the whole file, and the refusal names the part.
TEST(Replay, AFileEditedByHandIsRefusedNamingThePart) {
  Scenario s = site("int3-late-vector", 2, 2);
  SiteHarness instance(s);
  ExploreResult r = explore(instance, {});
  ASSERT_TRUE(r.counterexample);
  const std::string json = replayToJson(s, *r.counterexample);
  const nlohmann::json original = nlohmann::json::parse(json);
  // Layout is not content: another indentation and key order still read.
  EXPECT_NO_THROW(parseReplay(original.dump(), "cex.json"));
  const std::pair<const char *, std::function<void(nlohmann::json &)>> edits[] = {
      {"the expectation", [](nlohmann::json &j) { j["expect"]["decoded"] = "nop"; }},
      {"the expectation", [](nlohmann::json &j) { j["expect"]["oracle"] = "deadlock"; }},
      {"the schedule", [](nlohmann::json &j) { j["events"] = j["events"].get<int>() + 1; }},
      {"the schedule", [](nlohmann::json &j) { j["choices"].push_back(0); }},
      {"the scenario",
       [](nlohmann::json &j) { j["scenario"] = j["scenario"].get<std::string>() + "\n# x\n"; }},
  };
  for (const auto &[part, edit] : edits) {
    nlohmann::json j = original;
    edit(j);
    const std::string message = fatalMessage([&] { parseReplay(j.dump(2), "cex.json"); });
    EXPECT_EQ(message.rfind(std::string("cex.json: ") + part + " was edited", 0), 0u) << message;
  }
}

// Found by tests/fuzz (ftsim_fuzz_replay): a count that is not a whole number was converted by
// nlohmann's get<unsigned>(): modulo 2^32 when negative, by an undefined float cast when a fraction
// or too large (UBSan: float-cast-overflow). Each is the file's one-line error now.
TEST(Replay, CountsThatAreNotWholeNumbersAreOneLineErrors) {
  Counterexample cex;
  cex.choices = {1, 0, 2};
  cex.preemptions = 1;
  cex.events = 9;
  const std::string json = replayToJson(site("direct"), cex);
  ASSERT_NO_THROW(parseReplay(json, "x.json"));
  const std::pair<std::string, std::string> cases[] = {
      {"\"preemptions\": 1,", "\"preemptions\": -1,"},
      {"\"preemptions\": 1,", "\"preemptions\": 1e300,"},
      {"\"preemptions\": 1,", "\"preemptions\": 4294967296,"},
      {"\"events\": 9,", "\"events\": 2.5,"},
      {"\"events\": 9,", "\"events\": 1e30,"},
      {"\"event\": 0,", "\"event\": -3,"},
      {"\"choices\": [", "\"choices\": [-1e300, "},
      {"\"choices\": [", "\"choices\": [4294967296, "},
  };
  for (const auto &[from, to] : cases) {
    std::string edited = json;
    ASSERT_NE(edited.find(from), std::string::npos) << from;
    edited.replace(edited.find(from), from.size(), to);
    test::expectOneLineRefusal(
        "x.json", [&] { parseReplay(edited, "x.json"); }, "must be a whole number");
  }
}

// A minimised counterexample's file stores its deviations one by one and each run of the
// continuation's decisions as {"continue": N}: it reads back to the same decisions, and a run that
// could not fit the scenario, a run of another shape or a bare answer that is no option is the
// file's one-line error.
TEST(Replay, ContinuationRunsReadBackAndMalformedOnesAreOneLineErrors) {
  Counterexample cex;
  cex.choices = {kContinuationChoice, kContinuationChoice, 1, kContinuationChoice, 0};
  cex.continues = true;
  const std::string json = replayToJson(site("direct"), cex);
  const nlohmann::json stored = nlohmann::json::parse(json).at("choices");
  EXPECT_EQ(stored, nlohmann::json::parse(R"([{"continue": 2}, 1, {"continue": 1}, 0])"));
  EXPECT_EQ(parseReplay(json, "x.json").counterexample.choices, cex.choices);
  const std::pair<nlohmann::json, std::string> runs[] = {
      {nlohmann::json::parse(R"({"continue": 99999999999})"), "longer than the scenario's"},
      {nlohmann::json::parse(R"({"again": 2})"), "must be {\"continue\": N}"},
      {nlohmann::json(4294967295u), "which is no option"}};
  for (const auto &[run, says] : runs) {
    nlohmann::json edited = nlohmann::json::parse(json);
    edited["choices"][0] = run;
    test::expectOneLineRefusal(
        "x.json", [&] { parseReplay(edited.dump(2), "x.json"); }, says);
  }
}

// Found by tests/fuzz (ftsim_fuzz_replay): a number too large for a double made nlohmann throw
// out_of_range, not parse_error: not caught, `ftsim replay` ended in std::terminate. And the
// strings a message quotes (expect.bytes, log_fnv1a) kept their newlines.
TEST(Replay, AnyMalformedFileIsAOneLineError) {
  const std::string json = replayToJson(site("direct"), Counterexample{});
  const std::pair<std::string, std::string> cases[] = {
      {"\"version\": 2,", "\"version\": 1e400,"},
      {"\"events\": 0,", "\"events\": -1e999,"},
      {"\"log_fnv1a\": \"", "\"log_fnv1a\": \"x\\ny"},
      {"\"bytes\": \"", "\"bytes\": \"zz\\n"},
  };
  for (const auto &[from, to] : cases) {
    std::string edited = json;
    ASSERT_NE(edited.find(from), std::string::npos) << from;
    edited.replace(edited.find(from), from.size(), to);
    std::string message;
    try {
      parseReplay(edited, "x.json");
    } catch (const FatalError &e) {
      message = e.what();
    } catch (const std::exception &e) {
      ADD_FAILURE() << to << ": not a FatalError: " << e.what();
    }
    EXPECT_EQ(message.rfind("x.json: ", 0), 0u) << to << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_NE(fatalMessage([] { parseReplay("[1e400]", "x.json"); }).find("x.json: not JSON"),
            std::string::npos);
  // A run in 'choices' nested 400,000 deep: its message's dump() recursed until the stack ran out
  // (`ftsim replay` died of SIGSEGV). Values nest at most 64 deep.
  const std::string deep = std::string(400000, '[') + std::string(400000, ']');
  std::string nested = json;
  ASSERT_NE(nested.find("\"choices\": []"), std::string::npos) << nested;
  nested.replace(nested.find("\"choices\": []"), 13, "\"choices\": [{\"x\": " + deep + "}]");
  const std::string message = fatalMessage([&] { parseReplay(nested, "x.json"); });
  EXPECT_EQ(message, "x.json: not JSON of ftsim's (values nested more than 64 deep)");
}

// --- Mutation score ------------------------------------------------------------------------------

TEST(Mutants, EveryX86MutantIsKilledAndTheCorrectProtocolByNone) {
  const arch::Arch &x86 = arch::archByName("x86_64");
  MutationScore score = runMutants(x86, defaultMutantCheckers(x86));
  EXPECT_TRUE(score.correctSurvives);
  EXPECT_GE(score.mutants, 11u);
  EXPECT_EQ(score.killed, score.mutants);
  for (const MutantResult &r : score.results) {
    SCOPED_TRACE(r.protocol);
    EXPECT_EQ(r.killedBy.empty(), r.correct);
    if (r.protocol == "int3-skip") {
      // Byte-state safe: only the semantic oracle on a call->call site catches it.
      ASSERT_FALSE(r.killedBy.empty());
      EXPECT_EQ(r.killedBy.front(), "explore:call-to-call");
      EXPECT_NE(r.evidence.front().find("trace-completeness"), std::string::npos);
    }
  }
}

} // namespace
} // namespace ftsim::verify
