#pragma once
// ftrace_check_record(): the core decides, the arch does. A pure decision of what a record's call
// site must become, plus (when `update` is true) the flag bookkeeping that goes with it.

#include "ftsim/model/DynFtrace.h"
#include "ftsim/model/RecordRules.h"

#include <string_view>

namespace ftsim::model {

// FTRACE_UPDATE_*
enum class UpdateAction { Ignore, MakeCall, MakeNop, ModifyCall };

std::string_view toString(UpdateAction action);

// FTRACE_BUG_*: which kind of modification was being attempted when something failed.
enum class BugType { Unknown, Init, Nop, Call, Update };

struct CheckResult {
  UpdateAction action = UpdateAction::Ignore;
  BugType bugType = BugType::Unknown;
};

// skip_record() (v6.0 on): DISABLED records are left alone unless they are already enabled;
// before, `rec->flags & FTRACE_FL_DISABLED` alone (RecordRules::skipRecordKeepsEnabled).
bool skipRecord(const DynFtrace &rec, const RecordRules &rules);

// ftrace_check_record(rec, enable, update) of the release `rules` describes. With update == false
// the record is not touched (ftrace_test_record); with update == true the ENABLED/_EN/TOUCHED/
// MODIFIED bookkeeping the release has is applied (ftrace_update_record).
CheckResult checkRecord(DynFtrace &rec, bool enable, bool update, const RecordRules &rules);
inline UpdateAction testRecord(DynFtrace rec, bool enable, const RecordRules &rules) {
  return checkRecord(rec, enable, false, rules).action;
}

} // namespace ftsim::model
