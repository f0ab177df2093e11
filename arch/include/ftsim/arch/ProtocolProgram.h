#pragma once
// A patch protocol as data: the order of stores, syncs, vector publications and grace periods that
// takes a batch of sites from old to new bytes, plus the few choices that are not steps (what the
// int3 handler does with a trap). Every protocol of an ISA's table is such a program run by the
// ISA's one interpreter (X86_64TextPoke.cpp, Ppc32Patch.cpp), and a protocol file (TOML,
// verify/include/ftsim/verify/scenario/ProtocolFile.h) is parsed into the same value, so a file
// that spells a built-in protocol is that protocol: same stores, same explorations.
//
// x86_64 (text_poke_bp_batch() and poke_int3_handler()):
//   settings: handler = emulate | skip | unknown   (what poke_int3_handler does with a site it
//                                                   finds: emulate the new instruction, jump
//                                                   over the site, or not know it)
//             lookup  = bsearch | first-only      (how it finds the site in the vector)
//             sorted  = true | false              (text_poke_queue() flushes on a lower address)
//   steps:    write = first | tail | whole, value = int3 | old | new   (int3: first only)
//             sync      text_poke_sync(): IPI every CPU, serialise; skipped when the write step
//                       just before it stored nothing (Linux's do_sync)
//             publish   bp_desc.vec = the batch (the handler can find every site)
//             withdraw  bp_desc.vec = NULL, after waiting for handlers using it
// ppc32 (patch_instruction(): an aligned word store, then dcbst; sync; icbi; sync; isync on the
// patching CPU — every write includes that local cache maintenance):
//   settings: mflr_slot = true | false  (the word before each site holds `mflr r0` only while
//                                        the site is enabled: two words per site)
//   steps:    write = [parts]  the word of every queued request whose part is listed, in queue
//                              order. Parts: site (a one-word change), and with mflr_slot:
//                              mflr-restore (nop -> mflr r0), bl-write (nop -> bl), bl-remove
//                              (bl -> nop), mflr-remove (mflr r0 -> nop)
//             sync          every CPU context-synchronises (an IPI; isync on each); skipped when
//                           nothing was written since the previous sync
//             grace-period  synchronize_rcu_tasks(); skipped when no later write step of the
//                           batch has anything to write
// Steps run at text_poke_finish() (x86: per flushed batch of up to 256 sorted sites; ppc32: per
// update).

#include "ftsim/arch/PatchProtocol.h"

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::arch {

// One step as written: a bare word ("sync" -> {sync: []}) or a table of keys
// ({write = "first", value = "int3"} -> {write: [first], value: [int3]}). The ISA finds the step's
// operation among the keys.
struct ProtocolStep {
  std::map<std::string, std::vector<std::string>> keys;
  bool operator==(const ProtocolStep &) const = default;
};

struct ProtocolProgram {
  std::string name;
  std::string arch;
  std::string difference; // what distinguishes it from the ISA's correct protocol
  bool correct = false;   // expected to verify
  std::map<std::string, std::string> settings;
  std::vector<ProtocolStep> steps;
  std::string source;   // the Linux release and commits it stands for, or the proposal
  std::string fidelity; // faithful | model-hypothesis | teaching-strawman (as scenarios say)
  bool operator==(const ProtocolProgram &) const = default;
  // The same protocol: same ISA, settings and steps (names and words about it aside).
  bool sameSteps(const ProtocolProgram &o) const {
    return arch == o.arch && settings == o.settings && steps == o.steps;
  }
};

// Checks `program` against its ISA's vocabulary and builds the table entry that runs it. Throws
// FatalError with a one-line message naming the step ("step 3") and the key; the caller adds the
// file's name.
ProtocolEntry compileProtocol(const ProtocolProgram &program);

// The program of the table protocol `name` of `arch` (nullopt: not a table protocol, or one that
// is not a program).
std::optional<ProtocolProgram> tableProgram(const Arch &arch, std::string_view name);

// Protocols loaded from files for this process (ftsim check/prove --protocol-file), found by
// name by makePatchProtocol and protocolsFor after the ISA's table. Registering the name of a
// table protocol is allowed only with that protocol's own program (it then changes nothing);
// registering a different program under a taken name throws FatalError. Register before any
// exploration starts (the registry is read by worker threads without a lock).
void registerFileProtocol(const ProtocolProgram &program);
const std::deque<ProtocolEntry> &fileProtocolEntries();

} // namespace ftsim::arch
