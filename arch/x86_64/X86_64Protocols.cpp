// The x86-64 protocol table: today's int3 batch protocol first, then its historical variants and
// the mutants of the mutation score, each a program (ProtocolProgram.h) that differs from int3's
// in exactly the one way its `difference` says. `ftsim protocols --file NAME` prints any of them
// as a protocol file.

#include "X86_64Target.h"
#include "X86_64TextPoke.h"

namespace ftsim::arch {
namespace {

ProtocolStep op(std::string name) { return {{{std::move(name), {}}}}; }
ProtocolStep write(std::string part, std::string value) {
  return {{{"write", {std::move(part)}}, {"value", {std::move(value)}}}};
}

// `source`: the Linux code or proposal the program stands for; `fidelity` as scenarios say it.
ProtocolEntry x86(std::string name, std::string difference, std::vector<ProtocolStep> steps,
                  std::string source, std::string fidelity,
                  std::map<std::string, std::string> settings = {}) {
  const bool correct = difference.empty();
  return compileX86_64Protocol({std::move(name), "x86_64", std::move(difference), correct,
                                std::move(settings), std::move(steps), std::move(source),
                                std::move(fidelity)});
}

constexpr const char *kMutant = "a mutant of Linux 5.6-6.12's text_poke_bp_batch(), built to be "
                                "killed";

} // namespace

const std::vector<ProtocolEntry> &x86_64Protocols() {
  // Built once: the step values below are the table's, not every lookup's (a lookup per execution
  // of an exhaustive search built them again each time).
  static const std::vector<ProtocolEntry> entries = [] {
    // text_poke_bp_batch() (Linux 5.6 .. 6.x): publish the vector; int3 on every site's first byte;
    // sync; the tails; sync (Intel: "very likely not necessary ... but better safe than sorry");
    // the first bytes; sync; withdraw the vector once no handler uses it.
    const ProtocolStep publish = op("publish"), sync = op("sync"), withdraw = op("withdraw");
    const ProtocolStep int3s = write("first", "int3"), tails = write("tail", "new"),
                       firsts = write("first", "new");
    const std::vector<ProtocolStep> linux = {publish, int3s,  sync, tails,
                                             sync,    firsts, sync, withdraw};
    return std::vector<ProtocolEntry>{
        x86("int3", "", linux,
            "Linux 5.6-6.12 text_poke_bp_batch() and poke_int3_handler() "
            "(arch/x86/kernel/alternative.c)",
            "faithful"),
        x86("int3-skip",
            "ftrace's own breakpoint code (before 9e298e860408, 2019): the int3 handler jumps "
            "over the site instead of emulating the new instruction, and each pass covers every "
            "record (no 256-site batches)",
            linux, "ftrace_int3_handler and ftrace_replace_code() before 9e298e860408 (2019)",
            "faithful", {{"handler", "skip"}, {"batch", "all"}}),
        x86("int3-nosync", "no text_poke_sync() between the phases",
            {publish, int3s, tails, firsts, withdraw}, kMutant, "teaching-strawman"),
        x86("direct", "plain stores of the new bytes, no breakpoint (then one sync)",
            {write("whole", "new"), sync}, "Rostedt, Ftrace Kernel Hooks slides (plain stores)",
            "teaching-strawman"),
        x86("int3-nosync1", "no sync after writing the int3s",
            {publish, int3s, tails, sync, firsts, sync, withdraw},
            "J. Olsa's RFC 'Merge first and second step in text_poke_bp_batch' (LKML, 2025-01-14)",
            "model-hypothesis"),
        x86("int3-nosync2", "no sync after writing the tails",
            {publish, int3s, sync, tails, firsts, sync, withdraw},
            "the sync Linux keeps 'better safe than sorry' (Intel: 'very likely not necessary')",
            "model-hypothesis"),
        x86("int3-nosync3", "no sync after writing the first bytes",
            {publish, int3s, sync, tails, sync, firsts, withdraw}, kMutant, "teaching-strawman"),
        x86("int3-swapped", "the first bytes are written before the tails",
            {publish, int3s, sync, firsts, sync, tails, sync, withdraw}, kMutant,
            "teaching-strawman"),
        x86("int3-nobsearch", "the int3 handler compares only the first vector entry", linux,
            kMutant, "teaching-strawman", {{"lookup", "first-only"}}),
        x86("int3-unsorted",
            "text_poke_queue() does not flush on a descending address, so the "
            "vector can be unsorted and the handler's bsearch misses",
            linux,
            "cf. 2aebf5ee43bf (2025), whose bug was a single poke appended to a queued batch, not "
            "a missing order check",
            "model-hypothesis", {{"sorted", "false"}}),
        x86("int3-late-vector", "the vector is published after the int3s are written",
            {int3s, publish, sync, tails, sync, firsts, sync, withdraw}, kMutant,
            "teaching-strawman"),
        x86("int3-early-clear", "the vector is withdrawn before the last sync",
            {publish, int3s, sync, tails, sync, firsts, withdraw, sync}, kMutant,
            "teaching-strawman"),
    };
  }();
  return entries;
}

} // namespace ftsim::arch
