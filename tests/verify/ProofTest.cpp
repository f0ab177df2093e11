// Z3 proofs over the real protocols and encoders: today's protocols are proven safe at every
// offset under every model; the broken ones, and protocols that never patch, yield decoded
// counterexamples.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/ProtocolProgram.h"
#include "ftsim/verify/prove/Proofs.h"
#include "ftsim/verify/prove/ProtocolTrace.h"
#include "ftsim/verify/prove/QuiescenceProof.h"
#include "ftsim/verify/scenario/ProtocolFile.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>

using namespace ftsim;
using namespace ftsim::verify;

TEST(ByteStateProof, TodaysX86ProtocolIsSafeEverywhere) {
  const ProofResult r = proveByteStatesEverywhere(arch::archByName("x86_64"), "int3");
  EXPECT_TRUE(r.holds) << r.counterexample;
  EXPECT_NE(r.name.find("3456 configurations"), std::string::npos) << r.name;
}

TEST(ByteStateProof, TodaysPpc32ProtocolIsSafeEverywhere) {
  const ProofResult r = proveByteStatesEverywhere(arch::archByName("ppc32"), "patch-instruction");
  EXPECT_TRUE(r.holds) << r.counterexample;
}

TEST(ByteStateProof, DirectStoresTearIntoTheSlidesGpfUnderTheStaleModel) {
  // Two stores (bytes 0-1, 2-4) are what the word model makes of a 5-byte write at offset 6: a
  // CPU that holds stale bytes 0-1 and new bytes 2-4 fetches the slides' 0f 1f 2e 00 00.
  ByteStateQuery q{"direct",
                   sim::StoreModel::Word,
                   &sim::fetchModelByName("stale"),
                   SiteTransition::NopToCall,
                   6,
                   1};
  const ProofResult r = proveByteStates(arch::archByName("x86_64"), q);
  ASSERT_FALSE(r.holds);
  EXPECT_NE(r.counterexample.find("fetches"), std::string::npos) << r.counterexample;
  // Whatever torn string Z3 picked, it is neither the old nop nor the new call.
  EXPECT_EQ(r.counterexample.find("fetches 0f 1f 44 00 00 "), std::string::npos);
  EXPECT_EQ(r.counterexample.find("fetches e8 37 2e 00 00 "), std::string::npos);
}

TEST(ByteStateProof, DirectIsSafeOnlyWhenStoreAndFetchAreBothAtomic) {
  // One atomic store inside a line, fetched atomically: plain stores cannot tear. The proof says
  // so, which is why the hazard needs the multi-store or multi-line models.
  ByteStateQuery q{"direct",
                   sim::StoreModel::Line,
                   &sim::fetchModelByName("atomic"),
                   SiteTransition::NopToCall,
                   8,
                   1};
  EXPECT_TRUE(proveByteStates(arch::archByName("x86_64"), q).holds);
  q.siteOffset = 62; // straddles two lines: two stores
  EXPECT_FALSE(proveByteStates(arch::archByName("x86_64"), q).holds);
}

TEST(ByteStateProof, EveryBrokenByteLevelVariantHasACounterexample) {
  for (const char *p :
       {"direct", "int3-nosync", "int3-nosync1", "int3-nosync2", "int3-nosync3", "int3-swapped",
        "int3-nobsearch", "int3-unsorted", "int3-late-vector", "int3-early-clear"}) {
    const ProofResult r = proveByteStatesEverywhere(arch::archByName("x86_64"), p);
    EXPECT_FALSE(r.holds) << p;
    EXPECT_FALSE(r.counterexample.empty()) << p;
  }
}

// Stores that never leave the site holding its new instruction are safe at every instant and patch
// nothing: a protocol of syncs alone, or of the old bytes again, was proven "safe" before the
// proof asked where the stores end.
TEST(ByteStateProof, AProtocolThatNeverWritesTheNewInstructionFails) {
  for (const auto &[name, steps] :
       {std::pair<std::string, std::string>{"proof-only-syncs", "[\"sync\"]"},
        {"proof-old-again", "[{ write = \"whole\", value = \"old\" }, \"sync\"]"}}) {
    arch::registerFileProtocol(parseProtocolText(
        "name = \"" + name + "\"\narch = \"x86_64\"\nsteps = " + steps + "\n", name));
    const ProofResult r = proveByteStatesEverywhere(arch::archByName("x86_64"), name);
    EXPECT_FALSE(r.holds) << name;
    EXPECT_NE(r.counterexample.find("holding 0f 1f 44 00 00 = nopl (%rax, %rax), not its new "
                                    "instruction e8"),
              std::string::npos)
        << r.counterexample;
  }
}

// A proof's answer depends on its query only: a failing and a passing query give the same name,
// verdict, counterexample and number of solver queries whatever ran before them, in either order
// (no memo, context or solver survives a call).
TEST(ByteStateProof, AnswersDoNotDependOnEarlierCalls) {
  const arch::Arch &x86 = arch::archByName("x86_64");
  const ByteStateQuery failing{"direct",
                               sim::StoreModel::Word,
                               &sim::fetchModelByName("stale"),
                               SiteTransition::NopToCall,
                               6,
                               3};
  const ByteStateQuery passing{
      "int3", sim::StoreModel::Word, &sim::fetchModelByName("stale"), SiteTransition::NopToCall, 6,
      3};
  auto answer = [&](const ByteStateQuery &q) {
    const ProofResult r = proveByteStates(x86, q);
    return std::tuple(r.name, r.holds, r.counterexample, r.checks);
  };
  const auto failFirst = {answer(failing), answer(passing), answer(failing)};
  const auto passFirst = {answer(passing), answer(failing), answer(passing)};
  const auto &f = *failFirst.begin();
  const auto &p = *passFirst.begin();
  EXPECT_FALSE(std::get<1>(f));
  EXPECT_TRUE(std::get<1>(p));
  EXPECT_EQ(std::get<3>(p), 3u) << "one solver query per site of the batch";
  EXPECT_EQ(failFirst.begin()[1], p);
  EXPECT_EQ(failFirst.begin()[2], f);
  EXPECT_EQ(passFirst.begin()[1], f);
  EXPECT_EQ(passFirst.begin()[2], p);
  // A whole sweep, twice: the same count of solver queries (the memo is the sweep's own).
  const ProofResult first =
      proveByteStatesEverywhere(arch::archByName("ppc32"), "patch-instruction");
  const ProofResult again =
      proveByteStatesEverywhere(arch::archByName("ppc32"), "patch-instruction");
  EXPECT_TRUE(first.holds) << first.counterexample;
  EXPECT_EQ(first.checks, again.checks);
  EXPECT_EQ(first.name, again.name);
}

TEST(ByteStateProof, TraceOfTodaysProtocolHasThreeSyncsPerBatch) {
  const arch::Arch &x86 = arch::archByName("x86_64");
  const std::uint64_t site = 0xffffffff810f45f4;
  const ProtocolTrace t =
      traceProtocol(x86, "int3", sim::StoreModel::Line,
                    {{site, x86.nop(), x86.call(site, 0xffffffff810f7430).bytes}});
  EXPECT_EQ(t.syncs(), 3u);
  EXPECT_EQ(t.stores(), 3u);
  EXPECT_EQ(arch::hexBytes(t.siteAt(1, 0)), "cc 1f 44 00 00");
  EXPECT_EQ(arch::hexBytes(t.siteAt(2, 0)), "cc 37 2e 00 00");
  EXPECT_EQ(arch::hexBytes(t.siteAt(3, 0)), "e8 37 2e 00 00");
}

TEST(EncodingProof, BranchEncodingsRoundTripExactlyWithinRange) {
  ASSERT_EQ(arch::allArchs().size(), 3u); // x86_64, ppc32, ppc64
  for (const arch::Arch *isa : arch::allArchs()) {
    const ProofResult r = proveCallEncoding(*isa);
    EXPECT_TRUE(r.holds) << r.name << ": " << r.counterexample;
    EXPECT_GT(r.checks, 1000u);
  }
}

TEST(EncodingProof, TruncatingPpcEncoderMisbranchesAndOursRefuses) {
  ASSERT_TRUE(truncatesLikePowerPc32(arch::archByName("ppc32")));
  EXPECT_FALSE(truncatesLikePowerPc32(arch::archByName("ppc64")));
  const ProofResult r = provePowerPcTruncationMisbranches(arch::archByName("ppc32"));
  ASSERT_TRUE(r.holds);
  EXPECT_NE(r.counterexample.find("long-branch stub is needed"), std::string::npos)
      << r.counterexample;
}

TEST(QuiescenceProof, RcuTasksFreesOnlyAfterEveryTaskWasQuiescent) {
  const ProofResult r = proveTrampolineFree(FreeStrategy::RcuTasks, {3, 2, 14, true});
  EXPECT_TRUE(r.holds) << r.counterexample;
}

TEST(QuiescenceProof, ImmediateFreeHitsARunningOrPreemptedTask) {
  const ProofResult r = proveTrampolineFree(FreeStrategy::Immediate, {3, 2, 14, true});
  ASSERT_FALSE(r.holds);
  EXPECT_NE(r.counterexample.find("free while task"), std::string::npos) << r.counterexample;
}

TEST(QuiescenceProof, ScheduleOnEachCpuIsSafeOnlyWithoutPreemption) {
  const ProofResult preempt = proveTrampolineFree(FreeStrategy::SchedSync, {3, 2, 14, true});
  ASSERT_FALSE(preempt.holds);
  // The f3bea49115b2 hazard: the task was preempted inside the trampoline.
  EXPECT_NE(preempt.counterexample.find("preempted there"), std::string::npos)
      << preempt.counterexample;
  EXPECT_TRUE(proveTrampolineFree(FreeStrategy::SchedSync, {3, 2, 14, false}).holds);
}
