// Protocol lookup over the registered targets' tables (Arch::protocolTable, Arch::mutants).

#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/arch/ProtocolProgram.h"

namespace ftsim::arch {

std::string_view defaultProtocol(const Arch &arch) {
  if (arch.protocolTable().empty())
    fatal("no patch protocol exists for architecture {}", arch.name());
  return arch.protocolTable().front().info.name;
}

std::vector<ProtocolInfo> protocolsFor(const Arch &arch) {
  std::vector<ProtocolInfo> out;
  for (const ProtocolEntry &e : arch.protocolTable())
    out.push_back(e.info);
  for (const ProtocolEntry &e : fileProtocolEntries())
    if (e.info.arch == arch.name())
      out.push_back(e.info);
  return out;
}

std::unique_ptr<PatchProtocol> makePatchProtocol(const Arch &arch, std::string_view name) {
  std::string known;
  for (const ProtocolEntry &e : arch.protocolTable()) {
    if (e.info.name == name)
      return e.make(arch, e.info);
    known += known.empty() ? "" : ", ";
    known += e.info.name;
  }
  for (const ProtocolEntry &e : fileProtocolEntries())
    if (e.info.arch == arch.name() && e.info.name == name)
      return e.make(arch, e.info);
  if (known.empty())
    fatal("no patch protocol exists for architecture {}", arch.name());
  fatal("unknown protocol '{}' for {} (known: {})", name, arch.name(), known);
}

std::unique_ptr<PatchProtocol> makeMutantProtocol(const Arch &arch, std::string_view name) {
  for (const MutantEntry &m : arch.mutants())
    if (m.info.name == name)
      return m.make(arch, m.info);
  return makePatchProtocol(arch, name);
}

} // namespace ftsim::arch
