// The kernel's CPU-side host state as one hash (Kernel::hostStateHash, Kernel.h).

#include "ftsim/kernel/Kernel.h"

#include "ftsim/model/FtraceOps.h"

#include <functional>

namespace ftsim::kernel {

std::uint64_t Kernel::hostStateHash() const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  auto text = [&](const std::string &s) { mix(std::hash<std::string>{}(s)); };
  for (const auto &[task, reads] : listReads_) {
    mix(static_cast<std::uint64_t>(task));
    mix(reads.size());
    for (const ListRead &read : reads) {
      mix(read.event);
      for (const model::FtraceOps *ops : read.list)
        text(ops->name);
    }
  }
  for (const auto &[task, stack] : retStacks_) {
    mix(static_cast<std::uint64_t>(task));
    for (const ReturnFrame &f : stack) {
      mix(f.returnAddress);
      mix(f.func);
      mix(f.callTime);
      mix(f.users);
      mix(static_cast<std::uint64_t>(f.depth));
    }
  }
  // Keyed by address: summed, so that the order of allocation does not matter.
  std::uint64_t freed = 0;
  for (const auto &[ops, event] : freedOps_)
    freed += std::hash<std::string>{}(ops->name) * 0x9e3779b97f4a7c15ull ^ event;
  mix(freed);
  for (const OpsUseAfterFree &u : opsUseAfterFree_) {
    text(u.ops);
    mix(u.ip);
    mix(static_cast<std::uint64_t>(u.task));
  }
  for (const OpMismatch &m : opMismatches_) {
    text(m.function);
    text(m.op);
    mix(m.ip);
    mix(static_cast<std::uint64_t>(m.task));
  }
  return h;
}

} // namespace ftsim::kernel
