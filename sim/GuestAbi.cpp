#include "GuestAbi.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

namespace ftsim::sim {

const GuestAbi &guestAbi(const arch::Arch &arch) {
  if (const GuestAbi *abi = arch.guestAbi())
    return *abi;
  std::string runnable;
  for (const arch::Arch *a : arch::executableArchs())
    runnable += fmt::format("{}{}", runnable.empty() ? "" : ", ", a->name());
  fatal("architecture '{}' cannot be executed by the simulator (it runs {} only)", arch.name(),
        runnable);
}

} // namespace ftsim::sim
