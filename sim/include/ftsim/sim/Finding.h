#pragma once
// Findings: what the machine itself observes that an oracle reports. A guest fault never crashes
// ftsim; it stops the faulting task and becomes a Finding.

#include <cstdint>
#include <string>
#include <vector>

namespace ftsim::sim {

enum class FindingKind : std::uint8_t {
  GuestFault,         // unmapped fetch/read/write, write to text, invalid instruction, bad trap
  TornFetch,          // a fetch at a watched site saw bytes that are none of its allowed states
  TrampolineLifetime, // a fetch from (or return into) freed text
  Deadlock,           // nothing can run while the patcher waits
};

struct Finding {
  FindingKind kind = FindingKind::GuestFault;
  std::uint64_t event = 0; // index of the event that produced it
  unsigned cpu = 0;
  int task = -1;
  std::uint64_t pc = 0;            // where the CPU was fetching
  std::uint64_t addr = 0;          // faulting data address, site address, freed range start
  std::vector<std::uint8_t> bytes; // the bytes fetched at pc (or the site's bytes)
  std::string decoded;             // their Capstone decoding (describeBytes)
  std::string message;             // one line, for people
};

std::string_view findingKindName(FindingKind kind);
std::string formatFinding(const Finding &finding);

} // namespace ftsim::sim
