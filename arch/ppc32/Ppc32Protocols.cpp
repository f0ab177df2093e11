// The ppc32 protocol table: Linux's first, then its variants. Each entry differs from
// `patch-instruction` in exactly the one way its `difference` says.
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

#include "Ppc32Target.h"

namespace ftsim::arch {

std::unique_ptr<PatchProtocol> makePpc32WordPatch(std::string name, std::string difference,
                                                  bool syncAtFinish);
std::unique_ptr<PatchProtocol> makePpc32MflrPatch(std::string name, std::string difference,
                                                  bool wrongOrder, bool gracePeriod);

namespace {

ProtocolEntry word(std::string name, std::string difference, bool correct, bool syncAtFinish) {
  return {{std::move(name), "ppc32", std::move(difference), correct},
          [syncAtFinish](const Arch &, const ProtocolInfo &info) {
            return makePpc32WordPatch(info.name, info.difference, syncAtFinish);
          }};
}

ProtocolEntry mflr(std::string name, std::string difference, bool correct, bool wrongOrder,
                   bool gracePeriod) {
  return {{std::move(name), "ppc32", std::move(difference), correct},
          [wrongOrder, gracePeriod](const Arch &, const ProtocolInfo &info) {
            return makePpc32MflrPatch(info.name, info.difference, wrongOrder, gracePeriod);
          }};
}

} // namespace

const std::vector<ProtocolEntry> &ppc32Protocols() {
  static const std::vector<ProtocolEntry> entries = {
      word("patch-instruction", "", true, false),
      word("patch-instruction-ipi",
           "a second correct protocol, not a mutant: also makes every other CPU context-"
           "synchronise (an IPI) after each batch, the effect the stop_machine() of powerpc's "
           "ftrace before c96f83856f56 (v4.6) had; Linux no longer does it",
           true, true),
      mflr("word-mflr",
           "a correct protocol, not a mutant, and not Linux's (a 2019 RFC, "
           "lkml.org/lkml/2019/5/20/293,"
           " not merged as such): also keeps mflr r0 before each site nopped while disabled "
           "(restore it, RCU-tasks grace period, then bl; the reverse to disable)",
           true, false, true),
      mflr("word-mflr-wrong-order",
           "the two words in the wrong order: enabling writes bl before restoring mflr r0, "
           "disabling nops mflr r0 before the bl (found by check on ppc32-mflr-wrong-order)",
           false, true, true),
      mflr("word-mflr-no-grace",
           "no RCU-tasks grace period between restoring mflr r0 and writing bl (and between the "
           "two words when disabling; found by check on ppc32-mflr-no-grace)",
           false, false, false),
  };
  return entries;
}

} // namespace ftsim::arch
