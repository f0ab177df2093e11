// Source-DPOR's happens-before relation and races (verify/src/explore/HappensBefore.h) against
// their definitions computed the slow way: every pair of events tested, on random logs of events
// of three CPUs and the patcher whose footprints overlap often.

#include "explore/HappensBefore.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

using ftsim::sim::EventKind;
using ftsim::sim::EventRecord;
using ftsim::sim::StepOutcome;
using ftsim::verify::detail::dependent;
using ftsim::verify::detail::HappensBefore;

// One event from 32 random bits: its kind, CPU, outcome and footprints (fetched, stored and
// watched bytes in a few overlapping places). 0 is a plain step of CPU 0.
EventRecord eventOf(std::uint32_t bits, std::size_t index) {
  static constexpr EventKind kinds[] = {EventKind::Step,  EventKind::Step,    EventKind::FetchLine,
                                        EventKind::Ipi,   EventKind::Preempt, EventKind::Irq,
                                        EventKind::Store, EventKind::Publish};
  static constexpr StepOutcome outcomes[] = {StepOutcome::None,        StepOutcome::None,
                                             StepOutcome::TrapHandled, StepOutcome::Serialised,
                                             StepOutcome::UserEnter,   StepOutcome::KernelEntry,
                                             StepOutcome::Hypercall,   StepOutcome::WatchedStop};
  EventRecord e;
  e.index = index;
  e.kind = kinds[bits % 8];
  e.cpu = static_cast<std::uint8_t>((bits >> 3) % 3);
  e.outcome = outcomes[(bits >> 5) % 8];
  if ((bits >> 8) & 1u) {
    e.fetchAddr = 0x100 + (bits >> 9) % 8;
    e.fetchSize = 5;
  }
  if (e.kind == EventKind::Store) {
    e.storeAddr = 0x100 + (bits >> 12) % 8;
    e.storeSize = 1;
  }
  if ((bits >> 15) & 1u) {
    e.dataAddr = 0x200 + 4 * ((bits >> 16) % 2);
    e.dataSize = 4;
    e.dataWrite = (bits >> 17) & 1u;
  }
  e.sharedRead = ((bits >> 18) % 4) == 0;
  e.regionChange = ((bits >> 20) % 4) == 0;
  return e;
}

std::vector<EventRecord> logOf(const std::vector<std::uint32_t> &bits) {
  std::vector<EventRecord> log;
  for (std::uint32_t b : bits)
    log.push_back(eventOf(b, log.size()));
  return log;
}

// The definitions: i happens before j when a chain of dependent events leads from i to j in log
// order; (i, j) is a race of j's when j depends on i and on no event that i happens before.
struct Reference {
  std::vector<std::vector<bool>> hb;           // hb[j][i]
  std::vector<std::vector<std::size_t>> races; // races[j]: the i, in log order
  explicit Reference(const std::vector<EventRecord> &log) {
    const std::size_t n = log.size();
    std::vector<std::vector<bool>> dep(n, std::vector<bool>(n, false));
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < j; ++i)
        dep[j][i] = dependent(log[i], log[j]);
    hb.assign(n, std::vector<bool>(n, false));
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < j; ++i)
        for (std::size_t k = i; k < j && !hb[j][i]; ++k) // i = k, or a chain from i to k
          hb[j][i] = dep[j][k] && (k == i || hb[k][i]);
    races.assign(n, {});
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < j; ++i) {
        bool ordered = false;
        for (std::size_t k = i + 1; k < j && !ordered; ++k)
          ordered = dep[j][k] && hb[k][i];
        if (dep[j][i] && !ordered)
          races[j].push_back(i);
      }
  }
};

// Extends `hb` over `log` from `kept` and checks every row from there and every race against the
// reference.
void expectMatches(HappensBefore &hb, const std::vector<EventRecord> &log, std::size_t kept) {
  std::vector<std::vector<std::size_t>> races(log.size());
  hb.extend(log, kept, [&](std::size_t i, std::size_t j) { races[j].push_back(i); });
  const Reference ref(log);
  for (std::size_t j = 0; j < log.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i)
      RC_ASSERT(hb.has(j, i) == ref.hb[j][i]);
    if (j >= kept)
      RC_ASSERT(races[j] == ref.races[j]);
    else
      RC_ASSERT(races[j].empty());
  }
}

RC_GTEST_PROP(HappensBefore, RowsAndRacesAreTheirDefinitions, (std::vector<std::uint32_t> bits)) {
  const std::vector<EventRecord> log = logOf(bits);
  HappensBefore hb;
  expectMatches(hb, log, 0);
}

RC_GTEST_PROP(HappensBefore, AKeptPrefixGivesTheRowsAndRacesOfAFreshOne,
              (std::vector<std::uint32_t> first, std::vector<std::uint32_t> suffix)) {
  // A search's next execution repeats the last one up to where it branches, then differs; its
  // log may be longer by more than a row's word (the rows widen).
  const std::size_t kept = *rc::gen::inRange<std::size_t>(0, first.size() + 1);
  HappensBefore hb;
  hb.extend(logOf(first), 0, [](std::size_t, std::size_t) {});
  std::vector<std::uint32_t> next(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(kept));
  next.insert(next.end(), suffix.begin(), suffix.end());
  expectMatches(hb, logOf(next), kept);
}

TEST(HappensBefore, ALongRunOfOneCpuRacesOnlyInProgramOrderAndWithTheStoreIntoItsFetch) {
  // 200 plain steps of CPU 0 (program order: each happens before the next), the last fetching a
  // site, then the patcher's store into it: the store's only race is that fetch; everything
  // before happens before it.
  std::vector<EventRecord> log;
  for (std::size_t i = 0; i < 200; ++i)
    log.push_back(eventOf(0, i));
  log.back().fetchAddr = 0x100;
  log.back().fetchSize = 5;
  EventRecord store = eventOf(6, 200); // a Store
  store.storeAddr = 0x101;
  store.storeSize = 1;
  log.push_back(store);
  std::vector<std::pair<std::size_t, std::size_t>> races;
  HappensBefore hb;
  hb.extend(log, 0, [&](std::size_t i, std::size_t j) { races.emplace_back(i, j); });
  std::vector<std::pair<std::size_t, std::size_t>> expected;
  for (std::size_t j = 1; j < 200; ++j)
    expected.emplace_back(j - 1, j); // program order: each step's one maximal predecessor
  expected.emplace_back(199, 200);
  EXPECT_EQ(races, expected);
  for (std::size_t i = 0; i < 200; ++i)
    EXPECT_TRUE(hb.has(200, i)) << i;
  EXPECT_FALSE(hb.has(5, 7));
}

} // namespace
