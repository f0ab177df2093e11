// Replay files (nlohmann_json) and their byte-for-byte reproduction.

#include "ftsim/verify/replay/Replay.h"
#include "ftsim/arch/InputFile.h"

#include "ftsim/verify/replay/Timeline.h"

#include "JsonInput.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/OneLine.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <exception>
#include <fstream>

namespace ftsim::verify {

namespace {

// The parts of a replay file its digests cover, each as the fields it holds.
struct Part {
  const char *name;
  std::vector<const char *> fields;
};
const Part kParts[] = {
    {"scenario", {"arch", "protocol", "store", "fetch", "scenario"}},
    {"schedule", {"choices", "preemptions", "events", "log_fnv1a"}},
    {"expectation", {"expect"}},
};

// FNV-1a of the part's fields in a canonical form (sorted keys, compact), so the digest is that
// of the values whatever the file's layout.
// The schedule's optional "then" (the continuation after the choices) joins its digest only when
// present, so files written without it keep theirs.
std::uint64_t partDigest(const nlohmann::json &j, const Part &part) {
  nlohmann::json canonical = nlohmann::json::array();
  for (const char *field : part.fields)
    canonical.push_back(j.contains(field) ? j.at(field) : nlohmann::json());
  if (std::string_view(part.name) == "schedule" && j.contains("then"))
    canonical.push_back(j.at("then"));
  return fnv1a(canonical.dump());
}

constexpr const char *kContinue = "continue";

// The choices as stored: each answer, and each run of decisions the continuation answers as one
// {"continue": N} (a minimised counterexample is its few deviations and such runs).
nlohmann::json choicesToJson(const std::vector<std::uint32_t> &choices) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < choices.size();) {
    if (choices[i] != kContinuationChoice) {
      out.push_back(choices[i++]);
      continue;
    }
    std::size_t run = 0;
    for (; i < choices.size() && choices[i] == kContinuationChoice; ++i)
      ++run;
    out.push_back({{kContinue, run}});
  }
  return out;
}

} // namespace

std::string replayToJson(const Scenario &scenario, const Counterexample &cex) {
  nlohmann::ordered_json j;
  j["format"] = "ftsim-replay";
  j["version"] = 2;
  j["arch"] = scenario.arch;
  j["protocol"] = scenario.protocol;
  j["store"] = std::string(sim::storeModelName(scenario.store));
  j["fetch"] = std::string(scenario.fetch->name());
  j["scenario"] = scenario.toToml();
  j["choices"] = choicesToJson(cex.choices);
  if (cex.continues)
    j["then"] = kContinue;
  j["preemptions"] = cex.preemptions;
  j["events"] = cex.events;
  j["log_fnv1a"] = fmt::format("{:#018x}", cex.logHash);
  nlohmann::ordered_json e;
  e["oracle"] = cex.violation.oracle;
  e["summary"] = summarizeViolation(cex.violation);
  e["event"] = cex.violation.event;
  e["bytes"] = arch::hexBytes(cex.violation.bytes);
  e["decoded"] = cex.violation.decoded;
  j["expect"] = e;
  const nlohmann::json plain = nlohmann::json::parse(j.dump());
  nlohmann::ordered_json digests;
  for (const Part &part : kParts)
    digests[part.name] = fmt::format("{:#018x}", partDigest(plain, part));
  j["digests"] = digests;
  return j.dump(2) + "\n";
}

void writeReplayFile(const std::string &path, const Scenario &scenario, const Counterexample &cex) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fatal("{}: cannot write the replay file", path);
  out << replayToJson(scenario, cex);
  if (!out)
    fatal("{}: cannot write the replay file", path);
}

namespace {
arch::Bytes parseHexBytes(const std::string &text, const std::string &origin) {
  arch::Bytes out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(text.substr(i, 2), &used, 16);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != 2 || v > 0xff)
      fatal("{}: expect.bytes '{}' is not a list of hex bytes", origin, text);
    out.push_back(static_cast<std::uint8_t>(v));
    i += 2;
  }
  return out;
}
} // namespace

namespace {
ReplayFile parseReplayText(const std::string &text, const std::string &origin) {
  const auto j = detail::parseJsonInput<nlohmann::json>(text, origin);
  auto field = [&](const nlohmann::json &obj, const char *key) -> const nlohmann::json & {
    if (!obj.is_object() || !obj.contains(key))
      fatal("{}: not a replay file: missing '{}'", origin, key);
    return obj.at(key);
  };
  try {
    if (field(j, "format") != "ftsim-replay")
      fatal("{}: not a replay file (format is not \"ftsim-replay\")", origin);
    if (field(j, "version") != 2)
      fatal("{}: replay format version {} is not supported (2 is: the version with digests; "
            "write the file again with ftsim check)",
            origin, detail::quotedValue(field(j, "version")));
    ReplayFile file;
    file.scenario = parseScenario(field(j, "scenario").get<std::string>(), origin + " (scenario)");
    const Scenario &s = file.scenario;
    if (field(j, "arch") != s.arch || field(j, "protocol") != s.protocol ||
        field(j, "store") != sim::storeModelName(s.store) || field(j, "fetch") != s.fetch->name())
      fatal("{}: arch/protocol/store/fetch disagree with the embedded scenario", origin);
    Counterexample &c = file.counterexample;
    const nlohmann::json &choices = field(j, "choices");
    if (!choices.is_array())
      fatal("{}: 'choices' must be an array of whole numbers and {{\"{}\": N}} runs", origin,
            kContinue);
    for (const nlohmann::json &choice : choices) {
      if (!choice.is_object()) {
        const auto answer = detail::wholeNumber<std::uint32_t>(choice, origin, "choices");
        if (answer == kContinuationChoice)
          fatal("{}: 'choices' holds {}, which is no option (the continuation's answers are "
                "stored as {{\"{}\": N}})",
                origin, answer, kContinue);
        c.choices.push_back(answer);
        continue;
      }
      if (choice.size() != 1 || !choice.contains(kContinue))
        fatal("{}: a run in 'choices' must be {{\"{}\": N}}, not {}", origin, kContinue,
              detail::quotedValue(choice));
      // A run longer than the scenario's events cannot fit it (one decision per event at most).
      const auto run = detail::wholeNumber<std::uint64_t>(choice.at(kContinue), origin, "choices");
      if (run > s.bounds.maxEvents)
        fatal("{}: a run of {} decisions in 'choices' is longer than the scenario's max_events "
              "({})",
              origin, run, s.bounds.maxEvents);
      c.choices.insert(c.choices.end(), run, kContinuationChoice);
    }
    if (j.contains("then")) {
      if (j.at("then") != kContinue)
        fatal("{}: 'then' must be \"{}\" (the continuation after the choices), not {}", origin,
              kContinue, detail::quotedValue(j.at("then")));
      c.continues = true;
    }
    c.preemptions = detail::wholeNumber<unsigned>(field(j, "preemptions"), origin, "preemptions");
    c.events = detail::wholeNumber<std::uint64_t>(field(j, "events"), origin, "events");
    const std::string hash = field(j, "log_fnv1a").get<std::string>();
    try {
      std::size_t used = 0;
      c.logHash = std::stoull(hash, &used, 16);
      if (used != hash.size())
        throw std::invalid_argument(hash);
    } catch (const std::exception &) {
      fatal("{}: log_fnv1a '{}' is not a hexadecimal hash", origin, hash);
    }
    const nlohmann::json &e = field(j, "expect");
    c.violation.oracle = field(e, "oracle").get<std::string>();
    c.violation.message = field(e, "summary").get<std::string>(); // compared as a summary
    c.violation.event =
        detail::wholeNumber<std::uint64_t>(field(e, "event"), origin, "expect.event");
    c.violation.decoded = field(e, "decoded").get<std::string>();
    c.violation.bytes = parseHexBytes(field(e, "bytes").get<std::string>(), origin);
    // Every part as written (checked once every field is well-formed): an edited file is refused
    // before it runs, naming the part.
    const nlohmann::json &digests = field(j, "digests");
    for (const Part &part : kParts) {
      const std::string written = field(digests, part.name).get<std::string>();
      const std::string now = fmt::format("{:#018x}", partDigest(j, part));
      if (written != now)
        fatal("{}: the {} was edited after the file was written (digest {}, the file says {})",
              origin, part.name, now, written);
    }
    return file;
  } catch (const nlohmann::json::exception &e) {
    fatal("{}: malformed replay file ({})", origin, e.what());
  }
}
} // namespace

ReplayFile parseReplay(const std::string &text, const std::string &origin) {
  // The messages quote what the file holds (expect.bytes, log_fnv1a).
  return withOneLineErrors([&] { return parseReplayText(text, origin); });
}

ReplayFile loadReplayFile(const std::string &path) {
  return parseReplay(readInputFile(path, "replay file", kMaxReplayFileBytes), path);
}

Reproduction reproduce(Harness &harness, const ReplayFile &file, const std::string &origin,
                       bool fullTimeline) {
  Reproduction r;
  try {
    r.execution =
        replayChoices(harness, file.counterexample.choices, {}, file.counterexample.continues);
  } catch (const FatalError &e) {
    fatal("{}: does not replay: {}", origin, e.what());
  }
  const Counterexample &c = file.counterexample;
  if (r.execution.logHash != c.logHash)
    fatal("{}: does not reproduce byte for byte: event log hash {:#018x}, the file says {:#018x} "
          "(another build of the guest, or an edited file)",
          origin, r.execution.logHash, c.logHash);
  if (r.execution.violations.empty())
    fatal("{}: does not reproduce: the execution has no violation, the file expects {}", origin,
          c.violation.oracle);
  const Violation &got = r.execution.violations.front();
  auto differs = [&](const char *field, const std::string &want, const std::string &have) {
    if (want != have)
      fatal("{}: does not reproduce: expect.{} is '{}', the execution shows '{}'", origin, field,
            want, have);
  };
  differs("oracle", c.violation.oracle, got.oracle);
  differs("summary", c.violation.message, summarizeViolation(got));
  differs("event", std::to_string(c.violation.event), std::to_string(got.event));
  differs("bytes", arch::hexBytes(c.violation.bytes), arch::hexBytes(got.bytes));
  differs("decoded", c.violation.decoded, got.decoded);
  r.violation = got;
  attachTrail(harness, r.violation, fullTimeline);
  r.timeline = timeline(harness, &r.violation, fullTimeline);
  return r;
}

} // namespace ftsim::verify
