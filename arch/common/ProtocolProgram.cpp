// Protocol programs across ISAs (ProtocolProgram.h): compiling one through its ISA, the table
// protocols' programs, the protocols loaded from files, and the shared word checks
// (ProgramWords.h).

#include "ftsim/arch/ProtocolProgram.h"

#include "ProgramWords.h"
#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <deque>

namespace ftsim::arch {
namespace {

std::string joined(Vocabulary words) {
  std::string out;
  for (std::string_view w : words)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", w);
  return out;
}

bool oneOf(std::string_view word, Vocabulary words) {
  for (std::string_view w : words)
    if (w == word)
      return true;
  return false;
}

std::deque<ProtocolEntry> &fileEntries() {
  static std::deque<ProtocolEntry> entries;
  return entries;
}

} // namespace

std::string_view stepOperation(const ProtocolStep &step, std::size_t index, Vocabulary ops,
                               Vocabulary extra, Vocabulary withValue) {
  std::string_view op;
  for (const auto &[key, words] : step.keys) {
    if (!oneOf(key, ops))
      continue;
    if (!op.empty())
      fatal("step {}: keys '{}' and '{}' are two operations; one step does one", index, op, key);
    op = *std::find(ops.begin(), ops.end(), key);
  }
  if (op.empty())
    fatal("step {}: no operation (one of {})", index, joined(ops));
  for (const auto &[key, words] : step.keys) {
    if (key != op && !oneOf(key, extra))
      fatal("step {}: key '{}' does not apply to {}", index, key, op);
    if (key == op && !oneOf(op, withValue) && !words.empty())
      fatal("step {}: key '{}' takes no value", index, key);
  }
  return op;
}

std::vector<std::string_view> stepWords(const ProtocolStep &step, std::size_t index,
                                        std::string_view key, Vocabulary allowed, bool many) {
  const auto it = step.keys.find(std::string(key));
  if (it == step.keys.end() || it->second.empty())
    fatal("step {}: missing key '{}' ({} of {})", index, key, many ? "a list" : "one",
          joined(allowed));
  if (!many && it->second.size() != 1)
    fatal("step {}: key '{}' takes one word (one of {})", index, key, joined(allowed));
  std::vector<std::string_view> out;
  for (const std::string &w : it->second) {
    if (!oneOf(w, allowed))
      fatal("step {}: key '{}': '{}' is not one of {}", index, key, w, joined(allowed));
    out.push_back(*std::find(allowed.begin(), allowed.end(), w));
  }
  return out;
}

std::string_view programSetting(const ProtocolProgram &p, std::string_view key,
                                std::string_view fallback, Vocabulary allowed) {
  const auto it = p.settings.find(std::string(key));
  if (it == p.settings.end())
    return fallback;
  if (!oneOf(it->second, allowed))
    fatal("key '{}': '{}' is not one of {}", key, it->second, joined(allowed));
  return *std::find(allowed.begin(), allowed.end(), it->second);
}

void checkSettingKeys(const ProtocolProgram &p, Vocabulary keys) {
  for (const auto &[key, value] : p.settings)
    if (!oneOf(key, keys))
      fatal("key '{}' is not a {} protocol setting ({})", key, p.arch, joined(keys));
  if (p.steps.empty())
    fatal("key 'steps': a protocol needs at least one step");
}

ProtocolEntry compileProtocol(const ProtocolProgram &program) {
  if (program.name.empty())
    fatal("key 'name': a protocol needs a name");
  return archByName(program.arch).compileProtocol(program);
}

std::optional<ProtocolProgram> tableProgram(const Arch &arch, std::string_view name) {
  for (const ProtocolEntry &e : arch.protocolTable())
    if (e.info.name == name && e.program)
      return *e.program;
  return std::nullopt;
}

void registerFileProtocol(const ProtocolProgram &program) {
  const Arch &arch = archByName(program.arch);
  ProtocolEntry entry = compileProtocol(program); // checks every step before registering
  for (const ProtocolEntry &e : arch.protocolTable())
    if (e.info.name == program.name) {
      if (e.program && e.program->sameSteps(program))
        return; // the table protocol itself
      fatal("protocol '{}' is a built-in {} protocol with other steps or settings: give the "
            "file's protocol another name",
            program.name, arch.name());
    }
  for (const ProtocolEntry &e : fileEntries())
    if (e.info.arch == program.arch && e.info.name == program.name) {
      if (e.program->sameSteps(program))
        return;
      fatal("two protocol files name protocol '{}' with different steps", program.name);
    }
  fileEntries().push_back(std::move(entry));
}

const std::deque<ProtocolEntry> &fileProtocolEntries() { return fileEntries(); }

} // namespace ftsim::arch
