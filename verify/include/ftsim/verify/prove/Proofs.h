#pragma once
// Z3 proofs, each negate-and-expect-unsat: the property's negation is asserted over all the
// nondeterminism the models allow; unsat means the property holds for every choice; sat yields a
// model, which is turned back into concrete bytes and decoded with Capstone.

#include "ftsim/arch/Arch.h"
#include "ftsim/sim/FetchModel.h"
#include "ftsim/sim/Models.h"

#include <memory>
#include <string>
#include <vector>

namespace ftsim::verify {

struct ProofResult {
  std::string name;           // what was checked, with its parameters
  bool holds = false;         // unsat of the negation
  std::string counterexample; // when !holds: concrete bytes, decoding, instant
  std::size_t checks = 0;     // solver queries behind this result
  double milliseconds = 0;
};

// A site rewrite the proofs check: nop -> call, call -> nop, call -> call (another target).
enum class SiteTransition { NopToCall, CallToNop, CallToCall };
std::string_view transitionName(SiteTransition t);

struct ByteStateQuery {
  std::string protocol;
  sim::StoreModel store = sim::StoreModel::Byte;
  const sim::FetchModel *fetch = &sim::fetchModelByName("stale");
  SiteTransition transition = SiteTransition::NopToCall;
  unsigned siteOffset = 0; // address of the first site mod 64
  unsigned sites = 1;      // sites in one batch (spread over several cache lines)
};

// Byte-state safety: at every instant of the protocol, every byte string a CPU can fetch at each
// site is the old instruction, the new one, or starts with the trap while the protocol's handler
// is armed for that site. A prover owns its Z3 context and a memo of the queries it proved (a
// query equal to a proven one up to the sites' absolute addresses holds, with 0 checks): its
// answers depend on its own queries only. One prover per sweep; creating a context costs far more
// than a query.
class ByteStateProver {
public:
  ByteStateProver();
  ~ByteStateProver();
  ByteStateProver(const ByteStateProver &) = delete;
  ByteStateProver &operator=(const ByteStateProver &) = delete;
  ProofResult prove(const arch::Arch &arch, const ByteStateQuery &query);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One query with a prover of its own.
ProofResult proveByteStates(const arch::Arch &arch, const ByteStateQuery &query);

// Whether `store` describes a real machine for the ISA (powerpc: aligned word stores are atomic).
bool storeModelPossible(const arch::Arch &arch, sim::StoreModel store);

// All offsets 0..63 (instruction-aligned), every store model, every fetch model, every transition,
// one-site and three-site batches. Holds iff every query holds; the counterexample is the first.
ProofResult proveByteStatesEverywhere(const arch::Arch &arch, const std::string &protocol);

// `arch`'s call encoding round-trips exactly within its range, and the encoder refuses otherwise
// (by Arch::branchForm). x86-64 rel32 call/jmp: for every site and target, the bytes decode back
// to the target exactly when the displacement fits in 32 bits. powerpc I-form b/bl (at the
// target's address width): the 24-bit LI field round-trips exactly when the offset is word aligned
// and within -0x2000000..0x1fffffc; a long-branch stub is needed exactly otherwise.
ProofResult proveCallEncoding(const arch::Arch &arch);
// Whether the truncation proof below applies to `arch` (a 32-bit I-form `bl`).
bool truncatesLikePowerPc32(const arch::Arch &arch);
// The ppc-branch-range bug: an encoder that masks the offset into LI without a range check
// silently branches elsewhere. Holds when Z3 finds such a site and target (the witness is in
// `counterexample`, with `isa`'s refusal), i.e. when the hazard the range check prevents is
// real. `isa` must satisfy truncatesLikePowerPc32.
ProofResult provePowerPcTruncationMisbranches(const arch::Arch &isa);

} // namespace ftsim::verify
