#pragma once
// A protocol file's table, also a scenario's [protocol_program] (ProtocolFile.h).

#include "ftsim/arch/ProtocolProgram.h"

#include <toml++/toml.h>

#include <string>

namespace ftsim::verify {

// Parses and checks (compileProtocol) one protocol table; errors start with `origin` and name
// `prefix`+key.
arch::ProtocolProgram parseProtocolTable(const toml::table &table, const std::string &origin,
                                         const std::string &prefix);

} // namespace ftsim::verify
