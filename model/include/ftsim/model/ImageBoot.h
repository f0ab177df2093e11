#pragma once
// Glue between a linked guest image (ftsim::arch::Image) and the core's boot: its symbols as a
// Symbolizer (kallsyms) and its __mcount_loc table and text range as BootOptions.

#include "ftsim/arch/Image.h"
#include "ftsim/model/FtraceCore.h"
#include "ftsim/model/Symbolizer.h"

namespace ftsim::model {

// Function symbols of `image` (which must outlive the result). Core-kernel symbols: no module.
Symbolizer imageSymbolizer(const arch::Image &image);

// mcountLocs = image.mcountLocs; isKernelText = inside an executable segment.
BootOptions imageBootOptions(const arch::Image &image);

} // namespace ftsim::model
