#pragma once
// What the SVG picture of a counterexample draws (Svg.h), captured by replaying it: the trail's
// events, the watched sites they touch, and every CPU's view of those sites after each of them.
// Private to verify/src/replay.

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/Event.h"
#include "ftsim/verify/oracle/Oracle.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ftsim::verify {

class Harness;
struct Counterexample;

struct SvgSite {
  std::uint64_t addr = 0;
  std::uint32_t size = 0;
  std::string name; // Harness::siteOf of its first byte
};

// One drawn event and the machine's text after it.
struct SvgColumn {
  sim::EventRecord event;
  std::string described;                      // describeEvent (Timeline.h)
  std::vector<arch::Bytes> memory;            // per site: the canonical bytes
  std::vector<std::vector<arch::Bytes>> view; // per site, per CPU: the instruction view
};

struct SvgCapture {
  Violation violation;
  std::vector<SvgSite> sites;
  std::size_t sitesNotDrawn = 0;
  std::vector<SvgColumn> columns;
  std::size_t trailNotDrawn = 0; // trail events before the first column
  std::uint64_t eventsUpToViolation = 0;
  std::uint64_t eventsInExecution = 0;
  unsigned cpus = 0;
  unsigned patcherCpu = 0;
};

// The most columns and sites drawn (the trail's last events, ending at the violation; the sites
// in the order the trail first touches them).
inline constexpr std::size_t kSvgMaxColumns = 40;
inline constexpr std::size_t kSvgMaxSites = 4;

SvgCapture captureForSvg(Harness &harness, const Counterexample &cex, const std::string &origin);

} // namespace ftsim::verify
