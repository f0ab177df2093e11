#pragma once
// Protocol files: a patch protocol as TOML (the data form of arch/ProtocolProgram.h), for
// `ftsim check --protocol-file FILE` and `ftsim prove --protocol-file FILE`. A file that spells a
// built-in protocol's steps is that protocol; `ftsim protocols --file NAME` prints any built-in as
// a file. README.md ("Protocols as files") documents every key; in short:
//
//   name = "olsa-merge"                 # how verdicts and counterexample files name it
//   arch = "x86_64"                     # x86_64 | ppc32
//   difference = "int3 and tails written before one sync"   # what differs from Linux's protocol
//   expect = "verified"                 # verified | violation (ftsim mutants' expectation)
//   source = "RFC, LKML 2025-01-14"     # the Linux release, commits or proposal it stands for
//   fidelity = "model-hypothesis"       # faithful | model-hypothesis | teaching-strawman
//   handler = "emulate"                 # x86_64: emulate | skip | unknown
//   lookup = "bsearch"                  # x86_64: bsearch | first-only
//   sorted = true                       # x86_64: text_poke_queue() flushes on a lower address
//   mflr_slot = false                   # ppc32: two-word `mflr r0; bl` sites
//   steps = ["publish", { write = "first", value = "int3" }, { write = "tail", value = "new" },
//            "sync", { write = "first", value = "new" }, "sync", "withdraw"]

#include "ftsim/arch/ProtocolProgram.h"

#include <string>

namespace ftsim::verify {

// Parses `text`; every error is a FatalError of one line starting with `origin` and naming the
// step and key.
arch::ProtocolProgram parseProtocolText(const std::string &text, const std::string &origin);
// Reads `path` (a regular file of at most kMaxProtocolFileBytes) and parses it.
arch::ProtocolProgram readProtocolFile(const std::string &path);
// The file form of `program` (parseProtocolText gives it back).
std::string protocolFileText(const arch::ProtocolProgram &program);
// The file form of the table protocol `name` (of `arch`, or of the first ISA that has it when
// `arch` is empty); FatalError when no table protocol of that name is a program.
std::string builtinProtocolFileText(const std::string &name, const std::string &arch);
// Reads, checks and registers the protocol of `path` for this process (ProtocolProgram.h,
// registerFileProtocol); returns its name and ISA.
arch::ProtocolProgram loadProtocolFile(const std::string &path);

} // namespace ftsim::verify
