// ftsim_fuzz_flags: `ftsim flags VALUE`: decodeRecordFlags() (model/src/RecordFlags.cpp) of any
// 32-bit dyn_ftrace.flags word in both layouts. The first four bytes are the word.

#include "FuzzSupport.h"

#include "ftsim/model/RecordFlags.h"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::uint32_t flags = 0;
  std::memcpy(&flags, data, size < sizeof flags ? size : sizeof flags);
  for (auto layout : {ftsim::model::FlagsLayout::Legacy3x, ftsim::model::FlagsLayout::Current}) {
    const ftsim::model::DecodedRecordFlags decoded = ftsim::model::decodeRecordFlags(flags, layout);
    if (decoded.summary().empty())
      ftsim::fuzz::finding("empty summary");
  }
  return 0;
}
