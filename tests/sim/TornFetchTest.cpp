// The slide's crash ("Modifying code at runtime": CPU 1 fetches 0f 1f 2e 00 00 while CPU 0 turns
// the nop at schedule+4 into `call ftrace_caller`), reproduced mechanically under each model.

#include "X86Scenario.h"

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/ReplayScheduler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

namespace ftsim::sim {
namespace {

using test::X86Scenario;

const arch::Arch &x86() { return arch::archByName("x86_64"); }

int indexOf(const DecisionPoint &p, EventKind kind, unsigned cpu) {
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (p.events[i].kind == kind && p.events[i].cpu == cpu)
      return static_cast<int>(i);
  return -1;
}

int patcherIndex(const DecisionPoint &p) {
  for (std::uint32_t i = 0; i < p.options; ++i)
    if (p.events[i].kind == EventKind::Store || p.events[i].kind == EventKind::Publish)
      return static_cast<int>(i);
  return -1;
}

// CPU 1 runs up to the site; the patcher makes `storesBefore` stores; CPU 1 fetches the site (its
// first line only, under the line model, when `splitFetch`: then the rest of the stores run
// before the second half); then the patcher finishes and CPU 1 runs on.
FunctionScheduler fetchAfterStores(std::uint64_t site, std::uint64_t storesBefore,
                                   bool splitFetch = false) {
  auto fetched = std::make_shared<bool>(false);
  return FunctionScheduler([=](const Machine &m, const DecisionPoint &p) -> std::uint32_t {
    if (p.kind == DecisionKind::StaleByte)
      return 0;
    int step = indexOf(p, EventKind::Step, 1);
    int fetchLine = indexOf(p, EventKind::FetchLine, 1);
    int patch = patcherIndex(p);
    if (!*fetched && m.pc(1) == site) {
      if (splitFetch && fetchLine >= 0)
        return fetchLine; // CPU 1 reads the site's first line now...
      if (m.storesDone() < storesBefore && patch >= 0)
        return patch;
      if (step >= 0) {
        *fetched = true; // ...and the rest (or all of it) now.
        return step;
      }
    }
    if (!*fetched && m.pc(1) != site && std::max(step, fetchLine) >= 0)
      return std::max(step, fetchLine);
    if (patch >= 0)
      return patch;
    int ipi = indexOf(p, EventKind::Ipi, 1);
    return static_cast<std::uint32_t>(ipi >= 0 ? ipi : std::max(step, 0));
  });
}

const EventRecord *siteFetch(const Machine &m, std::uint64_t site) {
  for (const EventRecord &e : m.events())
    if (e.fetchSize && e.fetchAddr == site && e.pc == site)
      return &e;
  return nullptr;
}

arch::Bytes fetchedBytes(const EventRecord &e) {
  return arch::Bytes(e.bytes, e.bytes + e.byteCount);
}

const Finding *findingOf(const Machine &m, FindingKind kind) {
  for (const Finding &f : m.findings())
    if (f.kind == kind)
      return &f;
  return nullptr;
}

// The slide's torn state: bytes 0-1 still the nop's, bytes 2-4 already the call's.
void expectSlideCrash(const Machine &m, const X86Scenario &s) {
  const EventRecord *fetch = siteFetch(m, s.site);
  ASSERT_NE(fetch, nullptr);
  EXPECT_EQ(fetchedBytes(*fetch), (arch::Bytes{0x0f, 0x1f, 0x2e, 0x00, 0x00}));
  const Finding *torn = findingOf(m, FindingKind::TornFetch);
  ASSERT_NE(torn, nullptr);
  EXPECT_EQ(torn->addr, s.site);
  EXPECT_EQ(torn->decoded, "nopl (%rsi); addb %al, (%rax)");
  const Finding *fault = findingOf(m, FindingKind::GuestFault);
  ASSERT_NE(fault, nullptr);
  EXPECT_EQ(fault->cpu, 1u);
  EXPECT_EQ(fault->task, 0);
  EXPECT_EQ(fault->pc, s.site + 3); // the `00 00` after the 3-byte nopl
  EXPECT_EQ(fault->bytes, (arch::Bytes{0x00, 0x00}));
  EXPECT_EQ(fault->decoded, "addb %al, (%rax)");
  EXPECT_EQ(fault->message, "read of unmapped memory at 0x3");
  EXPECT_EQ(m.task(0).state, TaskState::Faulted);
}

MachineConfig config(StoreModel store, const FetchModel *fetch) {
  MachineConfig c;
  c.cpus = 2;
  c.storeModel = store;
  c.fetchModel = fetch;
  return c;
}

// Two writes, in the order given, as the engine would issue them.
std::function<void(arch::MachinePort &)> twoWrites(std::uint64_t site, bool tailFirst) {
  return [=](arch::MachinePort &port) {
    auto call = X86Scenario::call();
    std::span<const std::uint8_t> head(call.data(), 2), tail(call.data() + 2, 3);
    if (tailFirst) {
      ASSERT_TRUE(port.writeText(site + 2, tail));
      ASSERT_TRUE(port.writeText(site, head));
    } else {
      ASSERT_TRUE(port.writeText(site, head));
      ASSERT_TRUE(port.writeText(site + 2, tail));
    }
  };
}

TEST(TornFetch, ByteStoresTailFirstFetchBetweenGivesTheSlideCrash) {
  X86Scenario s(4);
  Machine m(x86(), config(StoreModel::Byte, &fetchModelByName("atomic")));
  s.install(m, {1});
  m.startPatcher(twoWrites(s.site, /*tailFirst=*/true));
  auto sched = fetchAfterStores(s.site, 3); // bytes 2-4 are three byte stores
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed);
  expectSlideCrash(m, s);
}

TEST(TornFetch, ByteStoresHeadFirstFetchBetweenCallsABogusTarget) {
  // Bytes 0-1 then 2-4 with an atomic fetch between them: the other torn state, e8 37 44 00 00,
  // a call 0x4437 bytes past the site, beyond the end of text.
  X86Scenario s(4);
  Machine m(x86(), config(StoreModel::Byte, &fetchModelByName("atomic")));
  s.install(m, {1});
  m.startPatcher(twoWrites(s.site, /*tailFirst=*/false));
  auto sched = fetchAfterStores(s.site, 2);
  m.run(sched);
  const EventRecord *fetch = siteFetch(m, s.site);
  ASSERT_NE(fetch, nullptr);
  EXPECT_EQ(fetchedBytes(*fetch), (arch::Bytes{0xe8, 0x37, 0x44, 0x00, 0x00}));
  const Finding *torn = findingOf(m, FindingKind::TornFetch);
  ASSERT_NE(torn, nullptr);
  EXPECT_EQ(torn->decoded, fmt::format("callq {:#x}", s.site + 5 + 0x4437));
  const Finding *fault = findingOf(m, FindingKind::GuestFault);
  ASSERT_NE(fault, nullptr);
  EXPECT_EQ(fault->pc, s.site + 5 + 0x4437);
  EXPECT_EQ(fault->message, fmt::format("fetch from unmapped memory at {:#x}", fault->pc));
}

TEST(TornFetch, FetchAfterBothWritesRunsTheCallAndFinishes) {
  X86Scenario s(4);
  Machine m(x86(), config(StoreModel::Byte, &fetchModelByName("atomic")));
  s.install(m, {1});
  m.startPatcher(twoWrites(s.site, true));
  auto sched = fetchAfterStores(s.site, 5);
  EXPECT_EQ(m.run(sched).status, RunResult::Status::Completed);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(fetchedBytes(*siteFetch(m, s.site)), X86Scenario::call());
  EXPECT_EQ(m.task(0).state, TaskState::Exited);
  EXPECT_EQ(m.task(0).result, X86Scenario::expectedResult(0));
}

TEST(TornFetch, LineFetchOfASiteStraddlingTwoLines) {
  // Site at offset 62: bytes 0-1 in one line, 2-4 in the next. One write, which the line store
  // model splits at the line boundary into the two stores of the slide (bytes 0-1, then 2-4).
  // CPU 1 reads the first line, both stores land, then it reads the second line.
  X86Scenario s(62);
  ASSERT_EQ(s.site % 64, 62u);
  Machine m(x86(), config(StoreModel::Line, &fetchModelByName("line")));
  s.install(m, {1});
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(s.site, X86Scenario::call()); });
  auto sched = fetchAfterStores(s.site, 2, /*splitFetch=*/true);
  m.run(sched);
  auto events = m.events();
  ASSERT_TRUE(std::any_of(events.begin(), events.end(), [&](const EventRecord &e) {
    return e.kind == EventKind::FetchLine && e.pc == s.site;
  }));
  expectSlideCrash(m, s);
}

TEST(TornFetch, LineFetchOfASiteInsideOneLineCannotTear) {
  // Same schedule policy, site at offset 8: no split fetch is offered, so CPU 1 sees either
  // state whole.
  X86Scenario s(8);
  Machine m(x86(), config(StoreModel::Line, &fetchModelByName("line")));
  s.install(m, {1});
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(s.site, X86Scenario::call()); });
  auto sched = fetchAfterStores(s.site, 0, /*splitFetch=*/true);
  m.run(sched);
  EXPECT_TRUE(m.findings().empty()) << m.logText();
  EXPECT_EQ(fetchedBytes(*siteFetch(m, s.site)), X86Scenario::nop());
  EXPECT_EQ(m.task(0).result, X86Scenario::expectedResult(0));
}

// Stale model: every way CPU 1 may see the site after the patcher has finished (the patcher runs
// first; every stale-byte choice is enumerated depth-first, re-running from a snapshot).
struct StaleOutcomes {
  unsigned executions = 0;
  unsigned torn = 0;
  unsigned staleDecisions = 0;
  std::vector<arch::Bytes> fetched;
  std::set<std::pair<std::uint64_t, std::uint32_t>> offered; // each stale choice: byte, values
};

StaleOutcomes exploreStale(bool withSync) {
  X86Scenario s(4);
  Machine m(x86(), config(StoreModel::Byte, &fetchModelByName("stale")));
  s.install(m, {1});
  Snapshot start = m.snapshot();
  FunctionScheduler patcherFirst([](const Machine &, const DecisionPoint &p) -> std::uint32_t {
    if (p.kind == DecisionKind::StaleByte)
      return 0;
    for (std::uint32_t i = 0; i < p.options; ++i)
      if (p.events[i].kind == EventKind::Store || p.events[i].kind == EventKind::Ipi)
        return i;
    return 0;
  });
  StaleOutcomes out;
  std::vector<std::uint32_t> prefix;
  while (true) {
    m.restore(start);
    m.startPatcher([&](arch::MachinePort &port) {
      port.writeText(s.site, X86Scenario::call());
      if (withSync)
        port.syncCores();
    });
    ReplayScheduler replay(prefix, &patcherFirst);
    FunctionScheduler recording([&](const Machine &machine, const DecisionPoint &p) {
      if (p.kind == DecisionKind::StaleByte)
        out.offered.emplace(p.addr - s.site, p.options);
      return replay.decide(machine, p);
    });
    // Run up to CPU 1's first fetch of the site: the choices after it are another question.
    while (!siteFetch(m, s.site) && m.run(recording, 1).events == 1) {
    }
    ++out.executions;
    if (findingOf(m, FindingKind::TornFetch))
      ++out.torn;
    if (const EventRecord *f = siteFetch(m, s.site))
      out.fetched.push_back(fetchedBytes(*f));
    // Next: bump the last stale-byte decision that has an unexplored option.
    auto sched = m.schedule();
    prefix = choicesOf(sched);
    while (!prefix.empty()) {
      const Decision &d = sched[prefix.size() - 1];
      if (d.kind == DecisionKind::StaleByte) {
        ++out.staleDecisions;
        if (d.choice + 1 < d.options) {
          ++prefix.back();
          break;
        }
      }
      prefix.pop_back();
    }
    if (prefix.empty())
      return out;
  }
}

TEST(TornFetch, StaleFetchWithoutSyncCanSeeTheSlideBytes) {
  StaleOutcomes o = exploreStale(false);
  // Only bytes 0-2 differ between the nop and the call (3-4 are 00 in both), and a byte stops
  // mattering once the bytes before it end the instruction: 0f 1f 44 (5-byte nopl), 0f 1f 2e
  // (3-byte nopl), 0f 37 (2-byte getsec), e8 with bytes 1-2 each old or new (4 calls) = 7.
  EXPECT_EQ(o.executions, 7u);
  std::sort(o.fetched.begin(), o.fetched.end());
  EXPECT_EQ(std::unique(o.fetched.begin(), o.fetched.end()), o.fetched.end());
  EXPECT_GT(o.torn, 0u);
  EXPECT_NE(
      std::find(o.fetched.begin(), o.fetched.end(), arch::Bytes{0x0f, 0x1f, 0x2e, 0x00, 0x00}),
      o.fetched.end());
}

TEST(TornFetch, StaleFetchIsOfferedOnlyTheBytesAStoreChanged) {
  // The byte stores write all five bytes of the call over the nop, but bytes 3-4 are 00 in both:
  // a store of the value a byte already holds leaves it nothing stale to choose from. Bytes 0-2
  // each offer the old value and the new one.
  StaleOutcomes o = exploreStale(false);
  const std::set<std::pair<std::uint64_t, std::uint32_t>> expected{{0, 2}, {1, 2}, {2, 2}};
  EXPECT_EQ(o.offered, expected);
}

TEST(TornFetch, StaleFetchAfterSyncCannotTear) {
  StaleOutcomes o = exploreStale(true);
  EXPECT_EQ(o.executions, 1u);
  EXPECT_EQ(o.staleDecisions, 0u);
  EXPECT_EQ(o.torn, 0u);
  ASSERT_EQ(o.fetched.size(), 1u);
  EXPECT_EQ(o.fetched[0], X86Scenario::call());
}

TEST(TornFetch, StaleSchedulerChoiceReproducesTheSlideCrash) {
  // One concrete stale schedule: CPU 1 fetches the oldest values of bytes 0-1, the newest of 2-4.
  X86Scenario s(4);
  Machine m(x86(), config(StoreModel::Word, &fetchModelByName("stale")));
  s.install(m, {1});
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(s.site, X86Scenario::call()); });
  FunctionScheduler sched([&](const Machine &, const DecisionPoint &p) -> std::uint32_t {
    if (p.kind == DecisionKind::StaleByte)
      return p.addr < s.site + 2 ? 0 : p.options - 1;
    int patch = patcherIndex(p);
    return static_cast<std::uint32_t>(patch >= 0 ? patch : 0);
  });
  m.run(sched);
  expectSlideCrash(m, s);
}

} // namespace
} // namespace ftsim::sim
