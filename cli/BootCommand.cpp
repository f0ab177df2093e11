// ftsim boot: load a guest image and do what ftrace_init() does: copy and sort __mcount_loc, build
// the dyn_ftrace records in 4 KiB pages, turn every call site into the ISA's nop (read, verify,
// write), and print the kernel's boot line.

#include "Commands.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/model/ImageBoot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ftsim::cli {
namespace {

struct BootOptionsCli {
  std::string arch = defaultArchName();
  std::string image;
  std::size_t synthetic = 0;
  std::uint64_t seed = 1;
  bool list = false;
};

} // namespace

void addBootCommand(CLI::App &app, CommandResult &result) {
  auto *cmd =
      app.add_subcommand("boot", "Boot a guest image as ftrace_init() does and print the boot line "
                                 "(ftrace: allocating N entries in M pages)");
  auto o = std::make_shared<BootOptionsCli>();
  cmd->add_option("--arch", o->arch, fmt::format("{}", fmt::join(executableArchNames(), " or ")))
      ->check(CLI::IsMember(executableArchNames()));
  cmd->add_option("--image", o->image,
                  "built-in image (x86_64-fentry, x86_64-mcount, ppc32-mcount, ppc32-pfe) or a "
                  "linked ELF path");
  auto *synthetic = cmd->add_option("--synthetic", o->synthetic,
                                    "boot a synthetic image of N functions instead (1..1000000)");
  cmd->add_option("--seed", o->seed, "seed of the synthetic image's body lengths");
  cmd->add_flag("--list", o->list, "print available_filter_functions after booting");
  cmd->callback([o, synthetic, &result] {
    const bool isSynthetic = synthetic->count() > 0;
    if (isSynthetic && !o->image.empty())
      fatal("--synthetic and --image exclude each other");
    const arch::Arch &isa = arch::archByName(o->arch);
    arch::Image image = isSynthetic ? arch::syntheticImage(isa, o->synthetic, o->seed)
                                    : arch::loadImage(resolveImagePath(o->arch, o->image));
    if (image.arch != &isa)
      fatal("--image {} is a {} image, not {}", image.name, image.arch->name(), isa.name());
    model::StaticBoot booted(image);
    const model::ImageBoot &boot = booted.result();
    fmt::print("{}{}\n", boot.bugText, boot.report.allocationLine());
    if (o->list)
      fmt::print("{}", booted.core().availableFilterFunctions());
    result.exitCode = boot.report.bugs.empty() ? 0 : 1;
  });
}

} // namespace ftsim::cli
