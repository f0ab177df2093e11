#pragma once
// The fetch model: when a store into text reaches the instruction fetch of a CPU other than the
// writer. One object per model states it once, for the machine (how the CPU's instruction view
// follows a store, whether a fetch is split into line events) and for the Z3 byte-state proofs
// (which values a fetched granule may hold). Adding a model is one file in sim/fetch/ and one
// entry in sim/fetch/Registry.cpp; sim/README.md, "Fetch model", has the rules of each.
//
// Under every model the writing CPU sees its own stores at once, and a serialising event (an
// IPI, an exception return, cpuid/iret on x86, isync/rfi on powerpc) makes the CPU's view equal
// to canonical text: the store history of a CPU starts at its last serialisation.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ftsim::sim {

// How a store by another CPU reaches a CPU's instruction view.
enum class StoreReach : std::uint8_t {
  AtOnce,     // the stored bytes are copied into the view at the store
  AtLineRead, // the lines the store touches fall behind; a fetch re-reads a line that is behind
              // from canonical text at the fetch's instant
  ByChoice,   // the view keeps its values and each touched granule remembers every value it has
              // held; each fetch reads one of them per granule, as the scheduler chooses
};

// Which values of a fetch granule one fetch may read, out of the values the granule has held
// since the fetching CPU last serialised. The granule is the unit of single-copy atomic
// instruction fetch: a byte on x86-64, an aligned word on powerpc (arch::Arch::insnAlignment()).
enum class AdmissibleValues : std::uint8_t {
  Newest,        // the newest only: every granule is read at the fetch instant
  NewestPerLine, // the newest within a line, per line: each 64-byte line is read at its own
                 // instant, the last one at execution, with no serialisation in between (a fetch
                 // in progress is not at an instruction boundary, so it cannot take an IPI)
  AnySinceSerialise, // any value held since the last serialisation, chosen per granule
};

class FetchModel {
public:
  virtual ~FetchModel() = default;
  virtual std::string_view name() const = 0;
  // The machine's side.
  virtual StoreReach storeReach() const = 0;
  // Whether an instruction that may straddle two lines of watched text is fetched in two events
  // (FetchLine reads the first line, Step the second), so that stores can fall between.
  virtual bool splitsFetchAtLines() const = 0;
  // The proofs' side: what the machine's mechanism above lets a fetch read.
  virtual AdmissibleValues admissible() const = 0;
};

// Every fetch model, in a fixed order (the order of the CLI's lists and of the proofs' sweeps).
std::span<const FetchModel *const> allFetchModels();
// The registered model called `name`; FatalError naming the known ones when there is none.
const FetchModel &fetchModelByName(std::string_view name);
// The known names in registry order, joined by `separator` ("atomic, line, stale").
std::string fetchModelNames(std::string_view separator = ", ");

} // namespace ftsim::sim
