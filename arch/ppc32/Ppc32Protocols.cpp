// The ppc32 protocol table: the single aligned word store first (patch_instruction()), then its
// variants. Each entry differs from `word` in exactly the one way its `difference` says.

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
      word("word", "", true, true),
      word("word-nosync", "no IPI/context synchronisation of the other CPUs after the stores",
           false, false),
      mflr("word-mflr",
           "a second correct protocol, not a mutant: also keeps mflr r0 before each site nopped "
           "while disabled (restore it, RCU-tasks grace period, then bl; the reverse to disable)",
           true, false, true),
      mflr("word-mflr-wrong-order",
           "the two words in the wrong order: enabling writes bl before restoring mflr r0, "
           "disabling nops mflr r0 before the bl",
           false, true, true),
      mflr("word-mflr-no-grace",
           "no RCU-tasks grace period between restoring mflr r0 and writing bl (and between the "
           "two words when disabling)",
           false, false, false),
  };
  return entries;
}

} // namespace ftsim::arch
