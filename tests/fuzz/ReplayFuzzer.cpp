// ftsim_fuzz_replay: the replay-file reader (verify/src/replay/Replay.cpp), JSON with an embedded
// scenario, as `ftsim replay FILE` reads it before running anything.

#include "FuzzSupport.h"

#include "ftsim/verify/replay/Replay.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  ftsim::fuzz::accepts([&] { (void)ftsim::verify::parseReplay(text, "fuzz.json"); });
  return 0;
}
