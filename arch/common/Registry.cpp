// One registry table; each target contributes through one explicit factory call. Adding an ISA is
// one line here (see arch/README.md); the first entry is the default ISA of every command.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Trampolines.h"

#include <fmt/format.h>

#include <memory>

namespace ftsim::arch {

std::unique_ptr<Arch> createX86_64Arch();
std::unique_ptr<Arch> createPpc32Arch();
std::unique_ptr<Arch> createPpc64Arch();

namespace {

const std::vector<std::unique_ptr<Arch>> &registry() {
  static const std::vector<std::unique_ptr<Arch>> archs = [] {
    std::vector<std::unique_ptr<Arch>> v;
    v.push_back(createX86_64Arch());
    v.push_back(createPpc32Arch());
    v.push_back(createPpc64Arch());
    return v;
  }();
  return archs;
}

} // namespace

const Arch &archByName(std::string_view name) {
  std::string known;
  for (const auto &arch : registry()) {
    if (arch->name() == name)
      return *arch;
    known += known.empty() ? "" : ", ";
    known += arch->name();
  }
  fatal("unknown architecture '{}' (known: {})", name, known);
}

const Arch &defaultArch() { return *registry().front(); }

const Arch *archByElf(std::uint16_t machine, unsigned elfClass) {
  for (const auto &arch : registry())
    if (arch->elfMachine() == machine && arch->elfClass() == elfClass)
      return arch.get();
  return nullptr;
}

std::vector<const Arch *> allArchs() {
  std::vector<const Arch *> out;
  for (const auto &arch : registry())
    out.push_back(arch.get());
  return out;
}

std::vector<const Arch *> executableArchs() {
  std::vector<const Arch *> out;
  for (const auto &arch : registry())
    if (arch->executable())
      out.push_back(arch.get());
  return out;
}

std::unique_ptr<FtraceTrampolines> makeFtraceTrampolines(const Arch &arch,
                                                         const TrampolineRequest &request) {
  std::unique_ptr<FtraceTrampolines> out = arch.makeTrampolines(request);
  if (!out)
    fatal("no guest ftrace trampolines for {} yet", arch.name());
  return out;
}

std::string hexBytes(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (std::uint8_t b : bytes) {
    if (!out.empty())
      out += ' ';
    out += fmt::format("{:02x}", b);
  }
  return out;
}

std::string describeBytes(const Arch &arch, std::span<const std::uint8_t> bytes,
                          std::uint64_t address) {
  std::size_t undecoded = 0;
  std::string out;
  for (const auto &insn : arch.disassemble(bytes, address, &undecoded)) {
    if (!out.empty())
      out += "; ";
    out += insn.text;
  }
  if (undecoded < bytes.size()) {
    if (!out.empty())
      out += "; ";
    out += "(bad)";
  }
  return out;
}

} // namespace ftsim::arch
