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

#include <unistd.h>

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

bool showProgress(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

void checkWritable(const std::string &path, std::string_view flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (!fs::is_regular_file(st))
      fatal("{} {}: exists and is not a regular file", flag, path);
    if (::access(path.c_str(), W_OK) != 0)
      fatal("{} {}: not writable", flag, path);
    return;
  }
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, ec))
    fatal("{} {}: no such directory {}", flag, path, parent.string());
  if (::access(parent.c_str(), W_OK) != 0)
    fatal("{} {}: directory {} is not writable", flag, path, parent.string());
}

std::string freshOutputPath(const std::string &stem, std::string_view flag) {
  std::error_code ec;
  for (unsigned n = 0; n < 1000; ++n) {
    const std::string name = n == 0 ? stem + ".json" : fmt::format("{}-{}.json", stem, n);
    if (!std::filesystem::exists(std::filesystem::symlink_status(name, ec))) {
      checkWritable(name, flag);
      return name;
    }
  }
  fatal("{}: {}.json and {}-1..999.json all exist; give {} FILE", flag, stem, stem, flag);
}

void writeTextFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    fatal("{}: cannot write", path);
}

} // namespace ftsim::cli
