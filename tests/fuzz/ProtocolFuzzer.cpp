// ftsim_fuzz_protocol: the protocol-file parser (verify/src/scenario/ProtocolFile.cpp) and the
// ISA's check of the steps (compileProtocol), as `ftsim check --protocol-file FILE` runs them
// before registering the protocol. An accepted protocol must survive the round trip through its
// file form (protocolFileText, which `ftsim protocols --file NAME` prints).

#include "FuzzSupport.h"

#include "ftsim/verify/scenario/ProtocolFile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  ftsim::arch::ProtocolProgram program;
  if (!ftsim::fuzz::accepts([&] { program = ftsim::verify::parseProtocolText(text, "fuzz.toml"); }))
    return 0;
  const std::string file = ftsim::verify::protocolFileText(program);
  ftsim::arch::ProtocolProgram again;
  if (!ftsim::fuzz::accepts([&] { again = ftsim::verify::parseProtocolText(file, "fuzz.toml"); }))
    ftsim::fuzz::finding("an accepted protocol's file text is rejected:\n" + file);
  if (ftsim::verify::protocolFileText(again) != file)
    ftsim::fuzz::finding("protocolFileText() is not stable across a round trip:\n" + file);
  return 0;
}
