#pragma once
// The 6.12 guest the CTest fixture ftsim_linux_build_6_12 built (tests/linux/CMakeLists.txt).

#include "ftsim/linux/LinuxGuest.h"

namespace ftsim::linuxk::test {

inline const LinuxGuest &guest612() {
  static const LinuxGuest g = buildLinuxGuest({"6.12", "", FTSIM_LINUX_TEST_CACHE});
  return g;
}

} // namespace ftsim::linuxk::test
