// Protocol files (ProtocolFile.h): TOML <-> arch::ProtocolProgram. The ISA checks the steps'
// words (compileProtocol); this file checks the shape and prefixes every error with the file.

#include "ftsim/verify/scenario/ProtocolFile.h"

#include "ProtocolTable.h"
#include "TomlReader.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/InputFile.h"
#include "ftsim/arch/OneLine.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <sstream>

namespace ftsim::verify {
namespace {

// A step's value: a word, or (ppc32 `write`) a list of words.
std::vector<std::string> stepValue(const toml::node &n, std::size_t index, std::string_view key,
                                   const std::string &origin) {
  if (n.is_string())
    return {*n.value<std::string>()};
  if (const toml::array *a = n.as_array()) {
    std::vector<std::string> out;
    for (const toml::node &e : *a) {
      if (!e.is_string())
        fatal("{}: step {}: key '{}' must be a word or a list of words", origin, index, key);
      out.push_back(*e.value<std::string>());
    }
    return out;
  }
  fatal("{}: step {}: key '{}' must be a word or a list of words", origin, index, key);
}

arch::ProtocolStep parseStep(const toml::node &n, std::size_t index, const std::string &origin) {
  arch::ProtocolStep step;
  if (n.is_string()) {
    step.keys[*n.value<std::string>()] = {};
    return step;
  }
  const toml::table *t = n.as_table();
  if (!t)
    fatal("{}: step {} must be a word (\"sync\") or an inline table ({{ write = \"first\", value "
          "= \"int3\" }})",
          origin, index);
  for (const auto &[key, value] : *t)
    step.keys[std::string(key.str())] = stepValue(value, index, key.str(), origin);
  return step;
}

} // namespace

arch::ProtocolProgram parseProtocolTable(const toml::table &root, const std::string &origin,
                                         const std::string &prefix) {
  TableReader r(root, origin, prefix,
                {"name", "arch", "difference", "expect", "source", "fidelity", "handler", "lookup",
                 "batch", "sorted", "mflr_slot", "steps"});
  arch::ProtocolProgram p;
  const auto name = r.string("name");
  if (!name || name->empty())
    fatal("{}: missing '{}name' (how verdicts name the protocol)", origin, prefix);
  p.name = *name;
  const auto isa = r.string("arch");
  if (!isa)
    fatal("{}: missing '{}arch' (x86_64 or ppc32)", origin, prefix);
  p.arch = *isa;
  p.difference = r.string("difference").value_or("");
  const std::string expect =
      r.string("expect").value_or(p.difference.empty() ? "verified" : "violation");
  if (expect != "verified" && expect != "violation")
    fatal("{}: expect '{}' is not one of verified, violation", origin, expect);
  p.correct = expect == "verified";
  p.source = r.string("source").value_or("");
  p.fidelity = r.string("fidelity").value_or("");
  if (!p.fidelity.empty() &&
      std::find(kFidelityWords.begin(), kFidelityWords.end(), p.fidelity) == kFidelityWords.end())
    fatal("{}: fidelity '{}' is not one of {}", origin, p.fidelity,
          fmt::join(kFidelityWords, ", "));
  for (const char *key : {"handler", "lookup", "batch"})
    if (auto v = r.string(key))
      p.settings[key] = *v;
  for (const char *key : {"sorted", "mflr_slot"})
    if (auto v = r.boolean(key))
      p.settings[key] = *v ? "true" : "false";
  const toml::node *steps = root.get("steps");
  if (!steps)
    fatal("{}: missing '{}steps' (a list of steps, README.md \"Protocols as files\")", origin,
          prefix);
  const toml::array *list = steps->as_array();
  if (!list)
    fatal("{}: '{}steps' must be a list", origin, prefix);
  for (std::size_t i = 0; i < list->size(); ++i)
    p.steps.push_back(parseStep(*list->get(i), i + 1, origin));
  try {
    arch::compileProtocol(p);
  } catch (const FatalError &e) {
    fatal("{}: {}{}", origin, prefix, e.what());
  }
  return p;
}

arch::ProtocolProgram parseProtocolText(const std::string &text, const std::string &origin) {
  // The messages quote keys, values and toml++'s descriptions of what it saw.
  return withOneLineErrors([&] {
    toml::table root;
    try {
      root = toml::parse(text, origin);
    } catch (const toml::parse_error &e) {
      fatal("{}: line {}: {}", origin, e.source().begin.line, e.description());
    }
    return parseProtocolTable(root, origin, "");
  });
}

arch::ProtocolProgram readProtocolFile(const std::string &path) {
  return parseProtocolText(readInputFile(path, "protocol file", kMaxProtocolFileBytes), path);
}

arch::ProtocolProgram loadProtocolFile(const std::string &path) {
  arch::ProtocolProgram p = readProtocolFile(path);
  try {
    arch::registerFileProtocol(p);
  } catch (const FatalError &e) {
    fatal("{}: {}", path, e.what());
  }
  return p;
}

std::string builtinProtocolFileText(const std::string &name, const std::string &isa) {
  std::vector<const arch::Arch *> archs;
  if (isa.empty())
    archs = arch::executableArchs();
  else
    archs.push_back(&arch::archByName(isa));
  for (const arch::Arch *a : archs)
    if (auto program = arch::tableProgram(*a, name))
      return protocolFileText(*program);
  fatal("--file {}: no built-in protocol of that name (ftsim protocols)", name);
}

std::string protocolFileText(const arch::ProtocolProgram &p) {
  std::ostringstream out;
  const auto line = [&out](std::string_view k, const std::string &v) {
    out << k << " = " << toml::value<std::string>(v) << "\n";
  };
  line("name", p.name);
  line("arch", p.arch);
  if (!p.difference.empty())
    line("difference", p.difference);
  line("expect", p.correct ? "verified" : "violation");
  if (!p.source.empty())
    line("source", p.source);
  if (!p.fidelity.empty())
    line("fidelity", p.fidelity);
  for (const auto &[k, v] : p.settings) {
    if (v == "true" || v == "false")
      out << k << " = " << v << "\n";
    else
      line(k, v);
  }
  // One step a line.
  out << "steps = [\n";
  for (const arch::ProtocolStep &step : p.steps) {
    if (step.keys.size() == 1 && step.keys.begin()->second.empty()) {
      out << fmt::format("  \"{}\",\n", step.keys.begin()->first);
      continue;
    }
    // The operation's key first, its arguments (value) after it.
    std::vector<std::string> parts;
    for (const auto &[key, words] : step.keys)
      parts.insert(key == "value" ? parts.end() : parts.begin(),
                   words.size() == 1
                       ? fmt::format("{} = \"{}\"", key, words[0])
                       : fmt::format("{} = [\"{}\"]", key, fmt::join(words, "\", \"")));
    out << fmt::format("  {{ {} }},\n", fmt::join(parts, ", "));
  }
  out << "]\n";
  return out.str();
}

} // namespace ftsim::verify
