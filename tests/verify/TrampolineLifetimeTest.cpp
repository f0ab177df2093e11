// The trampoline-lifetime scenarios explored over schedules on every guest flavour with per-ops
// dynamic trampolines: tramp-free-preempted (a task preempted inside the dynamic trampoline resumes
// in freed memory unless the free waits for an RCU-tasks grace period) and ops-uaf-no-sync
// (0e792b89e680: unregistering the second of two identical dynamic ops changes no code; without
// the synchronisation its owner frees it under a walking list function).

#include "KernelFixture.h"

#include "ftsim/verify/TrampolineScenario.h"

#include <gtest/gtest.h>

#include <iostream>

namespace ftsim::verify {
namespace {

using testing::guestImagePath;

struct Flavour {
  const char *image;
  // Lower bounds on the executions of the complete explorations: every decision of the
  // round-robin schedule where another event could run instead was tried.
  std::size_t rcuTasksExecutions;
  std::size_t noPreemptionExecutions;
};

std::ostream &operator<<(std::ostream &os, const Flavour &f) { return os << f.image; }

class TrampolineLifetimeScenario : public ::testing::TestWithParam<Flavour> {
protected:
  TrampolineCheckOptions scenario(model::TrampolineFree free, bool preempt) const {
    TrampolineCheckOptions o;
    o.imagePath = guestImagePath(GetParam().image);
    o.free.free = free;
    o.preempt = preempt;
    return o;
  }
};

TEST_P(TrampolineLifetimeScenario, ImmediateFreeIsFound) {
  FTSIM_REQUIRE_IMAGE(GetParam().image);
  // Not even a preemption is needed: a task still running on the trampoline on another CPU
  // fetches the poison right after the free.
  const auto o = scenario(model::TrampolineFree::Immediate, true);
  const TrampolineCheckResult r = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, r);
  ASSERT_TRUE(r.violation) << formatTrampolineCheck(o, r);
  EXPECT_NE(r.violation->find("trampoline-lifetime"), std::string::npos) << *r.violation;
  EXPECT_NE(r.violation->find("ftrace_trampoline"), std::string::npos) << *r.violation;
  EXPECT_NE(r.timeline.find("freeText"), std::string::npos) << r.timeline;
  ::testing::Test::RecordProperty("executions", static_cast<int>(r.executions));
}

TEST_P(TrampolineLifetimeScenario, SchedSyncWithPreemptionIsFound) {
  FTSIM_REQUIRE_IMAGE(GetParam().image);
  const auto o = scenario(model::TrampolineFree::SchedSync, true);
  const TrampolineCheckResult r = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, r);
  ASSERT_TRUE(r.violation) << formatTrampolineCheck(o, r);
  EXPECT_NE(r.violation->find("trampoline-lifetime"), std::string::npos) << *r.violation;
  EXPECT_NE(r.timeline.find("timer preempts the task at ftrace_trampoline"), std::string::npos)
      << r.timeline;
  EXPECT_NE(r.timeline.find("freeText"), std::string::npos) << r.timeline;
  ::testing::Test::RecordProperty("executions", static_cast<int>(r.executions));
}

TEST_P(TrampolineLifetimeScenario, RcuTasksVerifiesWithinOnePreemption) {
  FTSIM_REQUIRE_IMAGE(GetParam().image);
  const auto o = scenario(model::TrampolineFree::RcuTasks, true);
  const TrampolineCheckResult r = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, r);
  EXPECT_FALSE(r.violation) << formatTrampolineCheck(o, r);
  EXPECT_TRUE(r.complete);
  EXPECT_GT(r.executions, GetParam().rcuTasksExecutions);
  ::testing::Test::RecordProperty("executions", static_cast<int>(r.executions));
}

TEST_P(TrampolineLifetimeScenario, SchedSyncWithoutPreemptionVerifies) {
  FTSIM_REQUIRE_IMAGE(GetParam().image);
  const auto o = scenario(model::TrampolineFree::SchedSync, false);
  const TrampolineCheckResult r = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, r);
  EXPECT_FALSE(r.violation) << formatTrampolineCheck(o, r);
  EXPECT_TRUE(r.complete);
  EXPECT_GT(r.executions, GetParam().noPreemptionExecutions);
  ::testing::Test::RecordProperty("executions", static_cast<int>(r.executions));
}

TEST_P(TrampolineLifetimeScenario, OpsUafNoSyncIsFoundAndTheFixVerifies) {
  FTSIM_REQUIRE_IMAGE(GetParam().image);
  auto o = scenario(model::TrampolineFree::RcuTasks, true);
  o.scenario = TrampolineScenarioKind::OpsUafNoSync;
  o.free.syncWhenUnchanged = false;
  const TrampolineCheckResult buggy = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, buggy);
  ASSERT_TRUE(buggy.violation) << formatTrampolineCheck(o, buggy);
  EXPECT_NE(buggy.violation->find("ops-use-after-free"), std::string::npos) << *buggy.violation;
  EXPECT_NE(buggy.violation->find("dynamic_ops1"), std::string::npos) << *buggy.violation;

  o.free.syncWhenUnchanged = true;
  const TrampolineCheckResult fixed = checkTrampolineScenario(o);
  std::cout << formatTrampolineCheck(o, fixed);
  EXPECT_FALSE(fixed.violation) << formatTrampolineCheck(o, fixed);
  EXPECT_TRUE(fixed.complete);
}

INSTANTIATE_TEST_SUITE_P(Flavours, TrampolineLifetimeScenario,
                         ::testing::Values(Flavour{"x86_64-fentry", 100, 50},
                                           Flavour{"ppc32-mcount", 50, 20}),
                         [](const ::testing::TestParamInfo<Flavour> &p) {
                           return testing::flavourName({p.param.image, p.index});
                         });

} // namespace
} // namespace ftsim::verify
