#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/verify/Harness.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ftsim::cli {

std::string guestDir() {
  if (const char *env = std::getenv("FTSIM_GUEST_DIR"); env && *env)
    return env;
  return FTSIM_DEFAULT_GUEST_DIR;
}

std::string resolveImagePath(const std::string &arch, const std::string &image) {
  static const char *const builtins[] = {"x86_64-fentry", "x86_64-mcount", "ppc32-mcount",
                                         "ppc32-pfe"};
  std::string name = image;
  if (name.empty())
    name = arch == "ppc32" ? "ppc32-mcount" : arch + "-fentry";
  for (const char *b : builtins) {
    if (name != b)
      continue;
    if (name.rfind(arch, 0) != 0)
      fatal("--image {} is a built-in image for another architecture than --arch {}", name, arch);
    const std::string path = guestDir() + "/" + name + "/kernel.elf";
    if (!std::filesystem::exists(path))
      fatal("built-in image {} not found at {} (build the corpora first: scripts/setup)", name,
            path);
    return path;
  }
  if (!std::filesystem::exists(name))
    fatal("--image {}: no such file, and not a built-in image (built-in: x86_64-fentry, "
          "x86_64-mcount, ppc32-mcount, ppc32-pfe)",
          name);
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
