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

bool skipRecord(const DynFtrace &rec) {
  // At boot, weak functions are set to disabled. If a record is disabled but already enabled,
  // keep processing it so that the accounting stays right (kernel/trace/ftrace.c skip_record).
  return rec.has(RecordFlag::Disabled) && !rec.has(RecordFlag::Enabled);
}

// A transcription of ftrace_check_record() (kernel/trace/ftrace.c). `flag` collects what the record
// should be; comparing it with rec->flags & ENABLED decides the action, and the XOR trick records
// which pairs are out of step.
CheckResult checkRecord(DynFtrace &rec, bool enable, bool update) {
  using namespace RecordFlag;
  std::uint32_t flag = 0;

  if (skipRecord(rec))
    return {UpdateAction::Ignore, BugType::Unknown};

  // Updating calls: a record with a ref count must be enabled. Disabling: disable all.
  if (enable && rec.count())
    flag = Enabled;

  // If the wanted and in-force flags of a pair disagree, do not ignore the record: add the pair's
  // wanted bit so that the comparison with ENABLED fails.
  if (flag) {
    if (!rec.has(Regs) != !rec.has(RegsEn))
      flag |= Regs;
    if (!rec.has(Tramp) != !rec.has(TrampEn))
      flag |= Tramp;
    // Direct calls and call ops only apply to a record with exactly one user; with more the list
    // function handles them, so an _EN left over must be cleared.
    if (rec.count() == 1) {
      if (!rec.has(Direct) != !rec.has(DirectEn))
        flag |= Direct;
    } else if (rec.has(DirectEn)) {
      flag |= Direct;
    }
    if (rec.count() == 1) {
      if (!rec.has(CallOps) != !rec.has(CallOpsEn))
        flag |= CallOps;
    } else if (rec.has(CallOpsEn)) {
      flag |= CallOps;
    }
  }

  // Nothing changed: nothing to do.
  if ((rec.flags & Enabled) == flag)
    return {UpdateAction::Ignore, BugType::Unknown};

  if (flag) {
    // Remember whether the record is being enabled (ENABLED toggles) for the return value.
    flag ^= rec.flags & Enabled;

    if (update) {
      rec.flags |= Enabled | Touched;
      if (flag & Regs) {
        if (rec.has(Regs))
          rec.flags |= RegsEn;
        else
          rec.flags &= ~RegsEn;
      }
      if (flag & Tramp) {
        if (rec.has(Tramp))
          rec.flags |= TrampEn;
        else
          rec.flags &= ~TrampEn;
      }
      // Keep track of anything that modifies the function.
      if (rec.flags & (Direct | IpModify))
        rec.flags |= Modified;
      if (flag & Direct) {
        if (rec.count() == 1 && rec.has(Direct))
          rec.flags |= DirectEn;
        else
          rec.flags &= ~DirectEn;
      }
      if (flag & CallOps) {
        if (rec.count() == 1 && rec.has(CallOps))
          rec.flags |= CallOpsEn;
        else
          rec.flags &= ~CallOpsEn;
      }
    }

    // From a nop: MAKE_CALL. Otherwise switch between regs/non-regs/trampoline: MODIFY_CALL.
    if (flag & Enabled)
      return {UpdateAction::MakeCall, BugType::Call};
    return {UpdateAction::ModifyCall, BugType::Update};
  }

  if (update) {
    if (!rec.count())
      rec.flags &= NoClear; // no more users: clear all flags but the history ones
    else
      // Just disable the record, keeping the ops' wanted TRAMP and REGS; the _EN flags go.
      rec.flags &= ~(Enabled | TrampEn | RegsEn | DirectEn | CallOpsEn);
  }
  return {UpdateAction::MakeNop, BugType::Nop};
}

} // namespace ftsim::model
