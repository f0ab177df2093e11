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
  const RecordRules *rules = &RecordRules::v6_12(); // the release whose check_record runs
};

class CheckRecordTable : public ::testing::TestWithParam<Row> {};

TEST_P(CheckRecordTable, ActionAndUpdatedFlags) {
  const Row &row = GetParam();
  DynFtrace rec{0x1000, row.flags, 0};
  // The test form never changes the record.
  EXPECT_EQ(testRecord(rec, row.enable, *row.rules), row.action) << row.what;
  EXPECT_EQ(rec.flags, row.flags) << row.what;
  CheckResult result = checkRecord(rec, row.enable, true, *row.rules);
  EXPECT_EQ(result.action, row.action) << row.what;
  EXPECT_EQ(rec.flags, row.flagsAfterUpdate) << row.what;
  // Applying the update reaches a fixed point.
  EXPECT_EQ(testRecord(rec, row.enable, *row.rules), UpdateAction::Ignore) << row.what;
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

// The same decisions in older releases: what each release's check_record does differently.
INSTANTIATE_TEST_SUITE_P(
    OlderReleases, CheckRecordTable,
    ::testing::Values(
        Row{"v6.1: first user, no TOUCHED yet", 1, true, UpdateAction::MakeCall, Enabled | 1,
            &RecordRules::v6_1()},
        Row{"v6.1: ipmodify user, no MODIFIED yet", IpModify | 1, true, UpdateAction::MakeCall,
            Enabled | IpModify | 1, &RecordRules::v6_1()},
        Row{"v6.1: last user gone keeps DISABLED only", Enabled | Disabled, true,
            UpdateAction::MakeNop, Disabled, &RecordRules::v6_1()},
        Row{"v4.19: disabled but enabled is ignored (no skip_record)", Disabled | Enabled, true,
            UpdateAction::Ignore, Disabled | Enabled, &RecordRules::v4_19()},
        Row{"v4.19: disable all with users drops the _EN flags",
            Enabled | Regs | RegsEn | Tramp | TrampEn | 2, false, UpdateAction::MakeNop,
            Regs | Tramp | 2, &RecordRules::v4_19()},
        Row{"v3.13: disable all with users keeps REGS_EN", Enabled | Regs | RegsEn | 2, false,
            UpdateAction::MakeNop, Regs | RegsEn | 2, &RecordRules::v3_13()},
        Row{"v3.13: regs wanted on enabled site: modify", Enabled | Regs | 2, true,
            UpdateAction::ModifyCall, Enabled | Regs | RegsEn | 2, &RecordRules::v3_13()}));

TEST(RecordRulesTest, EachReleaseEncodesTheWordAsItsOwnHeaderLaysItOut) {
  // ENABLED with one user: bit 31 since v3.17, bit 29 in the v3.x layout of the slides.
  EXPECT_EQ(RecordRules::v6_12().encode(Enabled | 1), 0x80000001u);
  EXPECT_EQ(RecordRules::v4_19().encode(Enabled | 1), 0x80000001u);
  EXPECT_EQ(RecordRules::v3_13().encode(Enabled | 1), 0x20000001u);
  EXPECT_EQ(RecordRules::v3_13().encode(Enabled | Regs | RegsEn | 1), 0xe0000001u);
  EXPECT_EQ(RecordRules::v3_13().describe(),
            "v3.13 record flags ENABLED REGS REGS_EN, 29-bit count");
  EXPECT_EQ(RecordRules::v6_1().describe(),
            "v6.1 record flags ENABLED REGS REGS_EN TRAMP TRAMP_EN IPMODIFY DISABLED DIRECT "
            "DIRECT_EN, 23-bit count");
}

TEST(CheckRecordTest, BugTypeFollowsTheAction) {
  DynFtrace rec{0x1000, 1, 0};
  EXPECT_EQ(checkRecord(rec, true, false, RecordRules::v6_12()).bugType, BugType::Call);
  rec.flags = Enabled | Regs | 1;
  EXPECT_EQ(checkRecord(rec, true, false, RecordRules::v6_12()).bugType, BugType::Update);
  rec.flags = Enabled;
  EXPECT_EQ(checkRecord(rec, true, false, RecordRules::v6_12()).bugType, BugType::Nop);
}

} // namespace
} // namespace ftsim::model
