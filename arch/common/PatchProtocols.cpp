// The table of patch protocols per ISA: today's protocol first, then the historical variants of
// SCENARIOS.md and the mutants of the mutation score. Each entry differs from the correct
// protocol in exactly the one way its `difference` says.

#include "../x86_64/X86_64TextPoke.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"

#include <functional>

namespace ftsim::arch {

std::unique_ptr<PatchProtocol> makePpc32WordPatch(std::string name, std::string difference,
                                                  bool syncAtFinish);
std::unique_ptr<PatchProtocol> makePpc32MflrPatch(std::string name, std::string difference,
                                                  bool wrongOrder, bool gracePeriod);

namespace {

struct Entry {
  ProtocolInfo info;
  std::function<std::unique_ptr<PatchProtocol>(const Arch &, const ProtocolInfo &)> make;
};

Entry x86(std::string name, std::string difference,
          const std::function<void(X86_64PokeOptions &)> &tweak) {
  X86_64PokeOptions options;
  tweak(options);
  const bool correct = difference.empty();
  return {{std::move(name), "x86_64", std::move(difference), correct},
          [options](const Arch &arch, const ProtocolInfo &info) {
            return makeX86_64Poke(arch, info.name, info.difference, options);
          }};
}

const std::vector<Entry> &table() {
  using H = X86_64PokeOptions::Handler;
  static const std::vector<Entry> entries = {
      x86("int3", "", [](auto &) {}),
      x86("int3-skip",
          "the int3 handler jumps over the site instead of emulating the new "
          "instruction (ftrace_int3_handler before 2019)",
          [](auto &o) { o.handler = H::SkipSite; }),
      x86("int3-nosync", "no text_poke_sync() between the phases",
          [](auto &o) { o.syncAfterInt3 = o.syncAfterTail = o.syncAfterFirstByte = false; }),
      x86("direct", "plain stores of the new bytes, no breakpoint (then one sync)",
          [](auto &o) { o.breakpoint = false; }),
      x86("int3-nosync1", "no sync after writing the int3s",
          [](auto &o) { o.syncAfterInt3 = false; }),
      x86("int3-nosync2", "no sync after writing the tails",
          [](auto &o) { o.syncAfterTail = false; }),
      x86("int3-nosync3", "no sync after writing the first bytes",
          [](auto &o) { o.syncAfterFirstByte = false; }),
      x86("int3-swapped", "the first bytes are written before the tails",
          [](auto &o) { o.firstByteBeforeTail = true; }),
      x86("int3-nobsearch", "the int3 handler compares only the first vector entry",
          [](auto &o) { o.handler = H::FirstOnly; }),
      x86("int3-unsorted",
          "text_poke_queue() does not flush on a descending address, so the "
          "vector can be unsorted and the handler's bsearch misses",
          [](auto &o) { o.keepSorted = false; }),
      x86("int3-late-vector", "the vector is published after the int3s are written",
          [](auto &o) { o.publishBeforeInt3 = false; }),
      x86("int3-early-clear", "the vector is withdrawn before the last sync",
          [](auto &o) { o.withdrawAfterLastSync = false; }),
      {{"word", "ppc32", "", true},
       [](const Arch &, const ProtocolInfo &info) {
         return makePpc32WordPatch(info.name, info.difference, true);
       }},
      {{"word-nosync", "ppc32", "no IPI/context synchronisation of the other CPUs after the stores",
        false},
       [](const Arch &, const ProtocolInfo &info) {
         return makePpc32WordPatch(info.name, info.difference, false);
       }},
      {{"word-mflr", "ppc32",
        "a second correct protocol, not a mutant: also keeps mflr r0 before each site nopped "
        "while disabled (restore it, RCU-tasks grace period, then bl; the reverse to disable)",
        true},
       [](const Arch &, const ProtocolInfo &info) {
         return makePpc32MflrPatch(info.name, info.difference, false, true);
       }},
      {{"word-mflr-wrong-order", "ppc32",
        "the two words in the wrong order: enabling writes bl before restoring mflr r0, "
        "disabling nops mflr r0 before the bl",
        false},
       [](const Arch &, const ProtocolInfo &info) {
         return makePpc32MflrPatch(info.name, info.difference, true, true);
       }},
      {{"word-mflr-no-grace", "ppc32",
        "no RCU-tasks grace period between restoring mflr r0 and writing bl (and between the "
        "two words when disabling)",
        false},
       [](const Arch &, const ProtocolInfo &info) {
         return makePpc32MflrPatch(info.name, info.difference, false, false);
       }},
  };
  return entries;
}

} // namespace

std::vector<ProtocolInfo> protocolsFor(const Arch &arch) {
  std::vector<ProtocolInfo> out;
  for (const auto &e : table())
    if (e.info.arch == arch.name())
      out.push_back(e.info);
  return out;
}

std::unique_ptr<PatchProtocol> makePatchProtocol(const Arch &arch, std::string_view name) {
  std::string known;
  for (const auto &e : table()) {
    if (e.info.arch != arch.name())
      continue;
    if (e.info.name == name)
      return e.make(arch, e.info);
    known += known.empty() ? "" : ", ";
    known += e.info.name;
  }
  if (known.empty())
    fatal("no patch protocol exists for architecture {}", arch.name());
  fatal("unknown protocol '{}' for {} (known: {})", name, arch.name(), known);
}

} // namespace ftsim::arch
