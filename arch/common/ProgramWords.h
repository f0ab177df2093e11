#pragma once
// Reading a protocol program's words against an ISA's vocabulary (X86_64ProtocolProgram.cpp,
// Ppc32ProtocolProgram.cpp): every error is one line naming the step (1-based) and the key.

#include "ftsim/arch/ProtocolProgram.h"

#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

namespace ftsim::arch {

using Vocabulary = std::initializer_list<std::string_view>;

// The operation of `step`: the one key of `ops` it has. Every other key must be one of `extra`
// (the operation's arguments); an operation outside `withValue` takes no words.
std::string_view stepOperation(const ProtocolStep &step, std::size_t index, Vocabulary ops,
                               Vocabulary extra, Vocabulary withValue);
// The words of `key` in `step`, each one of `allowed`; `many` allows a list, else exactly one.
std::vector<std::string_view> stepWords(const ProtocolStep &step, std::size_t index,
                                        std::string_view key, Vocabulary allowed, bool many);
// A program setting, `fallback` when absent; every present setting must be one of `keys`.
std::string_view programSetting(const ProtocolProgram &program, std::string_view key,
                                std::string_view fallback, Vocabulary allowed);
void checkSettingKeys(const ProtocolProgram &program, Vocabulary keys);

} // namespace ftsim::arch
