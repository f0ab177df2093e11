// Job, result and checkpoint files (SubtreeFiles.h) that are well-formed JSON with a matching
// digest but wrong inside: each is refused with one line naming the file and the key. A version
// that was not a number escaped as nlohmann's type_error (ftsim check --subtree aborted), and a
// negative or fractional count was wrapped or cast by get<T>().

#include "ftsim/verify/explore/SubtreeFiles.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/check/Check.h"
#include "ftsim/verify/explore/Explore.h"
#include "ftsim/verify/scenario/Scenario.h"

#include "TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <string>

namespace ftsim::verify {
namespace {

using json = nlohmann::ordered_json;

SplitTree smallTree() {
  const Scenario s =
      parseScenario("name = \"t\"\narch = \"x86_64\"\nprotocol = \"int3\"\ncpus = 2\n"
                    "[[sites]]\ntransition = \"nop-to-call\"\n",
                    "t.toml");
  SubtreePlan plan;
  plan.depth = 2;
  plan.count = 4;
  plan.digest = 0x1234;
  ExploreOptions o = exploreOptionsFor(s);
  o.subtrees = 8;
  o.pieceExecutions = 16;
  o.maxExecutions = 1000;
  return splitTreeOf(s, o, plan);
}

SubtreeResults smallResults() {
  SubtreeResults r{smallTree(), {}};
  SubtreeResult one;
  one.index = 1;
  one.stats.executions = 3;
  one.states = {0x10, 0x20};
  one.counterexample = Counterexample{};
  one.counterexample->choices = {0, 1, 0};
  r.results.emplace(1, one);
  return r;
}

// `text` edited by `edit` and sealed again with a matching digest, written to `path`.
void writeResealed(const std::string &path, const std::string &text,
                   const std::function<void(json &)> &edit) {
  json j = json::parse(text);
  edit(j);
  std::ofstream(path, std::ios::trunc) << resealedSubtreeFile(j.dump());
}

template <typename Load>
std::string refusal(const std::string &path, const std::string &text,
                    const std::function<void(json &)> &edit, Load load) {
  writeResealed(path, text, edit);
  try {
    load(path);
  } catch (const FatalError &e) {
    return e.what();
  }
  return "accepted";
}

void expectNamed(const std::string &message, const std::string &path, const std::string &what) {
  EXPECT_EQ(message.rfind(path, 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
}

TEST(SubtreeFiles, ResealedFilesWithBadValuesAreRefusedNamingTheKey) {
  const test::TempDir dir;
  const std::string path = dir / "f.json";
  const std::string job = subtreeJobJson({smallTree(), {0, 2}});
  const std::string results = subtreeResultsJson(smallResults());
  // Unedited, both load as written.
  writeResealed(path, job, [](json &) {});
  EXPECT_EQ(loadSubtreeJob(path).subtrees, (std::vector<std::uint32_t>{0, 2}));
  writeResealed(path, results, [](json &) {});
  EXPECT_EQ(loadSubtreeResults(path).results.at(1).counterexample->choices,
            (std::vector<std::uint32_t>{0, 1, 0}));

  const auto jobRefusal = [&](const std::function<void(json &)> &edit) {
    return refusal(path, job, edit, loadSubtreeJob);
  };
  const auto resultsRefusal = [&](const std::function<void(json &)> &edit) {
    return refusal(path, results, edit, loadSubtreeResults);
  };
  expectNamed(jobRefusal([](json &j) { j["version"] = "1"; }), path, "version \"1\"");
  expectNamed(jobRefusal([](json &j) { j.erase("version"); }), path, "version none");
  expectNamed(jobRefusal([](json &j) { j["subtrees"] = {0, -2}; }), path, "'subtrees'");
  expectNamed(jobRefusal([](json &j) { j["subtrees"] = {0.5}; }), path, "'subtrees'");
  expectNamed(jobRefusal([](json &j) { j["subtrees"] = 7; }), path, "wrong type");
  expectNamed(jobRefusal([](json &j) { j["tree"]["max_executions"] = 1e300; }), path,
              "'max_executions' must be a whole number");
  expectNamed(jobRefusal([](json &j) { j["tree"]["count"] = -1; }), path, "'count'");
  expectNamed(jobRefusal([](json &j) { j["tree"]["preemption_bound"] = -2; }), path,
              "'preemption_bound' must be a whole number from -1");
  expectNamed(jobRefusal([](json &j) { j["tree"]["preemption_bound"] = 1.5; }), path,
              "'preemption_bound'");
  expectNamed(resultsRefusal([](json &j) { j["results"][0]["executions"] = -3; }), path,
              "'executions'");
  expectNamed(resultsRefusal([](json &j) { j["results"][0]["index"] = 4294967296.0; }), path,
              "'index'");
  expectNamed(resultsRefusal([](json &j) { j["results"][0]["counterexample"]["choices"] = {-1}; }),
              path, "'choices'");
  expectNamed(resultsRefusal([](json &j) { j["results"][0]["max_preemptions"] = 1e10; }), path,
              "'max_preemptions'");
  // A value quoted in a message is cut short: one line of bounded length.
  const std::string longValue = jobRefusal([](json &j) { j["version"] = std::string(5000, 'x'); });
  expectNamed(longValue, path, "version");
  EXPECT_LT(longValue.size(), path.size() + 200) << longValue;
}

// A file nested 400,000 deep: the digest check's dump() recursed until the stack ran out
// (`ftsim check --subtree` died of SIGSEGV). Values nest at most 64 deep.
TEST(SubtreeFiles, DeeplyNestedFilesAreRefusedNotACrash) {
  const test::TempDir dir;
  const std::string path = dir / "deep.json";
  const std::string deep = std::string(400000, '[') + std::string(400000, ']');
  std::ofstream(path) << "{\"format\": \"ftsim-subtrees\", \"version\": 1, \"x\": " << deep
                      << ", \"digest\": \"0x0\"}";
  const std::string expected = path + ": not JSON of ftsim's (values nested more than 64 deep)";
  for (const auto &load : {+[](const std::string &p) { (void)loadSubtreeJob(p); },
                           +[](const std::string &p) { (void)loadSubtreeResults(p); }}) {
    try {
      load(path);
      ADD_FAILURE() << "accepted";
    } catch (const FatalError &e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
  try {
    (void)subtreeResultFromJson("{\"index\": " + deep + "}");
    ADD_FAILURE() << "accepted";
  } catch (const FatalError &e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 64 deep"), std::string::npos)
        << e.what();
  }
}

// The messages between MPI ranks go through the same checks.
TEST(SubtreeFiles, ASubtreeResultMessageWithABadCountIsRefused) {
  SubtreeResult one;
  one.index = 2;
  one.stats.executions = 5;
  json j = json::parse(subtreeResultToJson(one));
  EXPECT_EQ(subtreeResultFromJson(j.dump()).stats.executions, 5u);
  j["executions"] = -5;
  try {
    subtreeResultFromJson(j.dump());
    ADD_FAILURE() << "accepted";
  } catch (const FatalError &e) {
    expectNamed(e.what(), "a subtree result", "'executions'");
  }
}

} // namespace
} // namespace ftsim::verify
