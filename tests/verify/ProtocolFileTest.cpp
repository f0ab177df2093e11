// Protocols as files: every built-in protocol is a file that parses back to itself, the shipped
// files in corpora/protocols/ spell the built-ins, a file and its built-in explore identically,
// Olsa's merge verdicts, a protocol that never patches is a violation, and broken files are one
// line naming the step and the key.

#include "ftsim/verify/scenario/ProtocolFile.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/ProtocolProgram.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/harness/Harness.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "Corpus.h"
#include "FatalMessage.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ftsim::verify {
namespace {

const std::string kProtocols = test::corpusDir("protocols") + "/";

using test::fatalMessage;

ExploreResult run(const Scenario &s) {
  std::unique_ptr<Harness> h = makeHarness(s, test::builtImages());
  ExploreOptions o = exploreOptionsFor(s);
  o.jobs = 1;
  return explore(*h, o);
}

void expectSameExploration(const ExploreResult &a, const ExploreResult &b,
                           const std::string &what) {
  EXPECT_EQ(a.stats.executions, b.stats.executions) << what;
  EXPECT_EQ(a.stats.distinctStates, b.stats.distinctStates) << what;
  EXPECT_EQ(a.stats.events, b.stats.events) << what;
  EXPECT_EQ(a.stats.complete, b.stats.complete) << what;
  ASSERT_EQ(a.counterexample.has_value(), b.counterexample.has_value()) << what;
  if (a.counterexample) {
    EXPECT_EQ(a.counterexample->choices, b.counterexample->choices) << what;
    EXPECT_EQ(a.counterexample->violation.oracle, b.counterexample->violation.oracle) << what;
    EXPECT_EQ(a.counterexample->violation.event, b.counterexample->violation.event) << what;
    EXPECT_EQ(a.counterexample->violation.bytes, b.counterexample->violation.bytes) << what;
  }
}

TEST(ProtocolFiles, EveryBuiltinProtocolIsAFileThatReadsBackAsItself) {
  unsigned n = 0;
  for (const arch::Arch *a : arch::executableArchs())
    for (const arch::ProtocolEntry &e : a->protocolTable()) {
      ASSERT_TRUE(e.program) << e.info.name << " is not a program";
      const std::string text = builtinProtocolFileText(e.info.name, std::string(a->name()));
      const arch::ProtocolProgram back = parseProtocolText(text, e.info.name);
      EXPECT_EQ(back, *e.program) << text;
      EXPECT_EQ(back.correct, e.info.correct) << e.info.name;
      EXPECT_FALSE(back.source.empty()) << e.info.name << " names no Linux code";
      EXPECT_FALSE(back.fidelity.empty()) << e.info.name;
      ++n;
    }
  EXPECT_GE(n, 17u);
}

TEST(ProtocolFiles, TheShippedFilesSpellTheBuiltins) {
  unsigned n = 0;
  for (const auto &entry : std::filesystem::directory_iterator(kProtocols)) {
    const arch::ProtocolProgram p = readProtocolFile(entry.path().string());
    const auto builtin = arch::tableProgram(arch::archByName(p.arch), p.name);
    if (!builtin)
      continue; // a protocol of its own (olsa-merge)
    EXPECT_TRUE(builtin->sameSteps(p)) << entry.path();
    ++n;
  }
  EXPECT_EQ(n, 17u);
}

// The file's program under another name (so the registry cannot hand back the built-in) and the
// built-in: same executions, states, events and counterexample.
Scenario withFileProtocol(Scenario s, const std::string &name) {
  arch::ProtocolProgram p = readProtocolFile(kProtocols + name + ".toml");
  p.name = "file-" + name;
  arch::registerFileProtocol(p);
  s.protocol = p.name;
  s.linuxProfile.clear(); // the renamed copy is no release's protocol by name
  return s;
}

TEST(ProtocolFiles, AFileAndItsBuiltinExploreIdenticallyX86) {
  for (const arch::ProtocolEntry &e : arch::archByName("x86_64").protocolTable()) {
    Scenario s;
    s.name = "file-vs-builtin";
    s.protocol = e.info.name;
    s.cpus = 2;
    s.sites.assign(2, Transition::NopToCall);
    s.descending = e.info.name == "int3-unsorted"; // the queue's order check matters only then
    s.validate("test");
    const ExploreResult builtin = run(s);
    const ExploreResult file = run(withFileProtocol(s, e.info.name));
    expectSameExploration(builtin, file, e.info.name);
    if (e.info.correct) { // a mutant may need another scenario to show its violation
      EXPECT_FALSE(builtin.counterexample) << e.info.name;
    }
  }
}

TEST(ProtocolFiles, AFileAndItsBuiltinExploreIdenticallyPpc32) {
  for (const char *scenario : {"ppc32-mflr-wrong-order", "ppc32-mflr-wrong-order-fixed",
                               "ppc32-mflr-no-grace", "ppc-word"}) {
    const Scenario s = loadScenarioFile(test::corpusScenarioPath(scenario));
    expectSameExploration(run(s), run(withFileProtocol(s, s.protocol)), scenario);
  }
}

Scenario olsa(const char *fetch, unsigned offset) {
  Scenario s;
  s.name = "olsa";
  s.protocol = loadProtocolFile(kProtocols + "olsa-merge.toml").name;
  s.fetch = &sim::fetchModelByName(fetch);
  s.siteOffset = offset;
  s.validate("test");
  return s;
}

// papers/open-questions/olsa-merge.md: safe when a CPU fetches a site atomically, or by cache
// lines when the site's first byte shares its line with the tail; torn otherwise.
TEST(ProtocolFiles, OlsaMergeVerdictsPerFetchModel) {
  EXPECT_FALSE(run(olsa("atomic", 4)).counterexample);
  EXPECT_FALSE(run(olsa("atomic", 62)).counterexample);
  EXPECT_FALSE(run(olsa("line", 4)).counterexample);
  const ExploreResult crossing = run(olsa("line", 62));
  ASSERT_TRUE(crossing.counterexample);
  EXPECT_EQ(crossing.counterexample->violation.oracle, "torn-fetch");
  EXPECT_EQ(arch::hexBytes(crossing.counterexample->violation.bytes), "0f 1f 2e 00 00");
  const ExploreResult stale = run(olsa("stale", 4));
  ASSERT_TRUE(stale.counterexample);
  EXPECT_EQ(stale.counterexample->violation.oracle, "torn-fetch");
}

TEST(ProtocolFiles, AScenarioCarriesItsProtocolProgram) {
  Scenario s = olsa("stale", 4);
  s.protocolProgram = readProtocolFile(kProtocols + "olsa-merge.toml");
  const Scenario back = parseScenario(s.toToml(), "round-trip");
  ASSERT_TRUE(back.protocolProgram);
  EXPECT_EQ(*back.protocolProgram, *s.protocolProgram);
  EXPECT_EQ(back.protocol, "olsa-merge");
}

// A protocol that never writes the new instruction (a sync alone, the old bytes again) is safe for
// every CPU at every instant and does nothing: it was VERIFIED; the patch-applied oracle refuses
// it on both ISAs, naming the bytes the site was left with.
TEST(ProtocolFiles, AProtocolThatNeverWritesTheNewInstructionIsAViolation) {
  int files = 0; // each its own name: the names of protocol files are the process's
  const auto leftWith = [&files](const std::string &isa, const std::string &steps) {
    const std::string text = "name = \"t\"\narch = \"" + isa + "\"\ncpus = 2\n" +
                             (arch::archByName(isa).atomicInsnWords() ? "store = \"word\"\n" : "") +
                             "[protocol_program]\nname = \"does-nothing-" +
                             std::to_string(++files) + "\"\narch = \"" + isa +
                             "\"\nsteps = " + steps + "\n";
    const ExploreResult r = run(parseScenario(text, "t.toml"));
    EXPECT_TRUE(r.counterexample) << isa << " " << steps;
    if (!r.counterexample)
      return std::string();
    EXPECT_EQ(r.counterexample->violation.oracle, "patch-applied") << isa << " " << steps;
    return arch::hexBytes(r.counterexample->violation.bytes);
  };
  EXPECT_EQ(leftWith("x86_64", "[\"sync\"]"), "0f 1f 44 00 00");
  EXPECT_EQ(leftWith("x86_64", "[{ write = \"whole\", value = \"old\" }, \"sync\"]"),
            "0f 1f 44 00 00");
  EXPECT_EQ(leftWith("ppc32", "[\"sync\"]"), "60 00 00 00");
  // Linux's own steps complete the patch (the correct protocols above find no counterexample).
}

TEST(ProtocolFiles, BrokenFilesAreOneLineNamingTheStepAndKey) {
  const std::string head = "name = \"p\"\narch = \"x86_64\"\n";
  const auto error = [&](const std::string &steps) {
    return fatalMessage([&] { parseProtocolText(head + steps, "p.toml"); });
  };
  EXPECT_EQ(error("steps = [\"publish\", { write = \"tail\", value = \"int3\" }]"),
            "p.toml: step 2: key 'value': int3 is one byte; write it as the first byte (write = "
            "\"first\")");
  EXPECT_EQ(error("steps = [{ write = \"middle\", value = \"new\" }]"),
            "p.toml: step 1: key 'write': 'middle' is not one of first, tail, whole");
  EXPECT_EQ(error("steps = [\"sync\", \"flush\"]"),
            "p.toml: step 2: no operation (one of write, sync, publish, withdraw)");
  EXPECT_EQ(error("steps = [{ write = \"first\" }]"),
            "p.toml: step 1: missing key 'value' (one of int3, old, new)");
  EXPECT_EQ(error("steps = [{ sync = \"now\" }]"), "p.toml: step 1: key 'sync' takes no value");
  EXPECT_EQ(error("steps = []"), "p.toml: key 'steps': a protocol needs at least one step");
  EXPECT_EQ(error("handler = \"ignore\"\nsteps = [\"sync\"]"),
            "p.toml: key 'handler': 'ignore' is not one of emulate, skip, unknown");
  EXPECT_EQ(error("colour = 1\nsteps = [\"sync\"]").substr(0, 30),
            "p.toml: unknown key 'colour' (");
  EXPECT_EQ(fatalMessage([&] {
              parseProtocolText(
                  "name = \"q\"\narch = \"ppc32\"\nsteps = [{ write = [\"bl-write\"] }]", "q.toml");
            }),
            "q.toml: step 1: key 'write': 'bl-write' is not one of site");
  EXPECT_NE(fatalMessage([&] {
              parseProtocolText("name = \"p\"\narch = ", "p.toml");
            }).find("p.toml: line 2"),
            std::string::npos);
  // A built-in's name with other steps is refused; with its own steps it is the built-in.
  EXPECT_NE(fatalMessage([&] {
              arch::registerFileProtocol(
                  parseProtocolText("name = \"int3\"\narch = \"x86_64\"\nsteps = [\"sync\"]", "x"));
            }).find("give the file's protocol another name"),
            std::string::npos);
  arch::ProtocolProgram int3 = readProtocolFile(kProtocols + "int3.toml");
  EXPECT_NO_THROW(arch::registerFileProtocol(int3));
  int3.name = "direct";
  EXPECT_NE(
      fatalMessage([&] { arch::registerFileProtocol(int3); }).find("built-in x86_64 protocol"),
      std::string::npos);
}

// Found by tests/fuzz (ftsim_fuzz_protocol, in its first 3 s): toml++'s description of what it
// saw, and the values a message quotes, held the file's newlines, as scenario files' did before.
TEST(ProtocolFiles, ErrorsAreOneLineWhateverTheFileHolds) {
  const std::pair<std::string, std::string> cases[] = {
      {"name = \"p\"\narch = \"x86_64\"\nsteps = [\n  n\n]\n", "expected 'nan'"},
      {"name = \"p\"\narch = \"x86_64\"\nexpect = \"v\\nx\"\nsteps = [\"sync\"]\n",
       "expect 'v\\nx'"},
      {"name = \"p\"\narch = \"x86_64\"\nsteps = [{ write = \"fi\\trst\", value = \"new\" }]\n",
       "'fi\\trst' is not one of first"},
  };
  for (const auto &[text, expected] : cases) {
    const std::string &source = text; // clang before 16 cannot capture a structured binding
    test::expectOneLineRefusal(
        "p.toml", [&] { parseProtocolText(source, "p.toml"); }, expected);
  }
}

} // namespace
} // namespace ftsim::verify
