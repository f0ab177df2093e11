#pragma once
// `ftsim prove` as one library call: which Z3 proofs a request selects, their results for people,
// and the verdict (Verdict.h). A proof that should hold and fails is a VIOLATION (its
// counterexample is printed). A strategy that is meant to be unsafe (the historical trampoline
// frees) and is shown unsafe is printed as "shown unsafe (as expected)" and is no failure; one that
// is meant to be unsafe and is not shown so within the bounds is INCOMPLETE (the bounds are too
// small to show it).

#include "ftsim/verify/check/Verdict.h"

#include "ftsim/arch/Progress.h"

#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

struct ProveRequest {
  std::optional<std::string> arch, protocol, store, fetch, trampFree;
  std::optional<std::string> protocolFile; // a protocol as data (ProtocolFile.h) for --protocol
  std::optional<unsigned> siteOffset;
  bool encodingsOnly = false;
  bool quiescenceOnly = false;
  unsigned tasks = 3, cpus = 2, steps = 14; // the bounded task model (quiescence)
  // When given: (stages done, stages in all) after each stage (the encodings, each ISA's
  // byte-state sweep, the quiescence model).
  ProgressFn progress;
};

struct ProveReport {
  std::string text; // one line per proof (and its counterexample), for people
  Verdict verdict = Verdict::Verified;
};

// FatalError for unknown names or an offset the ISA's instructions cannot have.
ProveReport prove(const ProveRequest &request);

} // namespace ftsim::verify
