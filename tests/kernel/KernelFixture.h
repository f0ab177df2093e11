#pragma once
// Shared helpers for the simulated-kernel tests: the built guest images and workload runs.

#include "ftsim/kernel/Kernel.h"

#include "ftsim/arch/Image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

namespace ftsim::kernel::testing {

inline std::string guestImagePath(const std::string &flavour) {
  return std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/kernel.elf";
}

// A test that needs a guest image fails (never skips) when the image is missing, naming it and the
// build target that makes it. The test targets depend on that build, so this means a broken build.
#define FTSIM_REQUIRE_IMAGE(flavour)                                                               \
  ASSERT_TRUE(std::filesystem::exists(::ftsim::kernel::testing::guestImagePath(flavour)))          \
      << "guest image " << ::ftsim::kernel::testing::guestImagePath(flavour)                       \
      << " is missing: build target guest-" << (flavour) << " (all images: ftsim-guests)"

inline std::unique_ptr<Kernel> bootKernel(const std::string &flavour, KernelConfig config = {}) {
  return std::make_unique<Kernel>(arch::loadImage(guestImagePath(flavour)), std::move(config));
}

// Fast mode keeps the tests quick; watched sites and trampolines are still stepped one by one.
inline KernelConfig fastConfig(unsigned cpus = 4, std::string protocol = "int3") {
  KernelConfig config;
  config.machine.cpus = cpus;
  config.machine.quantum = 64;
  config.protocol = std::move(protocol);
  return config;
}

// The ISA's correct patch protocol for a built image flavour: int3 on x86-64, word on ppc32.
inline std::string correctProtocol(const std::string &flavour) {
  return flavour.rfind("ppc32", 0) == 0 ? "patch-instruction" : "int3";
}

// x86-64 mcount sites exist only in releases before v6.x's -mfentry-only builds: that image runs
// as Linux 4.19 throughout (its int3-skip protocol, record flags, graph entry).
inline KernelConfig fastConfigFor(const std::string &flavour, unsigned cpus = 4) {
  if (flavour == "x86_64-mcount") {
    KernelConfig config = fastConfig(cpus, "");
    applyLinuxProfile(config, "4.19", "x86_64");
    return config;
  }
  return fastConfig(cpus, correctProtocol(flavour));
}

// The patch site (record) inside `function`: its entry on x86-64 fentry, after `mflr r0;
// stw r0,4(r1)` on ppc32 -pg, the second nop with -fpatchable-function-entry=2.
inline std::uint64_t siteOf(const Kernel &kernel, const std::string &function) {
  std::uint64_t site = 0;
  auto &core = const_cast<Kernel &>(kernel).core();
  core.records().forEach([&](const model::DynFtrace &rec) {
    const std::optional<model::SymbolInfo> s = core.symbolize(rec.ip);
    if (!site && s && s->name == function)
      site = rec.ip;
  });
  if (!site)
    ADD_FAILURE() << "no patch site in " << function;
  return site;
}

// Test-name suffix for an image flavour ("x86_64-fentry" -> "x86_64_fentry").
inline std::string flavourName(const ::testing::TestParamInfo<const char *> &info) {
  std::string s = info.param;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// The images the engine-level tests run on: x86-64 and the executable powerpc guest.
#define FTSIM_KERNEL_IMAGES ::testing::Values("x86_64-fentry", "ppc32-mcount")

} // namespace ftsim::kernel::testing
