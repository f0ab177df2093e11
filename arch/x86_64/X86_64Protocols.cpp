// The x86-64 protocol table: today's int3 batch protocol first, then its historical variants and
// the mutants of the mutation score. Each entry differs from int3 in exactly the one way its
// `difference` says.

#include "X86_64Target.h"
#include "X86_64TextPoke.h"

namespace ftsim::arch {
namespace {

ProtocolEntry x86(std::string name, std::string difference,
                  const std::function<void(X86_64PokeOptions &)> &tweak) {
  X86_64PokeOptions options;
  tweak(options);
  const bool correct = difference.empty();
  return {{std::move(name), "x86_64", std::move(difference), correct},
          [options](const Arch &arch, const ProtocolInfo &info) {
            return makeX86_64Poke(arch, info.name, info.difference, options);
          }};
}

} // namespace

const std::vector<ProtocolEntry> &x86_64Protocols() {
  using H = X86_64PokeOptions::Handler;
  static const std::vector<ProtocolEntry> entries = {
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
  };
  return entries;
}

} // namespace ftsim::arch
