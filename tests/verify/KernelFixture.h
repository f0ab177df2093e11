#pragma once
// Shared helpers for the simulated-kernel tests: the built guest images and workload runs.

#include "ftsim/verify/Kernel.h"

#include "ftsim/arch/Image.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

namespace ftsim::verify::testing {

inline std::string guestImagePath(const std::string &flavour) {
  return std::string(FTSIM_GUEST_DIR) + "/" + flavour + "/kernel.elf";
}

#define FTSIM_REQUIRE_IMAGE(flavour)                                                               \
  if (!std::filesystem::exists(::ftsim::verify::testing::guestImagePath(flavour)))                 \
  GTEST_SKIP() << flavour << " is not built (build target ftsim-guests)"

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

} // namespace ftsim::verify::testing
