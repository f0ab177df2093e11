#include "ftsim/model/CheckRecord.h"

namespace ftsim::model {

std::string_view toString(UpdateAction action) {
  switch (action) {
  case UpdateAction::Ignore:
    return "IGNORE";
  case UpdateAction::MakeCall:
    return "MAKE_CALL";
  case UpdateAction::MakeNop:
    return "MAKE_NOP";
  case UpdateAction::ModifyCall:
    return "MODIFY_CALL";
  }
  return "?";
}

bool skipRecord(const DynFtrace &rec, const RecordRules &rules) {
  // At boot, weak functions are set to disabled. If a record is disabled but already enabled,
  // keep processing it so that the accounting stays right (kernel/trace/ftrace.c skip_record).
  if (rules.skipRecordKeepsEnabled)
    return rec.has(RecordFlag::Disabled) && !rec.has(RecordFlag::Enabled);
  return rec.has(RecordFlag::Disabled);
}

namespace {

// Whether a pair's wanted flag and its _EN (in force) flag disagree.
bool outOfStep(const DynFtrace &rec, std::uint32_t wanted, std::uint32_t enabled) {
  return !rec.has(wanted) != !rec.has(enabled);
}

// Direct calls and call ops only apply to a record with exactly one user; with more the list
// function handles them, so an _EN left over must be cleared.
bool singleUserOutOfStep(const DynFtrace &rec, std::uint32_t wanted, std::uint32_t enabled) {
  return rec.count() == 1 ? outOfStep(rec, wanted, enabled) : rec.has(enabled);
}

// What the record should be: ENABLED when enabling a record with users, plus the wanted bit of
// every pair out of step, so that the comparison with ENABLED fails and the record is not ignored.
// Only the pairs the release has take part (v3.x: REGS alone; v4.x: + TRAMP; v6.1: + DIRECT).
std::uint32_t wantedFlags(const DynFtrace &rec, bool enable, const RecordRules &rules) {
  using namespace RecordFlag;
  // Updating calls: a record with a ref count must be enabled. Disabling: disable all.
  if (!enable || !rec.count())
    return 0;
  std::uint32_t flag = Enabled;
  if (outOfStep(rec, Regs, RegsEn))
    flag |= Regs;
  if (rules.has(Tramp) && outOfStep(rec, Tramp, TrampEn))
    flag |= Tramp;
  if (rules.has(Direct) && singleUserOutOfStep(rec, Direct, DirectEn))
    flag |= Direct;
  if (rules.has(CallOps) && singleUserOutOfStep(rec, CallOps, CallOpsEn))
    flag |= CallOps;
  return flag;
}

void setFlag(DynFtrace &rec, std::uint32_t bit, bool on) {
  if (on)
    rec.flags |= bit;
  else
    rec.flags &= ~bit;
}

// The record is enabled, or switched between regs/non-regs/trampoline: bring the _EN flags of the
// pairs in `changed` in line with what they want.
void markEnabled(DynFtrace &rec, std::uint32_t changed, const RecordRules &rules) {
  using namespace RecordFlag;
  rec.flags |= Enabled;
  if (rules.has(Touched))
    rec.flags |= Touched;
  if (changed & Regs)
    setFlag(rec, RegsEn, rec.has(Regs));
  if (changed & Tramp)
    setFlag(rec, TrampEn, rec.has(Tramp));
  // Keep track of anything that modifies the function.
  if (rules.has(Modified) && (rec.flags & (Direct | IpModify)))
    rec.flags |= Modified;
  if (changed & Direct)
    setFlag(rec, DirectEn, rec.count() == 1 && rec.has(Direct));
  if (changed & CallOps)
    setFlag(rec, CallOpsEn, rec.count() == 1 && rec.has(CallOps));
}

void markDisabled(DynFtrace &rec, const RecordRules &rules) {
  using namespace RecordFlag;
  if (!rec.count())
    rec.flags &= rules.noClear; // no more users: clear all flags but the history ones
  else if (rules.disableClearsEn)
    // Just disable the record, keeping the ops' wanted TRAMP and REGS; the _EN flags go.
    rec.flags &= ~(Enabled | TrampEn | RegsEn | DirectEn | CallOpsEn);
  else
    rec.flags &= ~Enabled; // v3.x: "Just disable the record (keep REGS state)"
}

} // namespace

// A transcription of ftrace_check_record() (kernel/trace/ftrace.c). `flag` collects what the record
// should be; comparing it with rec->flags & ENABLED decides the action, and the XOR trick records
// which pairs are out of step.
CheckResult checkRecord(DynFtrace &rec, bool enable, bool update, const RecordRules &rules) {
  using namespace RecordFlag;
  if (skipRecord(rec, rules))
    return {UpdateAction::Ignore, BugType::Unknown};
  std::uint32_t flag = wantedFlags(rec, enable, rules);
  // Nothing changed: nothing to do.
  if ((rec.flags & Enabled) == flag)
    return {UpdateAction::Ignore, BugType::Unknown};
  if (!flag) {
    if (update)
      markDisabled(rec, rules);
    return {UpdateAction::MakeNop, BugType::Nop};
  }
  // Remember whether the record is being enabled (ENABLED toggles) for the return value.
  flag ^= rec.flags & Enabled;
  if (update)
    markEnabled(rec, flag, rules);
  // From a nop: MAKE_CALL. Otherwise switch between regs/non-regs/trampoline: MODIFY_CALL.
  if (flag & Enabled)
    return {UpdateAction::MakeCall, BugType::Call};
  return {UpdateAction::ModifyCall, BugType::Update};
}

} // namespace ftsim::model
