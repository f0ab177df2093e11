#pragma once
// Asks the tree's own poke_int3_handler() whether it would handle an int3 at an address now,
// without a machine: a Unicorn engine of its own over the same host memory as a PokeCpu (so it
// sees bp_desc, tp_vec and the text as they are at this instant), a struct pt_regs on a private
// stack (ip past the int3, kernel cs, IF set in the saved flags, as Int3Entry.h builds it), a call
// of poke_int3_handler(regs) and its return value. The handler's refcount increment and decrement
// (try_get_desc/put_desc) net to zero; its emulation only writes the probe's pt_regs and stack.
// Nothing is reported to anyone: a probe is not an event.

#include "ftsim/linux/LinuxGuest.h"
#include "ftsim/linux/PokeCpu.h"

#include <cstdint>
#include <span>
#include <string>

namespace ftsim::linuxk {

struct Int3ProbeResult {
  bool handled = false;     // the handler returned non-zero
  std::uint64_t ip = 0;     // handled: the pt_regs ip it left (where the trapped CPU resumes)
  std::uint64_t pushed = 0; // handled: the word it pushed on the trapped stack (a call), or 0
  std::string finding;      // the handler did not return ("BUG at f:l", a guest fault, ...), or ""
};

class Int3Probe {
public:
  // `regions` as for PokeCpu (every region is mapped readable and writable here); `stack` private
  // to the probe.
  Int3Probe(const LinuxGuest &guest, std::span<const HostRegion> regions, HostRegion stack);
  ~Int3Probe();
  Int3Probe(const Int3Probe &) = delete;
  Int3Probe &operator=(const Int3Probe &) = delete;

  // poke_int3_handler() for an int3 trapped at `site` (regs->ip = site + 1).
  Int3ProbeResult probe(std::uint64_t site);

  struct Impl;

private:
  const LinuxGuest &guest_;
  Impl *impl_ = nullptr;
};

} // namespace ftsim::linuxk
