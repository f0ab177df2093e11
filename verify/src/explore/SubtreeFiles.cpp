// Job, result and checkpoint files of a split tree (SubtreeFiles.h), with nlohmann_json.

#include "ftsim/verify/explore/SubtreeFiles.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/InputFile.h"
#include "ftsim/verify/check/Check.h"

#include "../replay/JsonInput.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unistd.h>

namespace ftsim::verify {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr const char *kJobFormat = "ftsim-subtrees";
constexpr const char *kResultsFormat = "ftsim-subtree-results";
constexpr std::uint64_t kMaxSubtreeFileBytes = 1ull << 30;

std::string hex(std::uint64_t v) { return fmt::format("{:#018x}", v); }

// The field `key` of `j`, a count or an index (JsonInput.h).
template <typename T> T whole(const json &j, const char *key) {
  return detail::wholeNumber<T>(j.at(key), "", key);
}

std::uint64_t unhex(const json &j, const char *what) {
  const std::string s = j.get<std::string>();
  if (s.size() != 18 || s.rfind("0x", 0) != 0 ||
      s.find_first_not_of("0123456789abcdef", 2) != std::string::npos)
    fatal("{} is not a 64-bit hexadecimal value: '{}'", what, s);
  return std::stoull(s.substr(2), nullptr, 16);
}

json treeJson(const SplitTree &t) {
  json j;
  j["scenario"] = t.scenario.toToml();
  j["reduction"] = t.reduction;
  j["preemption_bound"] = t.preemptionBound;
  j["max_executions"] = t.maxExecutions;
  j["subtrees"] = t.subtrees;
  j["piece_executions"] = t.pieceExecutions;
  j["depth"] = t.plan.depth;
  j["count"] = t.plan.count;
  j["bound_cuts"] = t.plan.boundCuts;
  j["plan_digest"] = hex(t.plan.digest);
  return j;
}

SplitTree treeOf(const json &j, const std::string &origin) {
  SplitTree t;
  t.scenario = parseScenario(j.at("scenario").get<std::string>(), origin + " (its scenario)");
  t.reduction = j.at("reduction").get<bool>();
  t.preemptionBound = detail::boundNumber(j.at("preemption_bound"), "", "preemption_bound", -1);
  t.maxExecutions = whole<std::uint64_t>(j, "max_executions");
  t.subtrees = whole<unsigned>(j, "subtrees");
  t.pieceExecutions = whole<std::uint64_t>(j, "piece_executions");
  t.plan.depth = whole<std::size_t>(j, "depth");
  t.plan.count = whole<std::uint32_t>(j, "count");
  t.plan.boundCuts = whole<std::uint64_t>(j, "bound_cuts");
  t.plan.digest = unhex(j.at("plan_digest"), "plan_digest");
  if (t.subtrees == 0 || t.plan.count == 0 || t.maxExecutions == 0 || t.pieceExecutions == 0)
    fatal("the tree's subtrees, count, max_executions and piece_executions must be positive");
  return t;
}

// The digest of a file: FNV-1a of everything but "digest", canonically (sorted keys, compact).
std::uint64_t digestOf(const json &j) {
  nlohmann::json plain = nlohmann::json::parse(j.dump());
  plain.erase("digest");
  return fnv1a(plain.dump());
}

std::string seal(json j) {
  j["digest"] = hex(digestOf(j));
  return j.dump(1) + "\n";
}

// Parses `path` as a file of `format`, checks its version and digest; FatalError naming it.
json open(const std::string &path, const char *format) {
  const std::string text = readInputFile(path, "subtree file", kMaxSubtreeFileBytes);
  json j = detail::parseJsonInput<json>(text, path);
  if (!j.is_object() || !j.contains("format") || j["format"] != format)
    fatal("{}: not an {} file", path, format);
  if (!j.contains("version") || j["version"] != 1)
    fatal("{}: version {} of {} is not supported (1 is)", path,
          j.contains("version") ? detail::quotedValue(j["version"]) : "none", format);
  if (!j.contains("digest") || !j["digest"].is_string() ||
      j["digest"].get<std::string>() != hex(digestOf(j)))
    fatal("{}: the digest does not match the content: the file was edited or damaged", path);
  return j;
}

json resultJson(const SubtreeResult &r) {
  json j;
  const ExploreStats &s = r.stats;
  j["index"] = r.index;
  j["complete"] = s.complete;
  j["executions"] = s.executions;
  j["sleep_blocked"] = s.sleepBlocked;
  j["pruned"] = s.pruned;
  j["bound_cuts"] = s.boundCuts;
  j["event_limit_hits"] = s.eventLimitHits;
  j["decisions"] = s.decisions;
  j["events"] = s.events;
  j["max_events"] = s.maxEvents;
  j["max_preemptions"] = s.maxPreemptions;
  j["violating_executions"] = r.violatingExecutions;
  json states = json::array();
  for (std::uint64_t h : r.states)
    states.push_back(hex(h));
  j["states"] = states;
  if (r.counterexample) {
    const Counterexample &c = *r.counterexample;
    j["counterexample"] = {{"choices", c.choices},
                           {"preemptions", c.preemptions},
                           {"events", c.events},
                           {"log_fnv1a", hex(c.logHash)}};
  }
  return j;
}

SubtreeResult resultOf(const json &j) {
  SubtreeResult r;
  ExploreStats &s = r.stats;
  r.index = whole<std::uint32_t>(j, "index");
  s.complete = j.at("complete").get<bool>();
  s.executions = whole<std::uint64_t>(j, "executions");
  s.sleepBlocked = whole<std::uint64_t>(j, "sleep_blocked");
  s.pruned = whole<std::uint64_t>(j, "pruned");
  s.boundCuts = whole<std::uint64_t>(j, "bound_cuts");
  s.eventLimitHits = whole<std::uint64_t>(j, "event_limit_hits");
  s.decisions = whole<std::uint64_t>(j, "decisions");
  s.events = whole<std::uint64_t>(j, "events");
  s.maxEvents = whole<std::uint64_t>(j, "max_events");
  s.maxPreemptions = whole<unsigned>(j, "max_preemptions");
  r.violatingExecutions = whole<std::uint64_t>(j, "violating_executions");
  for (const json &h : j.at("states"))
    r.states.push_back(unhex(h, "a state"));
  s.distinctStates = r.states.size();
  if (j.contains("counterexample")) {
    const json &c = j["counterexample"];
    Counterexample cex;
    for (const json &choice : c.at("choices").get_ref<const json::array_t &>())
      cex.choices.push_back(detail::wholeNumber<std::uint32_t>(choice, "", "choices"));
    cex.preemptions = whole<unsigned>(c, "preemptions");
    cex.events = whole<std::uint64_t>(c, "events");
    cex.logHash = unhex(c.at("log_fnv1a"), "log_fnv1a");
    r.counterexample = cex;
  }
  return r;
}

template <typename F> auto parsing(const std::string &path, F &&f) {
  try {
    return f();
  } catch (const nlohmann::json::exception &e) {
    fatal("{}: a field is missing or of the wrong type ({})", path, e.what());
  } catch (const FatalError &e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0)
      throw;
    fatal("{}: {}", path, what);
  }
}

} // namespace

bool SplitTree::same(const SplitTree &o) const {
  return scenario.toToml() == o.scenario.toToml() && reduction == o.reduction &&
         preemptionBound == o.preemptionBound && maxExecutions == o.maxExecutions &&
         subtrees == o.subtrees && pieceExecutions == o.pieceExecutions &&
         plan.depth == o.plan.depth && plan.count == o.plan.count &&
         plan.boundCuts == o.plan.boundCuts && plan.digest == o.plan.digest;
}

SplitTree splitTreeOf(const Scenario &scenario, const ExploreOptions &o, const SubtreePlan &plan) {
  SplitTree t;
  t.scenario = scenario;
  t.reduction = o.reduction;
  t.preemptionBound = o.preemptionBound;
  t.maxExecutions = o.maxExecutions;
  t.subtrees = o.subtrees;
  t.pieceExecutions = o.pieceExecutions;
  t.plan = plan;
  return t;
}

ExploreOptions exploreOptionsOf(const SplitTree &t) {
  ExploreOptions o = exploreOptionsFor(t.scenario);
  o.explorer = "exhaustive";
  o.reduction = t.reduction;
  o.preemptionBound = t.preemptionBound;
  o.maxExecutions = t.maxExecutions;
  o.subtrees = t.subtrees;
  o.pieceExecutions = t.pieceExecutions;
  return o;
}

std::string subtreeJobJson(const SubtreeJob &job) {
  json j;
  j["format"] = kJobFormat;
  j["version"] = 1;
  j["tree"] = treeJson(job.tree);
  j["subtrees"] = job.subtrees;
  return seal(j);
}

std::string subtreeResultsJson(const SubtreeResults &r) {
  json j;
  j["format"] = kResultsFormat;
  j["version"] = 1;
  j["tree"] = treeJson(r.tree);
  json results = json::array();
  for (const auto &[index, result] : r.results)
    results.push_back(resultJson(result));
  j["results"] = results;
  return seal(j);
}

SubtreeJob loadSubtreeJob(const std::string &path) {
  const json j = open(path, kJobFormat);
  return parsing(path, [&] {
    SubtreeJob job;
    job.tree = treeOf(j.at("tree"), path);
    for (const json &i : j.at("subtrees").get_ref<const json::array_t &>())
      job.subtrees.push_back(detail::wholeNumber<std::uint32_t>(i, "", "subtrees"));
    if (job.subtrees.empty())
      fatal("it names no subtree");
    for (std::uint32_t i : job.subtrees)
      if (i >= job.tree.plan.count)
        fatal("subtree {} does not exist (the tree has {})", i, job.tree.plan.count);
    return job;
  });
}

SubtreeResults loadSubtreeResults(const std::string &path) {
  const json j = open(path, kResultsFormat);
  return parsing(path, [&] {
    SubtreeResults r;
    r.tree = treeOf(j.at("tree"), path);
    for (const json &e : j.at("results")) {
      SubtreeResult one = resultOf(e);
      if (one.index >= r.tree.plan.count)
        fatal("subtree {} does not exist (the tree has {})", one.index, r.tree.plan.count);
      if (!r.results.emplace(one.index, std::move(one)).second)
        fatal("subtree {} appears twice", whole<std::uint32_t>(e, "index"));
    }
    return r;
  });
}

std::string resealedSubtreeFile(const std::string &text) {
  json j = detail::parseJsonInput<json>(text, "a subtree file");
  if (!j.is_object())
    fatal("a subtree file: not a JSON object");
  return seal(std::move(j));
}

std::string subtreeResultToJson(const SubtreeResult &result) { return resultJson(result).dump(); }

SubtreeResult subtreeResultFromJson(const std::string &text) {
  return parsing("a subtree result",
                 [&] { return resultOf(detail::parseJsonInput<json>(text, "a subtree result")); });
}

void writeFileAtomically(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      fatal("{}: cannot write", tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    fatal("{}: cannot rename to {}: {}", tmp, path, ec.message());
}

std::vector<std::string> writeSplitFiles(const SplitTree &tree, unsigned files,
                                         const std::string &dir) {
  if (files == 0)
    fatal("--split 0: at least 1 file");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    fatal("--split {}: not a directory that can be made", dir);
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("subtree-", 0) == 0)
      fatal("--split {}: the directory already holds subtree files ({})", dir,
            entry.path().filename().string());
  files = std::min<unsigned>(files, tree.plan.count);
  std::vector<std::string> paths;
  for (unsigned f = 0; f < files; ++f) {
    SubtreeJob job{tree, {}};
    for (std::uint32_t i = f; i < tree.plan.count; i += files)
      job.subtrees.push_back(i);
    paths.push_back((fs::path(dir) / fmt::format("subtree-{:03}.json", f)).string());
    writeFileAtomically(paths.back(), subtreeJobJson(job));
  }
  return paths;
}

std::string resultPathOf(const std::string &jobPath) {
  const std::string ext = ".json";
  if (jobPath.size() > ext.size() &&
      jobPath.compare(jobPath.size() - ext.size(), ext.size(), ext) == 0)
    return jobPath.substr(0, jobPath.size() - ext.size()) + ".result.json";
  return jobPath + ".result.json";
}

SubtreeResults loadResultsDir(const std::string &dir) {
  if (!fs::is_directory(dir))
    fatal("merge {}: not a directory", dir);
  std::vector<std::string> paths;
  for (const auto &entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".result.json") == 0)
      paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    fatal("merge {}: no result files (*.result.json) in it", dir);
  SubtreeResults all = loadSubtreeResults(paths.front());
  for (std::size_t k = 1; k < paths.size(); ++k) {
    SubtreeResults more = loadSubtreeResults(paths[k]);
    if (!more.tree.same(all.tree))
      fatal("{}: made for another tree than {} (scenario, bounds or split differ)", paths[k],
            paths.front());
    for (auto &[index, r] : more.results)
      if (!all.results.emplace(index, std::move(r)).second)
        fatal("{}: subtree {} has a result in another file too", paths[k], index);
  }
  return all;
}

std::shared_ptr<SubtreeHooks> checkpointHooks(const Scenario &scenario,
                                              const ExploreOptions &options,
                                              const CheckpointOptions &checkpoint) {
  struct State {
    std::mutex mutex;
    SubtreeResults saved;
    std::chrono::steady_clock::time_point last;
    bool dirty = false;
  };
  auto state = std::make_shared<State>();
  auto hooks = std::make_shared<SubtreeHooks>();
  auto save = [state, checkpoint] {
    if (checkpoint.path.empty() || !state->dirty)
      return;
    writeFileAtomically(checkpoint.path, subtreeResultsJson(state->saved));
    state->dirty = false;
    state->last = std::chrono::steady_clock::now();
  };
  hooks->begin = [state, scenario, options, checkpoint](
                     const SubtreePlan &plan, std::map<std::uint32_t, SubtreeResult> &done) {
    state->saved.tree = splitTreeOf(scenario, options, plan);
    state->last = std::chrono::steady_clock::now();
    if (checkpoint.resumeFrom.empty())
      return;
    SubtreeResults loaded = loadSubtreeResults(checkpoint.resumeFrom);
    if (!loaded.tree.same(state->saved.tree))
      fatal("--resume {}: the checkpoint was made for another tree (scenario, bounds or split "
            "differ)",
            checkpoint.resumeFrom);
    state->saved.results = loaded.results;
    done = std::move(loaded.results);
  };
  hooks->finished = [state, checkpoint, save](const SubtreeResult &r) {
    state->saved.results[r.index] = r;
    state->dirty = true;
    if (std::chrono::steady_clock::now() - state->last >= checkpoint.every)
      save();
  };
  hooks->end = save;
  return hooks;
}

} // namespace ftsim::verify
