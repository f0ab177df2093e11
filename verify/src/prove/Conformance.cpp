// The C++ int3 protocol against a Linux tree's own code, batch by batch (Conformance.h).

#include "ftsim/verify/prove/Conformance.h"

#include "ftsim/arch/Error.h"
#include "ftsim/linux/Int3Probe.h"
#include "ftsim/linux/PokeCpu.h"
#include "ftsim/verify/scenario/Scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace ftsim::verify {
namespace {

constexpr std::uint64_t kPatcherStack = 0xffffc90000000000ull;
constexpr std::uint64_t kProbeStack = 0xffffc90000100000ull;
constexpr std::uint64_t kStackSize = 64 * 1024;

const arch::Arch &x86() { return arch::archByName("x86_64"); }

std::uint8_t *hostAt(linuxk::OwnedMemory &mem, std::uint64_t addr) {
  for (linuxk::HostRegion &r : mem.regions)
    if (addr - r.base < r.size)
      return r.host + (addr - r.base);
  FTSIM_PANIC("conformance: {:#x} is not in the image", addr);
}

std::string armedText(const std::vector<bool> &armed) {
  std::string out;
  for (bool a : armed)
    out += a ? '1' : '0';
  return out;
}

// Where each handled trap resumes: "resumes 0x… (pushed 0x…) | declined | …".
std::string resumeText(const std::vector<TrapResume> &resume) {
  std::string out = "resumes";
  for (const TrapResume &r : resume) {
    out += r == TrapResume{} ? " -" : fmt::format(" {:#x}", r.pc);
    if (r.pushed)
      out += fmt::format(" (pushed {:#x})", r.pushed);
  }
  return out;
}

// What one side does at step `i` (or "end" past its last step).
std::string sideAt(const ConformanceTrace &t, std::size_t i) {
  return i < t.steps.size() ? describeStep(t.steps[i]) : "end";
}

} // namespace

std::vector<ConformanceSite>
conformanceSites(const linuxk::LinuxGuest &guest,
                 const std::vector<std::pair<std::size_t, ConformanceChange>> &picks) {
  std::vector<std::uint64_t> locs = guest.image.mcountLocs;
  std::sort(locs.begin(), locs.end());
  const arch::Arch &arch = x86();
  const std::uint64_t tracerA = guest.symbol("ftsim_tracer");
  const std::uint64_t tracerB = guest.symbol("ftsim_tracer_b");
  std::vector<ConformanceSite> out;
  for (const auto &[index, change] : picks) {
    if (index >= locs.size())
      fatal("kernel tree '{}': the guest has {} traced sites, the batch needs site {}",
            guest.treeLabel, locs.size(), index + 1);
    ConformanceSite s;
    s.index = index;
    s.change = change;
    s.addr = locs[index];
    const arch::ImageSymbol *fn = guest.image.symbolAt(s.addr);
    s.function = fn ? fn->name : fmt::format("{:#x}", s.addr);
    const arch::Bytes nop = arch.nop();
    const arch::Bytes callA = arch.call(s.addr, tracerA).bytes;
    const arch::Bytes callB = arch.call(s.addr, tracerB).bytes;
    switch (change) {
    case ConformanceChange::NopToCall:
    case ConformanceChange::CallToNop:
    case ConformanceChange::CallToCall: {
      // The linux harness's transitions, with the same bytes.
      const Transition t = change == ConformanceChange::NopToCall   ? Transition::NopToCall
                           : change == ConformanceChange::CallToNop ? Transition::CallToNop
                                                                    : Transition::CallToCall;
      auto [before, after] = transitionBytes(t, nop, callA, callB);
      s.oldBytes = std::move(before), s.newBytes = std::move(after);
      break;
    }
    case ConformanceChange::NopToInt3:
      s.oldBytes = {nop[0]}, s.newBytes = {0xcc};
      break;
    case ConformanceChange::NopToRet:
      s.oldBytes = nop, s.newBytes = {0xc3, 0xcc, 0xcc, 0xcc, 0xcc};
      break;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const ConformanceSite &a, const ConformanceSite &b) { return a.addr < b.addr; });
  return out;
}

ConformanceTrace modelConformanceTrace(sim::StoreModel store,
                                       const std::vector<ConformanceSite> &sites,
                                       std::string_view protocol) {
  std::vector<arch::PatchRequest> requests;
  for (const ConformanceSite &s : sites)
    requests.push_back({s.addr, s.oldBytes, s.newBytes});
  const ProtocolTrace trace = traceProtocol(x86(), protocol, store, requests);
  // A point follows every store (the store count grows by one), every sync (afterSync) and every
  // publication of handler state (neither). The state a step leaves is the last point before the
  // next step's.
  ConformanceTrace out;
  out.armedBefore = trace.points[0].armed;
  out.resumeBefore = trace.points[0].resume;
  std::size_t step = 0;
  std::vector<bool> *slot = &out.armedBefore;
  std::vector<TrapResume> *resumeSlot = &out.resumeBefore;
  for (std::size_t p = 1; p < trace.points.size(); ++p) {
    const TracePoint &pt = trace.points[p];
    const bool isStep = pt.afterSync || pt.stores == trace.points[p - 1].stores + 1;
    if (isStep) {
      const TraceStep &ts = trace.steps.at(step++);
      out.steps.push_back({ts.kind, ts.addr, ts.bytes, {}, {}});
      slot = &out.steps.back().armed;
      resumeSlot = &out.steps.back().resume;
    }
    *slot = pt.armed;
    *resumeSlot = pt.resume;
  }
  if (step != trace.steps.size())
    FTSIM_PANIC("conformance: {} model steps, {} step points", trace.steps.size(), step);
  return out;
}

ConformanceTrace treeConformanceTrace(const linuxk::LinuxGuest &guest, sim::StoreModel store,
                                      const std::vector<ConformanceSite> &sites) {
  linuxk::OwnedMemory mem = linuxk::copyImageMemory(guest.image, kPatcherStack, kStackSize);
  std::vector<std::uint8_t> probeStack(kStackSize, 0);
  for (const ConformanceSite &s : sites)
    std::memcpy(hostAt(mem, s.addr), s.oldBytes.data(), s.oldBytes.size());
  linuxk::PokeCpu cpu(guest, mem.regions, mem.stack);
  linuxk::Int3Probe probe(guest, mem.regions, {kProbeStack, kStackSize, probeStack.data(), false});

  ConformanceTrace out;
  // The handler state now, for every site; the first probe that fails stops the batch's record.
  // The state the previous step (or the start) left, probed as the next step begins.
  auto closePrevious = [&] {
    std::vector<bool> &armed = out.steps.empty() ? out.armedBefore : out.steps.back().armed;
    std::vector<TrapResume> &resume =
        out.steps.empty() ? out.resumeBefore : out.steps.back().resume;
    armed.clear();
    resume.clear();
    for (const ConformanceSite &s : sites) {
      const linuxk::Int3ProbeResult r = probe.probe(s.addr);
      if (!r.finding.empty() && out.failure.empty())
        out.failure = r.finding;
      armed.push_back(r.handled);
      resume.push_back(r.handled ? TrapResume{r.ip, r.pushed} : TrapResume{});
    }
  };
  linuxk::PokeHooks hooks;
  hooks.textWrite = [&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
    for (const sim::StorePiece &piece :
         sim::splitStores(store, addr, static_cast<std::uint32_t>(bytes.size()))) {
      closePrevious();
      ConformanceStep step;
      step.addr = addr + piece.offset;
      step.bytes.assign(bytes.begin() + piece.offset, bytes.begin() + piece.offset + piece.size);
      std::memcpy(hostAt(mem, step.addr), step.bytes.data(), step.bytes.size());
      out.steps.push_back(std::move(step));
    }
  };
  hooks.syncCores = [&] {
    closePrevious();
    out.steps.push_back({TraceStep::Kind::Sync, 0, {}, {}, {}});
  };
  std::vector<linuxk::PokeRequest> requests;
  for (const ConformanceSite &s : sites)
    requests.push_back({s.addr, s.newBytes});
  const linuxk::PokeOutcome outcome = cpu.runBatch(requests, hooks);
  if (!outcome.finished)
    out.failure = fmt::format("{} at {:#x} ({})", outcome.finding, outcome.pc,
                              linuxk::sourceLine(guest, outcome.pc));
  else
    closePrevious();
  for (const std::string &w : outcome.warnings)
    if (out.failure.empty())
      out.failure = w;
  return out;
}

std::string_view conformanceChangeLabel(ConformanceChange c) {
  switch (c) {
  case ConformanceChange::NopToCall:
    return "nop-to-call";
  case ConformanceChange::CallToNop:
    return "call-to-nop";
  case ConformanceChange::CallToCall:
    return "call-to-call";
  case ConformanceChange::NopToInt3:
    return "nop-to-int3";
  case ConformanceChange::NopToRet:
    return "nop-to-ret";
  }
  return "?";
}

std::string_view differenceKindName(DifferenceKind kind) {
  switch (kind) {
  case DifferenceKind::ArmedBefore:
    return "armed-before";
  case DifferenceKind::StoreTarget:
    return "store-target";
  case DifferenceKind::SyncOnlyInModel:
    return "sync-only-in-model";
  case DifferenceKind::SyncOnlyInTree:
    return "sync-only-in-tree";
  case DifferenceKind::StoreOnlyInModel:
    return "store-only-in-model";
  case DifferenceKind::StoreOnlyInTree:
    return "store-only-in-tree";
  case DifferenceKind::Armed:
    return "armed";
  case DifferenceKind::Emulation:
    return "emulation";
  case DifferenceKind::TreeFailed:
    return "tree-failed";
  }
  return "?";
}

std::optional<ConformanceDifference> firstDifference(const ConformanceTrace &model,
                                                     const ConformanceTrace &tree) {
  if (!tree.failure.empty())
    return ConformanceDifference{tree.steps.size(), DifferenceKind::TreeFailed,
                                 sideAt(model, tree.steps.size()), tree.failure};
  if (model.armedBefore != tree.armedBefore)
    return ConformanceDifference{0, DifferenceKind::ArmedBefore,
                                 "armed " + armedText(model.armedBefore),
                                 "armed " + armedText(tree.armedBefore)};
  if (model.resumeBefore != tree.resumeBefore)
    return ConformanceDifference{0, DifferenceKind::Emulation, resumeText(model.resumeBefore),
                                 resumeText(tree.resumeBefore)};
  using Kind = TraceStep::Kind;
  const std::size_t n = std::max(model.steps.size(), tree.steps.size());
  for (std::size_t i = 0; i < n; ++i) {
    const ConformanceStep *m = i < model.steps.size() ? &model.steps[i] : nullptr;
    const ConformanceStep *t = i < tree.steps.size() ? &tree.steps[i] : nullptr;
    DifferenceKind kind;
    if (!t)
      kind = m->kind == Kind::Sync ? DifferenceKind::SyncOnlyInModel
                                   : DifferenceKind::StoreOnlyInModel;
    else if (!m)
      kind =
          t->kind == Kind::Sync ? DifferenceKind::SyncOnlyInTree : DifferenceKind::StoreOnlyInTree;
    else if (m->kind != t->kind)
      kind =
          m->kind == Kind::Sync ? DifferenceKind::SyncOnlyInModel : DifferenceKind::SyncOnlyInTree;
    else if (m->addr != t->addr || m->bytes != t->bytes)
      kind = DifferenceKind::StoreTarget;
    else if (m->armed != t->armed)
      kind = DifferenceKind::Armed;
    else if (m->resume != t->resume)
      return ConformanceDifference{i, DifferenceKind::Emulation,
                                   sideAt(model, i) + ", " + resumeText(m->resume),
                                   sideAt(tree, i) + ", " + resumeText(t->resume)};
    else
      continue;
    return ConformanceDifference{i, kind, sideAt(model, i), sideAt(tree, i)};
  }
  return std::nullopt;
}

std::string describeStep(const ConformanceStep &step) {
  std::string out;
  if (step.kind == TraceStep::Kind::Sync)
    out = "sync";
  else {
    out = fmt::format("store {:#x}", step.addr);
    for (std::uint8_t b : step.bytes)
      out += fmt::format(" {:02x}", b);
  }
  return out + ", armed " + armedText(step.armed);
}

std::string describeSites(const std::vector<ConformanceSite> &sites) {
  std::string out;
  for (const ConformanceSite &s : sites)
    out += fmt::format("{}{}:{}", out.empty() ? "" : " ", s.function,
                       conformanceChangeLabel(s.change));
  return out;
}

std::size_t ConformanceReport::same() const {
  return static_cast<std::size_t>(std::count_if(
      batches.begin(), batches.end(), [](const ConformanceBatch &b) { return !b.difference; }));
}

std::map<DifferenceKind, std::size_t> ConformanceReport::kinds() const {
  std::map<DifferenceKind, std::size_t> out;
  for (const ConformanceBatch &b : batches)
    if (b.difference)
      ++out[b.difference->kind];
  return out;
}

std::vector<std::vector<std::pair<std::size_t, ConformanceChange>>>
randomConformanceBatches(std::size_t traced, const ConformanceOptions &options) {
  // mt19937_64's sequence is fixed by the standard; the distributions are not, so the draws are
  // plain remainders.
  std::mt19937_64 rng(options.seed);
  const std::size_t most = std::min(options.maxSites, traced);
  std::vector<std::vector<std::pair<std::size_t, ConformanceChange>>> out;
  for (std::size_t b = 0; b < options.batches; ++b) {
    std::vector<std::size_t> order(traced);
    for (std::size_t i = 0; i < traced; ++i)
      order[i] = i;
    for (std::size_t i = traced; i > 1; --i) // Fisher-Yates
      std::swap(order[i - 1], order[rng() % i]);
    const std::size_t n = 1 + rng() % most;
    std::vector<std::pair<std::size_t, ConformanceChange>> picks;
    for (std::size_t i = 0; i < n; ++i)
      picks.emplace_back(order[i], static_cast<ConformanceChange>(
                                       rng() % (options.allChanges ? kConformanceChanges : 3)));
    out.push_back(std::move(picks));
  }
  return out;
}

ConformanceBatch compareBatch(const linuxk::LinuxGuest &guest, sim::StoreModel store,
                              const std::vector<ConformanceSite> &sites) {
  ConformanceBatch out;
  out.sites = sites;
  const ConformanceTrace model = modelConformanceTrace(store, sites);
  const ConformanceTrace tree = treeConformanceTrace(guest, store, sites);
  out.modelSteps = model.steps.size();
  out.treeSteps = tree.steps.size();
  out.difference = firstDifference(model, tree);
  return out;
}

ConformanceReport runConformance(const linuxk::LinuxGuest &guest,
                                 const ConformanceOptions &options) {
  if (options.maxSites == 0 || options.maxSites > 16)
    fatal("conformance: batches of {} sites: 1 to 16 fit the guest's request table",
          options.maxSites);
  ConformanceReport report;
  for (const auto &picks : randomConformanceBatches(guest.image.mcountLocs.size(), options))
    report.batches.push_back(compareBatch(guest, options.store, conformanceSites(guest, picks)));
  return report;
}

} // namespace ftsim::verify
