// Building and loading a Linux tree's guest image (LinuxGuest.h): the build is
// linux/kbuild/linux-objects (a shell script around the tree's Kbuild); this side runs it, turns
// its one-line diagnosis into a FatalError, and loads what it built.

#include "ftsim/linux/LinuxGuest.h"

#include "ftsim/arch/Error.h"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef FTSIM_LINUX_OBJECTS_SCRIPT
#error "FTSIM_LINUX_OBJECTS_SCRIPT must name linux/kbuild/linux-objects"
#endif

namespace ftsim::linuxk {
namespace {

std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string readSmallFile(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

struct ScriptResult {
  int status = 0;
  std::string out, err;
};

ScriptResult runScript(const std::string &command) {
  char errPath[] = "/tmp/ftsim-linux-objects.XXXXXX";
  const int fd = mkstemp(errPath);
  if (fd < 0)
    fatal("linux-objects: cannot create a temporary file for its diagnostics");
  ScriptResult r;
  FILE *pipe = popen(fmt::format("{} 2>{}", command, errPath).c_str(), "r");
  if (!pipe) {
    std::remove(errPath);
    fatal("linux-objects: cannot run {}", linuxObjectsScript());
  }
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
    r.out.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.err = readSmallFile(errPath);
  std::remove(errPath);
  while (!r.out.empty() && r.out.back() == '\n')
    r.out.pop_back();
  return r;
}

} // namespace

namespace {
std::string &linuxDataDir() {
  static std::string dir;
  return dir;
}
} // namespace

void setLinuxDataDir(std::string dir) { linuxDataDir() = std::move(dir); }

std::string linuxObjectsScript() {
  return linuxDataDir().empty() ? FTSIM_LINUX_OBJECTS_SCRIPT
                                : linuxDataDir() + "/kbuild/linux-objects";
}

LinuxGuest buildLinuxGuest(const LinuxTreeRequest &request) {
  // An ftsim copied out of its build or install tree has no script beside it: say so, rather than
  // pass on the shell's "not found".
  if (::access(linuxObjectsScript().c_str(), X_OK) != 0)
    fatal("Linux's build script {} is missing or not executable (reinstall ftsim: a copied ftsim "
          "cannot build a kernel tree's objects)",
          linuxObjectsScript());
  std::string command = shellQuote(linuxObjectsScript());
  if (!request.version.empty())
    command += " --kernel " + shellQuote(request.version);
  if (!request.tree.empty())
    command += " --kernel-tree " + shellQuote(request.tree);
  if (!request.cache.empty())
    command += " --cache " + shellQuote(request.cache);
  if (!request.mutant.empty())
    command += " --mutant " + shellQuote(request.mutant);
  ScriptResult r = runScript(command); // runs on one cache take turns (the script's lock)
  if (r.status != 0 || r.out.empty()) {
    // The script's first line is the diagnosis ("linux-objects: kernel tree 'X': ..."); the
    // build log's tail follows it.
    std::string first = r.err.substr(0, r.err.find('\n'));
    if (first.rfind("linux-objects: ", 0) == 0)
      first.erase(0, 15);
    // The log's tail follows on stderr of the script, not in this one line.
    const std::string tail = " (last lines of the build log follow)";
    if (first.size() > tail.size() &&
        first.compare(first.size() - tail.size(), tail.size(), tail) == 0)
      first.erase(first.size() - tail.size());
    if (first.empty())
      first = fmt::format("{} exited with status {}", linuxObjectsScript(), r.status);
    fatal("{}", first);
  }
  LinuxGuest g;
  g.dir = r.out.substr(r.out.rfind('\n') == std::string::npos ? 0 : r.out.rfind('\n') + 1);
  const std::filesystem::path dir(g.dir);
  g.version = readSmallFile(dir / "version");
  g.treeLabel = request.tree.empty() ? "linux-source-" + request.version : request.tree;
  g.config = "x86_64_defconfig + linux/kbuild/ftsim.config";
  g.mutant = request.mutant;
  g.textPokeArgs = std::atoi(readSmallFile(dir / "text_poke_args").c_str());
  if (g.textPokeArgs != 3 && g.textPokeArgs != 4)
    fatal("kernel tree '{}': the cache entry {} is incomplete (no text_poke_args)", g.treeLabel,
          g.dir);
  std::istringstream stubs(readSmallFile(dir / "guest" / "stubs.list"));
  std::string kind, name;
  while (stubs >> kind >> name)
    (kind == "function" ? g.functionStubs : g.dataStubs).push_back(name);
  std::sort(g.functionStubs.begin(), g.functionStubs.end());
  std::sort(g.dataStubs.begin(), g.dataStubs.end());
  g.image = arch::loadImage((dir / "guest.elf").string());
  return g;
}

std::uint64_t LinuxGuest::symbol(const std::string &name) const {
  const arch::ImageSymbol *s = image.findSymbol(name);
  if (!s)
    fatal("kernel tree '{}': the guest image has no symbol {}", treeLabel, name);
  return s->addr;
}

std::string LinuxGuest::stubAt(std::uint64_t addr) const {
  const arch::ImageSymbol *s = image.symbolAt(addr);
  if (!s || s->addr != addr)
    return "";
  return std::binary_search(functionStubs.begin(), functionStubs.end(), s->name) ? s->name : "";
}

std::string LinuxGuest::describe() const {
  return fmt::format("Linux {} ({}{}), {}", version, treeLabel,
                     mutant.empty() ? "" : ", source mutant " + mutant, config);
}

} // namespace ftsim::linuxk
