// ppc-mflr-order on the machine (the ppc32 -fpatchable-function-entry site is two instructions,
// `mflr r0` then the call, and enabling them in the wrong order lets a task call with a stale r0).
// f is `mflr r0 | nop; bl ftrace_caller | nop; addi
// r3,r3,1; blr` (the -fpatchable-function-entry layout with the mflr nopped while disabled); its
// caller T enters it with r0 = 0x100, not its return address. T and a second task U (which only
// schedules voluntarily) share CPU 1; the patcher on CPU 0 enables or disables f's site through a
// two-instruction protocol. The schedule space that matters is exhausted: before each of the
// patcher's stores, CPU 1 runs 0..kMaxSteps instructions and then is or is not preempted (so T can
// be stopped between the two words while the patcher writes). A schedule is bad when T faults or
// returns anything but arg+1. The same runs go through the CMODX checker.

#include "ftsim/arch/Trampolines.h"
#include "ftsim/sim/FunctionScheduler.h"
#include "ftsim/sim/Machine.h"
#include "ppc32/Ppc32Cmodx.h"
#include "ppc32/Ppc32Code.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>

namespace ftsim::sim {
namespace {

namespace ppc = arch::ppc32;

constexpr std::uint64_t kText = 0xc0000000;
constexpr std::uint64_t kHcExit = kText, kHcSchedule = kText + 0x10;
constexpr std::uint64_t kT = kText + 0x40, kF = kText + 0x80, kU = kText + 0xc0;
constexpr std::uint64_t kSite = kF + 4; // after the mflr slot at kF
constexpr std::uint64_t kArg = 41;
constexpr unsigned kMaxSteps = 12;

struct Step {
  unsigned steps = 0;
  bool preempt = false;
};

struct Scenario {
  const arch::Arch &isa = arch::archByName("ppc32");
  std::unique_ptr<arch::FtraceTrampolines> tramps;
  std::unique_ptr<Machine> m;
  Snapshot start;
  arch::Bytes blCaller;

  explicit Scenario(bool enabled) {
    MachineConfig c;
    c.cpus = 2;
    m = std::make_unique<Machine>(isa, c);
    tramps = arch::makeFtraceTrampolines(isa, {0xbfff0000, arch::SiteFlavour::Mcount, 1});
    m->mapText(tramps->code().base, tramps->code().bytes);
    blCaller = isa.call(kSite, tramps->code().ftraceCaller).bytes;
    std::vector<std::uint8_t> text(0x100, 0);
    auto put = [&](std::uint64_t at, std::vector<std::uint32_t> words) {
      for (std::uint32_t w : words) {
        const arch::Bytes b = ppc::wordBytes(w);
        std::copy(b.begin(), b.end(), text.begin() + (at - kText));
        at += 4;
      }
    };
    auto bl = [&](std::uint64_t at, std::uint64_t to) {
      return ppc::wordOf(isa.call(at, to).bytes);
    };
    put(kHcExit, {0x7fe00008, 0x4e800020});
    put(kHcSchedule, {0x7fe00008, 0x4e800020});
    // T: stwu r1,-16(r1); mflr r0; stw r0,20(r1); li r0,0x100; bl f; lwz r0,20(r1); mtlr r0;
    //    addi r1,r1,16; blr
    put(kT, {0x9421fff0, 0x7c0802a6, 0x90010014, 0x38000100, bl(kT + 16, kF), 0x80010014,
             0x7c0803a6, 0x38210010, 0x4e800020});
    put(kF, {enabled ? ppc::kMflrR0 : ppc::kNop, enabled ? ppc::wordOf(blCaller) : ppc::kNop,
             0x38630001, 0x4e800020});
    // U: stwu; mflr r0; stw r0,20(r1); li r31,4; 1: bl schedule; addi r31,r31,-1; cmpwi r31,0;
    //    bne 1b; lwz r0,20(r1); mtlr r0; addi r1,r1,16; blr
    put(kU, {0x9421fff0, 0x7c0802a6, 0x90010014, 0x3be00004, bl(kU + 16, kHcSchedule), 0x3bffffff,
             0x2c1f0000, 0x4082fff4, 0x80010014, 0x7c0803a6, 0x38210010, 0x4e800020});
    m->mapText(kText, text);
    m->bindHypercall(GuestHypercall::Exit, kHcExit);
    m->bindHypercall(GuestHypercall::Schedule, kHcSchedule);
    m->addTask({"T", 1, kT, kArg});
    m->addTask({"U", 1, kU, 0});
    start = m->snapshot();
  }

  struct Result {
    bool bad = false;
    std::string what;
    std::vector<arch::CmodxViolation> cmodx;
  };

  Result run(const std::string &protocolName, bool enable, const std::vector<Step> &plan) {
    m->restore(start);
    std::vector<arch::CmodxViolation> violations;
    m->startPatcher([&](arch::MachinePort &port) {
      arch::CmodxCheckedPort checked(port);
      auto protocol = arch::makePatchProtocol(isa, protocolName);
      protocol->attach(checked);
      const arch::Bytes nop = ppc::wordBytes(ppc::kNop);
      protocol->queue({kSite, enable ? nop : blCaller, enable ? blCaller : nop});
      protocol->finish();
      violations = checked.violations();
    });
    std::size_t stores = 0;
    Step current = plan.empty() ? Step{} : plan[0];
    FunctionScheduler sched([&](const Machine &, const DecisionPoint &p) -> std::uint32_t {
      std::int64_t store = -1, step = -1, preempt = -1;
      for (std::uint32_t i = 0; i < p.events.size(); ++i) {
        const EventChoice &e = p.events[i];
        if (e.kind == EventKind::Ipi)
          return i; // IPIs at once: with the atomic fetch model their timing does not matter
        if (e.kind == EventKind::Store)
          store = i;
        else if (e.kind == EventKind::Step && e.cpu == 1)
          step = i;
        else if (e.kind == EventKind::Preempt && e.cpu == 1)
          preempt = i;
      }
      if (store >= 0) {
        if (current.steps > 0 && step >= 0) {
          --current.steps;
          return static_cast<std::uint32_t>(step);
        }
        if (current.preempt && preempt >= 0) {
          current.preempt = false;
          return static_cast<std::uint32_t>(preempt);
        }
        ++stores;
        current = stores < plan.size() ? plan[stores] : Step{};
        return static_cast<std::uint32_t>(store);
      }
      return step >= 0 ? static_cast<std::uint32_t>(step) : 0;
    });
    Result r;
    const RunResult rr = m->run(sched, 100000);
    r.cmodx = violations;
    if (rr.status != RunResult::Status::Completed || !m->findings().empty()) {
      r.bad = true;
      r.what = m->findings().empty() ? "did not complete" : formatFinding(m->findings()[0]);
    } else if (m->task(0).state != TaskState::Exited || m->task(0).result != kArg + 1) {
      r.bad = true;
      r.what = fmt::format("T returned {}", m->task(0).result);
    }
    return r;
  }
};

struct Exhaustive {
  std::size_t schedules = 0, bad = 0, cmodxFlagged = 0;
  std::string firstBad;
  std::set<unsigned> badFirstSteps; // CPU 1's steps before the first store, over bad plans
};

// Every plan of two stores: (steps, preempt) before each, steps in 0..kMaxSteps.
Exhaustive exhaust(Scenario &s, const std::string &protocol, bool enable) {
  Exhaustive out;
  for (unsigned a = 0; a <= kMaxSteps; ++a)
    for (bool pa : {false, true})
      for (unsigned b = 0; b <= kMaxSteps; ++b)
        for (bool pb : {false, true}) {
          const auto r = s.run(protocol, enable, {{a, pa}, {b, pb}});
          ++out.schedules;
          out.cmodxFlagged += r.cmodx.empty() ? 0 : 1;
          if (r.bad)
            out.badFirstSteps.insert(a);
          if (r.bad && out.bad++ == 0)
            out.firstBad = fmt::format("plan ({}{}, {}{}): {}", a, pa ? "+preempt" : "", b,
                                       pb ? "+preempt" : "", r.what);
        }
  return out;
}

TEST(Ppc32MflrOrder, EnablingInTheRightOrderWithAGracePeriodNeverCorruptsTheReturn) {
  Scenario s(false);
  const Exhaustive e = exhaust(s, "word-mflr", true);
  EXPECT_EQ(e.schedules, 676u);
  EXPECT_EQ(e.bad, 0u) << e.firstBad;
  EXPECT_EQ(e.cmodxFlagged, 0u);
}

TEST(Ppc32MflrOrder, EnablingBlBeforeMflrRunsBlWithAStaleR0) {
  Scenario s(false);
  const Exhaustive e = exhaust(s, "word-mflr-wrong-order", true);
  EXPECT_GT(e.bad, 0u);
  EXPECT_NE(e.firstBad.find("0x100"), std::string::npos) << e.firstBad; // returned to r0's value
  EXPECT_EQ(e.cmodxFlagged, e.schedules); // the trace itself is wrong, whatever the schedule
  std::cout << "word-mflr-wrong-order enable: " << e.bad << "/" << e.schedules
            << " schedules bad; first: " << e.firstBad << "\n";
}

// Only a task between the two words when the mflr is restored is hit: T's sixth instruction is
// f's first word (the old nop), so T is at the site exactly after 6 steps. Preempted there, or
// merely not yet at its next step when the bl follows the mflr without a grace period, it runs the
// bl with r0 = 0x100.
TEST(Ppc32MflrOrder, EnablingWithoutAGracePeriodFailsForATaskBetweenTheWords) {
  Scenario s(false);
  const Exhaustive e = exhaust(s, "word-mflr-no-grace", true);
  EXPECT_GT(e.bad, 0u);
  EXPECT_EQ(e.badFirstSteps, std::set<unsigned>{6}) << e.firstBad;
  EXPECT_EQ(e.cmodxFlagged, e.schedules);
  std::cout << "word-mflr-no-grace enable: " << e.bad << "/" << e.schedules
            << " schedules bad; first: " << e.firstBad << "\n";
}

TEST(Ppc32MflrOrder, DisablingNopsTheBlFirst) {
  Scenario s(true);
  const Exhaustive right = exhaust(s, "word-mflr", false);
  EXPECT_EQ(right.bad, 0u) << right.firstBad;
  EXPECT_EQ(right.cmodxFlagged, 0u);
  const Exhaustive wrong = exhaust(s, "word-mflr-wrong-order", false);
  EXPECT_GT(wrong.bad, 0u);
  EXPECT_EQ(wrong.cmodxFlagged, wrong.schedules);
  // Disabling needs the order, not the grace period: after the bl's nop reached every CPU, no
  // task can execute the bl, whatever r0 holds.
  const Exhaustive noGrace = exhaust(s, "word-mflr-no-grace", false);
  EXPECT_EQ(noGrace.bad, 0u) << noGrace.firstBad;
  EXPECT_EQ(noGrace.cmodxFlagged, 0u);
  std::cout << "word-mflr-wrong-order disable: " << wrong.bad << "/" << wrong.schedules
            << " schedules bad; first: " << wrong.firstBad << "\n";
}

} // namespace
} // namespace ftsim::sim
