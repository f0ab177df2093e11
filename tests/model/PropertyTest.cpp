// Model-based property: any sequence of registrations, unregistrations and filter changes keeps
// every record's count and flags equal to what the registered ops' hashes imply, every call site
// holding exactly the bytes its flags describe, and ftrace_call pointing at the right function.
// After everything is unregistered, only the history flags remain and every site is a nop.

#include "FakeKernel.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace ftsim::model {
namespace {

using namespace RecordFlag;

const std::vector<std::string> kPatterns = {"schedule", "*lock*",   "sched*", "yield",
                                            "*_*",      "put_page", "[a-m]*"};

struct Step {
  int ops;     // which of the three ops
  int action;  // 0 toggle registration, 1 set filter, 2 set notrace, 3 clear filter
  int pattern; // index into kPatterns
};

void checkInvariants(FtraceCore &core, test::FakeKernel &kernel,
                     const std::vector<FtraceOps *> &all) {
  core.records().forEach([&](DynFtrace &rec) {
    std::uint32_t count = 0;
    bool regs = false;
    for (FtraceOps *ops : all)
      if (ops->has(OpsFlag::Enabled) && ops->funcHash.containsIp(rec.ip)) {
        ++count;
        regs |= ops->has(OpsFlag::SaveRegs);
      }
    RC_ASSERT(rec.count() == count);
    RC_ASSERT(rec.has(Enabled) == (count > 0));
    // REGS must be set whenever a live SAVE_REGS ops traces the function. It may stay set
    // longer: when a SAVE_REGS ops's filter moves away from a function another ops still
    // traces, __ftrace_hash_rec_update() asks test_rec_ops_needs_regs(), which still sees the
    // moving ops with its old hash on ftrace_ops_list, so Linux keeps REGS (the site keeps
    // calling ftrace_regs_caller; slower, not wrong).
    if (regs)
      RC_ASSERT(rec.has(Regs));
    if (!count)
      RC_ASSERT(!rec.has(Regs));
    RC_ASSERT(rec.has(RegsEn) == (rec.has(Regs) && rec.has(Enabled)));
    RC_ASSERT(kernel.port.bytesAt(rec.ip, 5) == core.expectedSiteBytes(rec));
  });
  std::size_t live = 0;
  for (FtraceOps *ops : all)
    live += ops->has(OpsFlag::Enabled);
  const TraceFunction::Kind kind = core.traceFunction().kind;
  if (live == 0)
    RC_ASSERT(kind == TraceFunction::Kind::Stub);
  else if (live == 1)
    RC_ASSERT(kind != TraceFunction::Kind::Stub);
  else
    RC_ASSERT(kind == TraceFunction::Kind::ListFunc);
}

RC_GTEST_PROP(PropertyTest, RecordsAlwaysAgreeWithTheOpsHashes, ()) {
  test::FakeKernel kernel(
      "x86_64", test::names({"put_page", "vfs_setpos", "schedule", "__schedule", "yield",
                             "_raw_spin_lock", "mutex_lock", "rcu_read_unlock", "do_softirq"}));
  auto core = test::bootedCore(kernel);
  FtraceOps a("a", [](auto, auto, auto &, auto) {});
  FtraceOps b(
      "b", [](auto, auto, auto &, auto) {}, OpsFlag::SaveRegs);
  FtraceOps c(
      "c", [](auto, auto, auto &, auto) {}, OpsFlag::Dynamic | OpsFlag::Recursion);
  std::vector<FtraceOps *> all = {&a, &b, &c};

  const auto steps = *rc::gen::container<std::vector<Step>>(rc::gen::build<Step>(
      rc::gen::set(&Step::ops, rc::gen::inRange(0, 3)),
      rc::gen::set(&Step::action, rc::gen::inRange(0, 4)),
      rc::gen::set(&Step::pattern, rc::gen::inRange(0, static_cast<int>(kPatterns.size())))));
  for (const Step &step : steps) {
    FtraceOps &ops = *all[static_cast<std::size_t>(step.ops)];
    switch (step.action) {
    case 0:
      if (ops.has(OpsFlag::Enabled))
        core->unregisterFunction(ops);
      else
        core->registerFunction(ops);
      break;
    case 1:
      core->setFilter(ops, kPatterns[static_cast<std::size_t>(step.pattern)], true);
      break;
    case 2:
      core->setNotrace(ops, kPatterns[static_cast<std::size_t>(step.pattern)], true);
      break;
    case 3:
      core->replaceHash(ops, true, FtraceHash{});
      break;
    }
    RC_ASSERT(!core->dead());
    checkInvariants(*core, kernel, all);
  }
  for (FtraceOps *ops : all)
    if (ops->has(OpsFlag::Enabled))
      core->unregisterFunction(*ops);
  core->records().forEach([&](const DynFtrace &rec) {
    RC_ASSERT((rec.flags & ~NoClear) == 0u);
    RC_ASSERT(kernel.port.bytesAt(rec.ip, 5) == kernel.arch.nop());
  });
  RC_ASSERT(core->warnings().empty());
}

} // namespace
} // namespace ftsim::model
