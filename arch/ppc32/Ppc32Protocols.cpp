// The ppc32 protocol table: Linux's first, then its variants, each a program (ProtocolProgram.h)
// that differs from `patch-instruction` in exactly the one way its `difference` says; and the
// compiler from the data form.
//
// Linux's protocol (faithful, v4.6 to 6.12): since c96f83856f56 (v4.6) powerpc's
// arch_ftrace_update_code() calls ftrace_modify_all_code() directly ("the default
// ftrace_modify_all_code, but without stop_machine()"): no stop_machine(), no IPI. Each site is one
// patch_instruction() (arch/powerpc/lib/code-patching.c): an aligned word store, then
// `dcbst; sync; icbi; sync; isync` on the patching CPU only. Other CPUs may execute the old or the
// new patch-class word until they context-synchronise (Power ISA Book II, CMODX); nothing waits
// for them. What must not rely on them having seen the new word (freeing a trampoline the old `bl`
// reached) is ftrace's core's job: synchronize_rcu_tasks_rude() / schedule_on_each_cpu() before
// the free, which the live-patching rule checks (Ppc32Cmodx.h).

#include "Ppc32Protocols.h"
#include "../common/ProgramWords.h"
#include "Ppc32Target.h"

#include "ftsim/arch/Error.h"

namespace ftsim::arch {
namespace {

ProtocolStep op(std::string name) { return {{{std::move(name), {}}}}; }
ProtocolStep write(std::vector<std::string> parts) { return {{{"write", std::move(parts)}}}; }

ProtocolEntry ppc(std::string name, std::string difference, bool correct,
                  std::vector<ProtocolStep> steps, std::string source, std::string fidelity,
                  bool mflrSlot = false) {
  std::map<std::string, std::string> settings;
  if (mflrSlot)
    settings["mflr_slot"] = "true";
  return compilePpc32Protocol({std::move(name), "ppc32", std::move(difference), correct,
                               std::move(settings), std::move(steps), std::move(source),
                               std::move(fidelity)});
}

#define FTSIM_PPC32_RFC                                                                            \
  "the RFC lkml.org/lkml/2019/5/20/293 (two-instruction sites), not merged as such"
constexpr const char *kRfc = FTSIM_PPC32_RFC;
constexpr const char *kMutantOfRfc = "a mutant of " FTSIM_PPC32_RFC;
#undef FTSIM_PPC32_RFC

Ppc32Part partOf(std::string_view word) {
  if (word == "site")
    return Ppc32Part::Site;
  if (word == "mflr-restore")
    return Ppc32Part::MflrRestore;
  if (word == "bl-write")
    return Ppc32Part::BlWrite;
  if (word == "bl-remove")
    return Ppc32Part::BlRemove;
  return Ppc32Part::MflrRemove;
}

} // namespace

ProtocolEntry compilePpc32Protocol(const ProtocolProgram &p) {
  checkSettingKeys(p, {"mflr_slot"});
  Ppc32Program program;
  program.mflrSlot = programSetting(p, "mflr_slot", "false", {"true", "false"}) == "true";
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const ProtocolStep &s = p.steps[i];
    const std::string_view op =
        stepOperation(s, i + 1, {"write", "sync", "grace-period"}, {}, {"write"});
    if (op == "sync" || op == "grace-period") {
      program.steps.push_back({op == "sync" ? Ppc32Step::Op::Sync : Ppc32Step::Op::GracePeriod});
      continue;
    }
    Ppc32Step step{Ppc32Step::Op::Write};
    const auto words =
        program.mflrSlot
            ? stepWords(s, i + 1, "write",
                        {"site", "mflr-restore", "bl-write", "bl-remove", "mflr-remove"}, true)
            : stepWords(s, i + 1, "write", {"site"}, true);
    for (std::string_view w : words)
      step.parts.push_back(partOf(w));
    program.steps.push_back(std::move(step));
  }
  return {{p.name, "ppc32", p.difference, p.correct},
          [program](const Arch &, const ProtocolInfo &info) {
            return makePpc32Patch(info.name, info.difference, program);
          },
          std::make_shared<const ProtocolProgram>(p)};
}

namespace {

// The table, built once by ppc32Protocols() (a lookup per execution of an exhaustive search built
// its step values again each time).
std::vector<ProtocolEntry> buildPpc32Protocols() {
  const ProtocolStep sync = op("sync"), grace = op("grace-period");
  // Two-word sites: the words that are safe alone first (restore mflr r0, remove the bl), then,
  // after every CPU synchronised and a grace period, the others.
  const ProtocolStep safeFirst = write({"mflr-restore", "bl-remove", "site"});
  const ProtocolStep safeSecond = write({"bl-write", "mflr-remove"});
  return std::vector<ProtocolEntry>{
      ppc("patch-instruction", "", true, {write({"site"})},
          "Linux v4.6-6.12 (c96f83856f56): patch_instruction(), no IPI", "faithful"),
      ppc("patch-instruction-ipi",
          "a second correct protocol, not a mutant: also makes every other CPU context-"
          "synchronise (an IPI) after each batch, the effect the stop_machine() of powerpc's "
          "ftrace before c96f83856f56 (v4.6) had; Linux no longer does it",
          true, {write({"site"}), sync},
          "powerpc ftrace before c96f83856f56 (v4.6): the effect of its stop_machine()",
          "model-hypothesis"),
      ppc("word-mflr",
          "a correct protocol, not a mutant, and not Linux's (a 2019 RFC, "
          "lkml.org/lkml/2019/5/20/293,"
          " not merged as such): also keeps mflr r0 before each site nopped while disabled "
          "(restore it, RCU-tasks grace period, then bl; the reverse to disable)",
          true, {safeFirst, sync, grace, safeSecond, sync}, kRfc, "model-hypothesis", true),
      ppc("word-mflr-wrong-order",
          "the two words in the wrong order: enabling writes bl before restoring mflr r0, "
          "disabling nops mflr r0 before the bl (found by check on ppc32-mflr-wrong-order)",
          false,
          {write({"bl-write", "mflr-remove", "site"}), sync, grace,
           write({"mflr-restore", "bl-remove"}), sync},
          kMutantOfRfc, "teaching-strawman", true),
      ppc("word-mflr-no-grace",
          "no RCU-tasks grace period between restoring mflr r0 and writing bl (and between the "
          "two words when disabling; found by check on ppc32-mflr-no-grace)",
          false, {safeFirst, sync, safeSecond, sync}, kMutantOfRfc, "teaching-strawman", true),
  };
}

} // namespace

const std::vector<ProtocolEntry> &ppc32Protocols() {
  static const std::vector<ProtocolEntry> entries = buildPpc32Protocols();
  return entries;
}

} // namespace ftsim::arch
