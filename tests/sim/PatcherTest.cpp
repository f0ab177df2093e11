// The patcher as a coroutine on the caller's thread: what its body sees (its thread, its stack,
// its own exception handling) and what the caller sees (the body's exceptions out of run(), a
// parked body unwound by restore() or by the machine's end, its objects destroyed).

#include "X86Scenario.h"

#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ftsim/sim/RoundRobinScheduler.h"

#include "ftsim/arch/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

namespace ftsim::sim {
namespace {

using test::X86Scenario;

const arch::Arch &x86() { return arch::archByName("x86_64"); }

MachineConfig twoCpus() {
  MachineConfig c;
  c.cpus = 2;
  c.storeModel = StoreModel::Line; // one store per writeText
  return c;
}

// Counts its destructions: a parked body's objects must be destroyed when it is unwound.
struct Counted {
  int *destroyed;
  ~Counted() { ++*destroyed; }
};

// Picks the patcher's event (Store/Publish) whenever it is enabled.
FunctionScheduler patcherFirst() {
  return FunctionScheduler([](const Machine &, const DecisionPoint &p) -> std::uint32_t {
    for (std::uint32_t i = 0; i < p.options && p.kind == DecisionKind::Event; ++i)
      if (p.events[i].kind == EventKind::Store || p.events[i].kind == EventKind::Publish)
        return i;
    return 0;
  });
}

arch::Bytes siteBytes(Machine &m, const X86Scenario &s) {
  arch::Bytes now(5);
  m.readText(s.site, now);
  return now;
}

TEST(Patcher, TheBodyRunsOnTheCallersThread) {
  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  std::thread::id bodyThread;
  m.startPatcher([&](arch::MachinePort &port) {
    bodyThread = std::this_thread::get_id();
    port.writeText(s.site, X86Scenario::call());
  });
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_EQ(bodyThread, std::this_thread::get_id());
  EXPECT_EQ(siteBytes(m, s), X86Scenario::call());
}

// Recursion that touches `depth` frames of 4 KiB each; returns a checksum of them.
[[gnu::noinline]] unsigned deepStack(unsigned depth) {
  volatile unsigned char frame[4096];
  std::memset(const_cast<unsigned char *>(frame), static_cast<int>(depth), sizeof frame);
  if (depth == 0)
    return frame[0];
  return deepStack(depth - 1) + frame[depth % sizeof frame];
}

TEST(Patcher, TheBodyHasAThreadSizedStackOnEveryExecution) {
  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  const Snapshot start = m.snapshot();
  for (int execution = 0; execution < 3; ++execution) {
    m.restore(start);
    unsigned sum = 0;
    m.startPatcher([&](arch::MachinePort &port) {
      sum = deepStack(512); // 2 MiB of frames
      port.writeText(s.site, X86Scenario::call());
    });
    RoundRobinScheduler rr;
    EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
    EXPECT_EQ(sum, deepStack(512));
  }
}

TEST(Patcher, AnExceptionOfTheBodyComesOutOfStartOrRun) {
  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  const Snapshot start = m.snapshot();
  // Before its first visible action: out of startPatcher.
  EXPECT_THROW(m.startPatcher([](arch::MachinePort &) { throw FatalError("no site to patch"); }),
               FatalError);
  EXPECT_FALSE(m.patcherActive());
  // After a store: out of the run that resumed it.
  m.startPatcher([&](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    throw std::out_of_range("the body's own error");
  });
  RoundRobinScheduler rr;
  try {
    m.run(rr);
    ADD_FAILURE() << "run() returned";
  } catch (const std::out_of_range &e) {
    EXPECT_STREQ(e.what(), "the body's own error");
  }
  EXPECT_FALSE(m.patcherActive());
  // The machine goes on with a new patcher.
  m.restore(start);
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(s.site, X86Scenario::call()); });
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_EQ(siteBytes(m, s), X86Scenario::call());
}

TEST(Patcher, RestoreUnwindsAParkedBody) {
  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  const Snapshot start = m.snapshot();
  int destroyed = 0;
  bool pastTheStore = false;
  m.startPatcher([&](arch::MachinePort &port) {
    Counted c{&destroyed};
    port.writeText(s.site, X86Scenario::call());
    pastTheStore = true;
  });
  EXPECT_EQ(m.patcherState(), PatcherState::Store);
  EXPECT_EQ(destroyed, 0);
  m.restore(start);
  EXPECT_EQ(destroyed, 1);
  EXPECT_FALSE(pastTheStore);
  EXPECT_FALSE(m.patcherActive());
  EXPECT_EQ(siteBytes(m, s), X86Scenario::nop());
  m.startPatcher([&](arch::MachinePort &port) { port.writeText(s.site, X86Scenario::call()); });
  RoundRobinScheduler rr;
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_EQ(siteBytes(m, s), X86Scenario::call());
}

TEST(Patcher, TheMachinesEndUnwindsAParkedBody) {
  int destroyed = 0;
  {
    X86Scenario s(4);
    Machine m(x86(), twoCpus());
    s.install(m, {1});
    m.startPatcher([&](arch::MachinePort &port) {
      Counted c{&destroyed};
      port.syncCores(); // waits for CPU 1's IPI: nothing runs, so it stays parked
      ADD_FAILURE() << "the body went past its wait";
    });
    EXPECT_EQ(m.patcherState(), PatcherState::WaitIpis);
  }
  EXPECT_EQ(destroyed, 1);
}

// The body and its caller each have their own caught exceptions, as two threads do: here the body
// enters a handler while the caller is inside one of its own, the caller leaves its handler while
// the body is parked in its, and the body's `throw;` still rethrows the body's exception.
TEST(Patcher, TheBodysExceptionHandlingIsItsOwn) {
  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  m.startPatcher([&](arch::MachinePort &port) {
    port.writeText(s.site, X86Scenario::call());
    try {
      throw std::out_of_range("the body's error");
    } catch (const std::out_of_range &) {
      port.publish("inside the body's handler", [] {});
      throw;
    }
  });
  FunctionScheduler sched = patcherFirst();
  try {
    throw std::invalid_argument("the caller's error");
  } catch (const std::invalid_argument &) {
    EXPECT_EQ(m.run(sched, 1).events, 1u); // the store: the body then parks in its handler
    EXPECT_EQ(m.patcherState(), PatcherState::Publish);
  }
  EXPECT_EQ(std::current_exception(), nullptr);
  try {
    m.run(sched);
    ADD_FAILURE() << "run() returned";
  } catch (const std::out_of_range &e) {
    EXPECT_STREQ(e.what(), "the body's error");
  }
}

} // namespace
} // namespace ftsim::sim

namespace ftsim::sim {
namespace {

// A patcher polling with publishWhile() (the machine asks `again` where the patcher would have
// been resumed) gives the events of a loop of publish() calls asking the same, at most `most`
// publications; restored while parked there, the machine is as good as new.
TEST(Patcher, PollingWhileGivesTheEventsOfALoopOfPublications) {
  // Polls until CPU 1 has stepped `steps` times since the poll began, at most `most` times.
  auto poll = [](Machine &m, arch::MachinePort &port, bool loop, int steps, std::uint64_t most) {
    const std::uint64_t begin = m.events().size();
    auto done = [&] {
      int seen = 0;
      for (const EventRecord &e : m.events().subspan(begin))
        seen += e.kind == EventKind::Step && e.cpu == 1;
      return seen >= steps;
    };
    if (done())
      return;
    if (!loop) {
      m.publishWhile(
          "poll", [] {}, [&] { return !done(); }, most);
      return;
    }
    for (std::uint64_t i = 0; i < most; ++i) {
      port.publish("poll", [] {});
      if (done())
        return;
    }
  };
  for (const auto &bounds :
       {std::pair{7, std::uint64_t{1000}}, std::pair{1000, std::uint64_t{5}}}) {
    // Named copies: clang before 16 rejects a lambda's capture of a structured binding.
    const int steps = bounds.first;
    const std::uint64_t most = bounds.second;
    std::string logs[2];
    for (bool loop : {true, false}) {
      X86Scenario s(4);
      Machine m(x86(), twoCpus());
      s.install(m, {1});
      m.startPatcher([&](arch::MachinePort &port) {
        port.publish("before", [] {});
        poll(m, port, loop, steps, most);
        port.writeText(s.site, X86Scenario::call());
      });
      RoundRobinScheduler rr;
      EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
      logs[loop] = m.logText();
      std::size_t polls = 0;
      for (std::size_t at = logs[loop].find("poll"); at != std::string::npos;
           at = logs[loop].find("poll", at + 1))
        ++polls;
      if (most == 5)
        EXPECT_EQ(polls, 5u) << "the bound of publications";
      else
        EXPECT_GT(polls, 1u);
    }
    EXPECT_EQ(logs[0], logs[1]);
  }

  X86Scenario s(4);
  Machine m(x86(), twoCpus());
  s.install(m, {1});
  const Snapshot start = m.snapshot();
  int destroyed = 0;
  m.startPatcher([&](arch::MachinePort &) {
    Counted c{&destroyed};
    m.publishWhile(
        "poll", [] {}, [] { return true; }, 1000);
  });
  RoundRobinScheduler rr;
  m.run(rr, 20);
  EXPECT_EQ(m.patcherState(), PatcherState::Publish);
  m.restore(start);
  EXPECT_EQ(destroyed, 1);
  m.startPatcher([&](arch::MachinePort &port) {
    port.publish("after", [] {});
    port.writeText(s.site, X86Scenario::call());
  });
  EXPECT_EQ(m.run(rr).status, RunResult::Status::Completed);
  EXPECT_EQ(siteBytes(m, s), X86Scenario::call());
}

} // namespace
} // namespace ftsim::sim
