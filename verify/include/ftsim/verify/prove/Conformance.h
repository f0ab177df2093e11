#pragma once
// Conformance of ftsim's C++ int3 protocol (arch::makePatchProtocol(x86_64, "int3"), the fast
// model) with a Linux tree's own text_poke_queue()/text_poke_finish() (linuxk::PokeCpu, the
// reference), batch by batch (papers/conformance.md). Both run the same batch on a stopped
// machine and yield one normalised trace: the atomic stores (each text write split by the same
// store model) and the syncs, in order, and after each of them, per site, whether a CPU trapping
// on that site would be handled and where it would resume — for the model by its own trap handler
// (ProtocolTrace.h), for the tree by the tree's own poke_int3_handler() run on a probe
// (linuxk::Int3Probe).

#include "ftsim/arch/Arch.h"
#include "ftsim/linux/LinuxGuest.h"
#include "ftsim/sim/Models.h"
#include "ftsim/verify/prove/ProtocolTrace.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

// What a batch does to one site. The first three are the linux harness's transitions
// (LinuxHarness::build): between the 5-byte nop, a call to ftsim_tracer and a call to
// ftsim_tracer_b. The last two reach the branches of text_poke_bp_batch() those never take: a
// one-byte request whose new byte is an int3 (a kprobe arming the nop's first byte: no tail, and
// its first byte is not written back), and a `ret` padded with int3s (the handler's
// int3_emulate_ret).
enum class ConformanceChange { NopToCall, CallToNop, CallToCall, NopToInt3, NopToRet };
inline constexpr std::size_t kConformanceChanges = 5;
std::string_view conformanceChangeLabel(ConformanceChange c); // "nop-to-int3"

// One site of a batch: the index-th traced function's `call __fentry__` site (in address order).
struct ConformanceSite {
  std::size_t index = 0;
  std::string function; // the traced function the site is in ("traced_c")
  ConformanceChange change = ConformanceChange::NopToCall;
  std::uint64_t addr = 0;
  arch::Bytes oldBytes, newBytes;
};

// The sites of a batch, in address order. FatalError naming the tree when the guest has fewer
// traced sites than an index needs.
std::vector<ConformanceSite>
conformanceSites(const linuxk::LinuxGuest &guest,
                 const std::vector<std::pair<std::size_t, ConformanceChange>> &picks);

struct ConformanceStep {
  TraceStep::Kind kind = TraceStep::Kind::Store;
  std::uint64_t addr = 0; // Store
  arch::Bytes bytes;      // Store: one atomic store
  // Per site: a trap there is handled, at the instant before the next step (after this step and
  // any handler-state change that follows it), or at the end of the batch for the last step.
  std::vector<bool> armed;
  std::vector<TrapResume> resume; // per site, at the same instant: where a handled trap resumes
};

struct ConformanceTrace {
  std::vector<bool> armedBefore; // just before the first step (the vector already published)
  std::vector<TrapResume> resumeBefore;
  std::vector<ConformanceStep> steps;
  std::string failure; // the tree's batch or a probe did not finish: what stopped it
};

// The C++ protocol (x86_64's "int3", or another of its table, e.g. a mutant) on the batch.
ConformanceTrace modelConformanceTrace(sim::StoreModel store,
                                       const std::vector<ConformanceSite> &sites,
                                       std::string_view protocol = "int3");
// The tree's code on the batch; "armed" from the tree's poke_int3_handler() on a probe.
ConformanceTrace treeConformanceTrace(const linuxk::LinuxGuest &guest, sim::StoreModel store,
                                      const std::vector<ConformanceSite> &sites);

enum class DifferenceKind {
  ArmedBefore,      // the handler state before the first step differs
  StoreTarget,      // both store here, at different addresses or with different bytes
  SyncOnlyInModel,  // the model syncs where the tree stores or has ended
  SyncOnlyInTree,   // the tree syncs where the model stores or has ended
  StoreOnlyInModel, // the model stores where the tree has ended
  StoreOnlyInTree,  // the tree stores where the model has ended
  Armed,            // same step, different handler state after it
  Emulation,        // same step, same sites handled, but a handled trap resumes elsewhere
  TreeFailed,       // the tree's batch (or a probe of its handler) did not finish
};
std::string_view differenceKindName(DifferenceKind kind); // "sync-only-in-tree"

struct ConformanceDifference {
  std::size_t step = 0; // index into the steps; ArmedBefore: 0
  DifferenceKind kind = DifferenceKind::StoreTarget;
  std::string model, tree; // what each side did there
};

std::optional<ConformanceDifference> firstDifference(const ConformanceTrace &model,
                                                     const ConformanceTrace &tree);

std::string describeStep(const ConformanceStep &step); // "store 0x… e8", "sync"; + " armed 10"
std::string describeSites(const std::vector<ConformanceSite> &sites); // "traced_a:nop-to-call …"

struct ConformanceOptions {
  std::size_t batches = 100;
  std::uint64_t seed = 1;
  sim::StoreModel store = sim::StoreModel::Byte;
  std::size_t maxSites = 8;
  bool allChanges = true;
};

struct ConformanceBatch {
  std::vector<ConformanceSite> sites;
  std::size_t modelSteps = 0, treeSteps = 0;
  std::optional<ConformanceDifference> difference;
};

struct ConformanceReport {
  std::vector<ConformanceBatch> batches;
  std::size_t same() const;
  std::map<DifferenceKind, std::size_t> kinds() const;
  // No difference is accepted: none has been found (papers/conformance.md).
  bool conforms() const { return same() == batches.size(); }
};

// Random batches of 1..maxSites distinct sites with random changes (the harness's three only
// unless `allChanges`), from `seed`
// (deterministic: the same options give the same batches on every machine).
std::vector<std::vector<std::pair<std::size_t, ConformanceChange>>>
randomConformanceBatches(std::size_t traced, const ConformanceOptions &options);

ConformanceBatch compareBatch(const linuxk::LinuxGuest &guest, sim::StoreModel store,
                              const std::vector<ConformanceSite> &sites);
ConformanceReport runConformance(const linuxk::LinuxGuest &guest,
                                 const ConformanceOptions &options);

} // namespace ftsim::verify
