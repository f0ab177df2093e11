// ftsim_fuzz_image: the linked-image loader (arch/common/ImageLoader.cpp) and what `ftsim boot
// --image PATH --list` does with the image: ftrace_init() over its __mcount_loc table (model/
// ImageBoot.cpp) and available_filter_functions.

#include "FuzzSupport.h"

#include "ftsim/arch/Image.h"
#include "ftsim/model/ImageBoot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static ftsim::fuzz::InputFile file("kernel.elf");
  const std::string &path = file.assign(data, size);
  ftsim::fuzz::accepts([&] {
    ftsim::arch::Image image = ftsim::arch::loadImage(path);
    ftsim::model::StaticBoot booted(image);
    (void)booted.result().report.allocationLine();
    (void)booted.core().availableFilterFunctions();
  });
  return 0;
}
