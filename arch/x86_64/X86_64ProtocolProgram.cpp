// x86-64 protocol programs: the data form (ProtocolProgram.h) checked against the vocabulary of
// text_poke_bp_batch() and compiled into X86_64PokeProgram.

#include "../common/ProgramWords.h"
#include "X86_64TextPoke.h"

#include "ftsim/arch/Error.h"

#include <memory>

namespace ftsim::arch {
namespace {

X86_64PokeStep compileStep(const ProtocolStep &step, std::size_t index) {
  using Op = X86_64PokeStep::Op;
  const std::string_view op =
      stepOperation(step, index, {"write", "sync", "publish", "withdraw"}, {"value"}, {"write"});
  if (op != "write") {
    if (step.keys.size() != 1)
      fatal("step {}: key 'value' applies to write only", index);
    return {op == "sync" ? Op::Sync : op == "publish" ? Op::Publish : Op::Withdraw};
  }
  using Part = X86_64PokeStep::Part;
  using Value = X86_64PokeStep::Value;
  const std::string_view part =
      stepWords(step, index, "write", {"first", "tail", "whole"}, false)[0];
  const std::string_view value = stepWords(step, index, "value", {"int3", "old", "new"}, false)[0];
  X86_64PokeStep out{Op::Write};
  out.part = part == "first" ? Part::First : part == "tail" ? Part::Tail : Part::Whole;
  out.value = value == "int3" ? Value::Int3 : value == "old" ? Value::Old : Value::New;
  if (out.value == Value::Int3 && out.part != Part::First)
    fatal("step {}: key 'value': int3 is one byte; write it as the first byte (write = \"first\")",
          index);
  return out;
}

} // namespace

X86_64PokeProgram compileX86_64Program(const ProtocolProgram &p) {
  checkSettingKeys(p, {"handler", "lookup", "sorted", "batch"});
  X86_64PokeProgram out;
  const std::string_view handler =
      programSetting(p, "handler", "emulate", {"emulate", "skip", "unknown"});
  out.handler = handler == "emulate" ? X86_64PokeProgram::Handler::Emulate
                : handler == "skip"  ? X86_64PokeProgram::Handler::SkipSite
                                     : X86_64PokeProgram::Handler::Unknown;
  out.lookup = programSetting(p, "lookup", "bsearch", {"bsearch", "first-only"}) == "bsearch"
                   ? X86_64PokeProgram::Lookup::Bsearch
                   : X86_64PokeProgram::Lookup::FirstOnly;
  out.sorted = programSetting(p, "sorted", "true", {"true", "false"}) == "true";
  out.vecMax = programSetting(p, "batch", "256", {"256", "all"}) == "all"
                   ? 0
                   : X86_64PokeProgram::kTextPokeVecMax;
  for (std::size_t i = 0; i < p.steps.size(); ++i)
    out.steps.push_back(compileStep(p.steps[i], i + 1));
  return out;
}

ProtocolEntry compileX86_64Protocol(const ProtocolProgram &p) {
  X86_64PokeProgram program = compileX86_64Program(p);
  return {{p.name, "x86_64", p.difference, p.correct},
          [program](const Arch &arch, const ProtocolInfo &info) {
            return makeX86_64Poke(arch, info.name, info.difference, program);
          },
          std::make_shared<const ProtocolProgram>(p)};
}

} // namespace ftsim::arch
