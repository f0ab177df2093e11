#include "Commands.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ftsim::cli {

std::string guestDir() {
  if (const char *env = std::getenv("FTSIM_GUEST_DIR"); env && *env)
    return env;
  return FTSIM_DEFAULT_GUEST_DIR;
}

std::vector<std::string> executableArchNames() {
  std::vector<std::string> out;
  for (const arch::Arch *a : arch::executableArchs())
    out.emplace_back(a->name());
  return out;
}

std::string defaultArchName() { return std::string(arch::defaultArch().name()); }

const arch::Arch &executableArch(const std::string &name) {
  const std::vector<std::string> known = executableArchNames();
  if (std::find(known.begin(), known.end(), name) == known.end())
    fatal("--arch '{}' (known: {})", name, fmt::join(known, ", "));
  return arch::archByName(name);
}

std::string resolveImagePath(const std::string &arch, const std::string &image) {
  std::string name = image;
  if (name.empty()) {
    const std::vector<std::string> own = arch::archByName(arch).guestFlavours();
    if (own.empty())
      fatal("--arch {} has no built-in guest image: give --image", arch);
    name = own.front();
  }
  std::vector<std::string> builtins;
  const arch::Arch *owner = nullptr;
  for (const arch::Arch *a : arch::allArchs())
    for (const std::string &flavour : a->guestFlavours()) {
      builtins.push_back(flavour);
      if (flavour == name)
        owner = a;
    }
  if (owner) {
    if (owner->name() != arch)
      fatal("--image {} is a built-in image for another architecture than --arch {}", name, arch);
    const std::string path = guestDir() + "/" + name + "/kernel.elf";
    if (!std::filesystem::exists(path))
      fatal("built-in image {} not found at {} (build the corpora first: scripts/setup)", name,
            path);
    return path;
  }
  if (!std::filesystem::exists(name))
    fatal("--image {}: no such file, and not a built-in image (built-in: {})", name,
          fmt::join(builtins, ", "));
  return name;
}

verify::HarnessEnv harnessEnv() {
  verify::HarnessEnv env;
  env.imagePath = [](const verify::Scenario &s) { return resolveImagePath(s.arch, s.image); };
  return env;
}

void writeTextFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    fatal("{}: cannot write", path);
}

} // namespace ftsim::cli
