// Enabling a tracer on every site of a synthetic image (EnableAtScale.h).

#include "ftsim/kernel/EnableAtScale.h"

#include "ftsim/arch/Image.h"
#include "ftsim/kernel/Kernel.h"
#include "ftsim/sim/RoundRobinScheduler.h"

namespace ftsim::kernel {

KernelConfig enableAtScaleConfig(unsigned cpus, const std::string &protocol) {
  KernelConfig config;
  config.machine.cpus = cpus;
  config.machine.quantum = 64;
  // Runs by blocks on x86 (MachineConfig.h): the machine then knows which lines each engine holds
  // translations of, and asks Unicorn to remove none over the sites the idle CPUs never ran.
  config.machine.traceFlagSteps = true;
  config.machine.keepLog = false; // counted, not recorded: memory stays bounded at any N
  config.protocol = protocol;
  return config;
}

EnableAtScaleReport enableTracer(Kernel &k, const std::string &tracer) {
  EnableAtScaleReport r;
  r.image = k.image().name;
  r.records = k.bootReport().entries;
  r.protocol = std::string(k.protocol().name());
  const arch::PatchStats before = k.protocol().stats();
  const std::uint64_t start = k.now();
  k.patcher([&tracer](Kernel &kk) { kk.tracefs().write("current_tracer", tracer); });
  sim::RoundRobinScheduler rr;
  const sim::RunResult run = k.run(rr);
  const arch::PatchStats &after = k.protocol().stats();
  r.stats.batches = after.batches - before.batches;
  r.stats.sites = after.sites - before.sites;
  r.stats.stores = after.stores - before.stores;
  r.stats.syncs = after.syncs - before.syncs;
  r.stats.trapsHandled = after.trapsHandled - before.trapsHandled;
  r.events = k.now() - start;
  r.completed = run.status == sim::RunResult::Status::Completed;
  return r;
}

EnableAtScaleReport enableAtScale(const arch::Arch &isa, std::size_t functions, unsigned cpus,
                                  const std::string &tracer, const std::string &protocol,
                                  std::uint64_t seed, const std::string &linuxProfile) {
  KernelConfig config = enableAtScaleConfig(cpus, protocol);
  if (!linuxProfile.empty())
    applyLinuxProfile(config, linuxProfile, isa.name());
  Kernel k(arch::syntheticImage(isa, functions, seed), config);
  return enableTracer(k, tracer);
}

} // namespace ftsim::kernel
