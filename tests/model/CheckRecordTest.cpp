// ftrace_check_record() truth table: the pure decision and, with update, the flag bookkeeping.

#include "ftsim/model/CheckRecord.h"

#include <gtest/gtest.h>

namespace ftsim::model {
namespace {

using namespace RecordFlag;

struct Row {
  const char *what;
  std::uint32_t flags;
  bool enable;
  UpdateAction action;
  std::uint32_t flagsAfterUpdate;
};

class CheckRecordTable : public ::testing::TestWithParam<Row> {};

TEST_P(CheckRecordTable, ActionAndUpdatedFlags) {
  const Row &row = GetParam();
  DynFtrace rec{0x1000, row.flags, 0};
  // The test form never changes the record.
  EXPECT_EQ(testRecord(rec, row.enable), row.action) << row.what;
  EXPECT_EQ(rec.flags, row.flags) << row.what;
  CheckResult result = checkRecord(rec, row.enable, true);
  EXPECT_EQ(result.action, row.action) << row.what;
  EXPECT_EQ(rec.flags, row.flagsAfterUpdate) << row.what;
  // Applying the update reaches a fixed point.
  EXPECT_EQ(testRecord(rec, row.enable), UpdateAction::Ignore) << row.what;
}

INSTANTIATE_TEST_SUITE_P(
    Linux, CheckRecordTable,
    ::testing::Values(
        Row{"idle record", 0, true, UpdateAction::Ignore, 0},
        Row{"first user: nop -> call", 1, true, UpdateAction::MakeCall, Enabled | Touched | 1},
        Row{"already enabled", Enabled | Touched | 1, true, UpdateAction::Ignore,
            Enabled | Touched | 1},
        Row{"regs wanted: nop -> call regs caller", Regs | 1, true, UpdateAction::MakeCall,
            Enabled | Touched | Regs | RegsEn | 1},
        Row{"regs wanted on enabled site: modify", Enabled | Regs | 2, true,
            UpdateAction::ModifyCall, Enabled | Regs | RegsEn | Touched | 2},
        Row{"regs no longer wanted: modify back", Enabled | RegsEn | 1, true,
            UpdateAction::ModifyCall, Enabled | Touched | 1},
        Row{"trampoline wanted: modify", Enabled | Tramp | 1, true, UpdateAction::ModifyCall,
            Enabled | Tramp | TrampEn | Touched | 1},
        Row{"last user gone: call -> nop, flags cleared", Enabled | RegsEn | Touched, true,
            UpdateAction::MakeNop, Touched},
        Row{"disable all with users: keep wanted, drop _EN",
            Enabled | Regs | RegsEn | Tramp | TrampEn | 2, false, UpdateAction::MakeNop,
            Regs | Tramp | 2},
        Row{"disabled, not enabled: ignored", Disabled | 1, true, UpdateAction::Ignore,
            Disabled | 1},
        Row{"disabled but enabled: still accounted", Disabled | Enabled, true,
            UpdateAction::MakeNop, Disabled},
        Row{"ipmodify user marks MODIFIED", IpModify | 1, true, UpdateAction::MakeCall,
            Enabled | IpModify | Touched | Modified | 1},
        Row{"direct single user", Direct | 1, true, UpdateAction::MakeCall,
            Enabled | Direct | DirectEn | Touched | 1 | Modified},
        Row{"direct with two users: no DIRECT_EN", Enabled | Direct | DirectEn | 2, true,
            UpdateAction::ModifyCall, Enabled | Direct | Touched | Modified | 2},
        Row{"call ops single user", CallOps | 1, true, UpdateAction::MakeCall,
            Enabled | CallOps | CallOpsEn | Touched | 1}));

TEST(CheckRecordTest, BugTypeFollowsTheAction) {
  DynFtrace rec{0x1000, 1, 0};
  EXPECT_EQ(checkRecord(rec, true, false).bugType, BugType::Call);
  rec.flags = Enabled | Regs | 1;
  EXPECT_EQ(checkRecord(rec, true, false).bugType, BugType::Update);
  rec.flags = Enabled;
  EXPECT_EQ(checkRecord(rec, true, false).bugType, BugType::Nop);
}

} // namespace
} // namespace ftsim::model
