#pragma once
// A Linux tree's own x86 patching code as a guest image (linux/README.md): the tree's objects
// (arch/x86/kernel/alternative.o, arch/x86/lib/insn.o, inat.o) built with the tree's Kbuild by
// linux/kbuild/linux-objects, linked with ftsim's shims, traced workload and a generated stub for
// every symbol nothing defines.

#include "ftsim/arch/Image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ftsim::linuxk {

// Which tree: an installed Debian linux-source-VERSION ("6.1", "6.12") or a directory.
struct LinuxTreeRequest {
  std::string version; // --kernel
  std::string tree;    // --kernel-tree
  std::string cache;   // empty: the script's default ($FTSIM_LINUX_CACHE, ~/.cache/ftsim/linux)
  std::string mutant;  // a source mutation operator (linux/kbuild/mutate --list), or ""
};

struct LinuxGuest {
  std::string dir;       // the cache entry holding guest.elf
  std::string version;   // from the tree's Makefile: "6.12.57"
  std::string treeLabel; // "linux-source-6.12" or the directory given
  std::string config;    // "x86_64_defconfig + linux/kbuild/ftsim.config"
  std::string mutant;    // the source mutant built, or ""
  int textPokeArgs = 4;  // __text_poke(func, addr, src, len) or (addr, opcode, len)
  arch::Image image;
  std::vector<std::string> functionStubs; // generated: a call is "unexpected call to SYMBOL"
  std::vector<std::string> dataStubs;     // generated: zeroed data

  // The address of a symbol of the image; FatalError naming the tree when it has none.
  std::uint64_t symbol(const std::string &name) const;
  // The generated function stub at `addr`, or "" when `addr` is not one.
  std::string stubAt(std::uint64_t addr) const;
  // "Linux 6.12.57 (linux-source-6.12), x86_64_defconfig + linux/kbuild/ftsim.config"
  std::string describe() const;
};

// Builds (or finds in the cache) and loads the guest of a tree. FatalError with the script's
// one-line diagnosis for a bad tree or a failed build.
LinuxGuest buildLinuxGuest(const LinuxTreeRequest &request);

// The build script (linux/kbuild/linux-objects) this build of ftsim runs.
std::string linuxObjectsScript();
// Where an installed ftsim keeps linux/'s kbuild/ and guest/ (e.g. /usr/share/ftsim/linux); until
// set, linuxObjectsScript() is the source tree's, as for the ftsim of a build tree.
void setLinuxDataDir(std::string dir);

} // namespace ftsim::linuxk
