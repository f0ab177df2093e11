// ftsim prove as one library call (Prove.h).

#include "ftsim/verify/prove/Prove.h"
#include "ftsim/verify/scenario/ProtocolFile.h"

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/PatchProtocol.h"
#include "ftsim/sim/Models.h"
#include "ftsim/verify/prove/Proofs.h"
#include "ftsim/verify/prove/QuiescenceProof.h"

#include <fmt/format.h>

namespace ftsim::verify {
namespace {

class Report {
public:
  // A proof that should hold.
  void expectHolds(const ProofResult &r) {
    if (r.holds) {
      out_.text +=
          fmt::format("proved  {} [{} checks, {:.0f} ms]\n", r.name, r.checks, r.milliseconds);
      if (!r.counterexample.empty())
        out_.text += fmt::format("  witness: {}\n", r.counterexample);
      return;
    }
    out_.text += fmt::format("FAILED  {} [{} checks, {:.0f} ms]\n  counterexample: {}\n", r.name,
                             r.checks, r.milliseconds, r.counterexample);
    out_.verdict = Verdict::Violation;
  }
  // A proof of something that is meant to be unsafe: its counterexample is the expected result.
  void expectUnsafe(const ProofResult &r) {
    if (!r.holds) {
      out_.text += fmt::format("shown unsafe (as expected)  {} [{} checks, {:.0f} ms]\n  "
                               "counterexample: {}\n",
                               r.name, r.checks, r.milliseconds, r.counterexample);
      return;
    }
    out_.text += fmt::format("NOT SHOWN UNSAFE  {} [{} checks, {:.0f} ms]: meant to be unsafe, "
                             "but no counterexample within the bounds (raise --tasks/--steps)\n",
                             r.name, r.checks, r.milliseconds);
    if (out_.verdict == Verdict::Verified)
      out_.verdict = Verdict::Incomplete;
  }
  void line(const std::string &text) { out_.text += text + "\n"; }
  bool failed() const { return out_.verdict == Verdict::Violation; }
  ProveReport take() { return std::move(out_); }

private:
  ProveReport out_;
};

void quiescence(const ProveRequest &q, Report &report) {
  std::vector<FreeStrategy> strategies{FreeStrategy::RcuTasks, FreeStrategy::SchedSync,
                                       FreeStrategy::Immediate};
  if (q.trampFree)
    strategies = {parseFreeStrategy(*q.trampFree)};
  for (FreeStrategy strategy : strategies)
    for (bool preempt : {true, false}) {
      const ProofResult r = proveTrampolineFree(strategy, {q.tasks, q.cpus, q.steps, preempt});
      // RCU-tasks always; schedule_on_each_cpu() only without preemption.
      const bool safe =
          strategy == FreeStrategy::RcuTasks || (strategy == FreeStrategy::SchedSync && !preempt);
      if (safe)
        report.expectHolds(r);
      else
        report.expectUnsafe(r);
    }
}

std::vector<const arch::Arch *> selectedArchs(const ProveRequest &q) {
  std::vector<const arch::Arch *> archs;
  if (q.arch)
    return {&arch::archByName(*q.arch)};
  if (!q.protocol)
    return arch::executableArchs();
  for (const arch::Arch *a : arch::executableArchs())
    for (const auto &p : arch::protocolsFor(*a))
      if (p.name == *q.protocol)
        archs.push_back(a);
  if (archs.empty())
    fatal("unknown protocol '{}' (see ftsim protocols)", *q.protocol);
  return archs;
}

void byteStates(const ProveRequest &q, const arch::Arch &a, Report &report) {
  if (!a.executable())
    fatal("--arch {}: byte-state proofs need an executable architecture", a.name());
  const std::string protocol = q.protocol.value_or(arch::protocolsFor(a).front().name);
  arch::makePatchProtocol(a, protocol); // validates the name
  if (q.siteOffset && (*q.siteOffset > 63 || *q.siteOffset % a.insnAlignment() != 0))
    fatal("--site-offset {}: not a site offset of {} (0-63, {}-byte aligned)", *q.siteOffset,
          a.name(), a.insnAlignment());
  if (!q.store && !q.fetch && !q.siteOffset)
    return report.expectHolds(proveByteStatesEverywhere(a, protocol));
  std::vector<sim::StoreModel> stores{sim::StoreModel::Byte, sim::StoreModel::Word,
                                      sim::StoreModel::Line};
  std::vector<const sim::FetchModel *> fetches(sim::allFetchModels().begin(),
                                               sim::allFetchModels().end());
  if (q.store) {
    stores = {sim::parseStoreModel(*q.store)};
    if (!sim::isRealStoreModel(a, stores.front()))
      fatal("--store {}: not a real {} store model (an aligned instruction word is stored "
            "atomically)",
            *q.store, a.name());
  }
  // Only the store models the ISA's machines have (sim::isRealStoreModel), as in the full sweep.
  std::erase_if(stores, [&](sim::StoreModel m) { return !sim::isRealStoreModel(a, m); });
  if (q.fetch)
    fetches = {&sim::fetchModelByName(*q.fetch)};
  ByteStateProver prover; // one context and memo for the whole sweep
  for (auto store : stores)
    for (auto fetch : fetches)
      for (unsigned off = 0; off < 64; off += a.insnAlignment()) {
        if (q.siteOffset && *q.siteOffset != off)
          continue;
        for (unsigned sites : {1u, 3u}) {
          const ProofResult r =
              prover.prove(a, {protocol, store, fetch, SiteTransition::NopToCall, off, sites});
          if (!r.holds || q.siteOffset)
            report.expectHolds(r);
        }
      }
  if (!report.failed())
    report.line(fmt::format("proved  byte-state safety of {} {} for the selected models and "
                            "offsets",
                            a.name(), protocol));
}

} // namespace

ProveReport prove(const ProveRequest &request) {
  ProveRequest q = request;
  if (q.protocolFile) {
    if (q.protocol)
      fatal("prove: --protocol and --protocol-file exclude each other");
    const arch::ProtocolProgram program = loadProtocolFile(*q.protocolFile);
    if (q.arch && *q.arch != program.arch)
      fatal("prove: --arch {} but {} is a {} protocol", *q.arch, *q.protocolFile, program.arch);
    q.arch = program.arch;
    q.protocol = program.name;
  }
  Report report;
  auto stage = [&q](std::uint64_t done, std::uint64_t total) {
    if (q.progress)
      q.progress(done, total);
  };
  if (q.quiescenceOnly) {
    quiescence(q, report);
    stage(1, 1);
    return report.take();
  }
  if (q.trampFree)
    fatal("prove: --tramp-free belongs to --quiescence");
  const std::vector<const arch::Arch *> archs = selectedArchs(q);
  const bool encodings = !q.protocol && !q.store && !q.fetch && !q.siteOffset;
  const std::uint64_t stages = (encodings ? 1 : 0) + (q.encodingsOnly ? 0 : archs.size());
  std::uint64_t done = 0;
  stage(0, stages);
  if (encodings) {
    // Every registered ISA's call encoding, then the truncation hazard on 32-bit powerpc.
    for (const arch::Arch *isa : arch::allArchs())
      report.expectHolds(proveCallEncoding(*isa));
    for (const arch::Arch *isa : arch::allArchs())
      if (truncatesLikePowerPc32(*isa))
        report.expectHolds(provePowerPcTruncationMisbranches(*isa));
    stage(++done, stages);
  }
  if (!q.encodingsOnly)
    for (const arch::Arch *a : archs) {
      byteStates(q, *a, report);
      stage(++done, stages);
    }
  return report.take();
}

} // namespace ftsim::verify
