#include "Commands.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/linux/LinuxGuest.h"
#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace ftsim::cli {

namespace {

// The directory of the running executable (/proc/self/exe), empty when it cannot be read.
std::filesystem::path executableDir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// True when this is the ftsim of a build tree (cli/ of the tree it was built in), whose data is
// the tree's own; false for an installed (or copied) ftsim, which never reads a build tree.
bool inBuildTree() {
  const std::filesystem::path dir = executableDir();
  if (dir.empty())
    return true;
  std::error_code ec;
  return std::filesystem::equivalent(dir, FTSIM_BUILD_EXE_DIR, ec);
}

// An installed ftsim's data: <bindir>/<FTSIM_INSTALL_DATA_REL>, e.g. /usr/bin/../share/ftsim.
std::string installedDataDir() {
  return (executableDir() / FTSIM_INSTALL_DATA_REL).lexically_normal().string();
}

} // namespace

std::string guestDir() {
  if (const char *env = std::getenv("FTSIM_GUEST_DIR"); env && *env)
    return env;
  return inBuildTree() ? FTSIM_DEFAULT_GUEST_DIR : installedDataDir() + "/guest";
}

void useInstalledLinuxScripts() {
  if (!inBuildTree())
    linuxk::setLinuxDataDir(installedDataDir() + "/linux");
}

std::string scenarioDir() {
  return inBuildTree() ? FTSIM_SOURCE_SCENARIO_DIR : installedDataDir() + "/scenarios";
}

std::string resolveScenarioPath(const std::string &file) {
  if (file.empty() || file.find('/') != std::string::npos || std::filesystem::exists(file))
    return file;
  for (const std::string &candidate :
       {scenarioDir() + "/" + file, scenarioDir() + "/" + file + ".toml"})
    if (std::filesystem::is_regular_file(candidate))
      return candidate;
  return file;
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

std::string resolveImagePath(const std::string &arch, const std::string &image,
                             const std::string &scenario) {
  // How the error names what the user wrote: the flags, or the scenario's keys.
  const std::string imageWord =
      scenario.empty() ? "--image " + image : scenario + ": code.image '" + image + "'";
  const std::string archWord = scenario.empty() ? "--arch " + arch : "its arch " + arch;
  std::string name = image;
  if (name.empty()) {
    const std::vector<std::string> own = arch::archByName(arch).guestFlavours();
    if (own.empty())
      fatal("{} has no built-in guest image: give {}",
            scenario.empty() ? "--arch " + arch : scenario + ": arch " + arch,
            scenario.empty() ? "--image" : "code.image");
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
      fatal("{} is a built-in image for another architecture than {}", imageWord, archWord);
    const std::string path = guestDir() + "/" + name + "/kernel.elf";
    if (!std::filesystem::exists(path))
      fatal("built-in image {} not found at {} ({})", name, path,
            inBuildTree() ? "build the corpora first: scripts/setup"
                          : "reinstall ftsim, or set FTSIM_GUEST_DIR to a directory of images");
    return path;
  }
  if (!std::filesystem::exists(name))
    fatal("{}: no such file, and not a built-in image (built-in: {})", imageWord,
          fmt::join(builtins, ", "));
  return name;
}

verify::HarnessEnv harnessEnv() {
  verify::HarnessEnv env;
  env.imagePath = [](const verify::Scenario &s) {
    return resolveImagePath(s.arch, s.image, s.name);
  };
  return env;
}

bool showProgress(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

ProgressMode progressMode(bool forced, bool quiet) {
  return ftsim::progressMode(forced, quiet, ::isatty(STDERR_FILENO) == 1);
}

void addProgressFlag(CLI::App *cmd, bool &forced) {
  cmd->add_flag("--progress", forced,
                "progress with an estimate of what remains on stderr even when it is not a "
                "terminal (one line per report; on a terminal it is shown anyway)");
}

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
