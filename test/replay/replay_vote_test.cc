// Replay's fingerprint vote (common/vote.h, the same strict majority as live consensus, as
// replay/judge.cc calls it: every voter once) and outlier rule (replay/outlier.h).
#include <gtest/gtest.h>

#include "common/vote.h"
#include "replay/judge.h"
#include "replay/outlier.h"

namespace {

using scout::VoteVerdict;
using scout::replay::OutlierRule;
using Ballots = std::vector<std::pair<int, uint64_t>>;

scout::VoteResult<uint64_t> vote(const Ballots& b) { return scout::strict_majority(b, int(b.size())); }

TEST(ReplayVote, AllEqualAgree) {
  auto v = vote({{0, 7}, {1, 7}, {2, 7}});
  EXPECT_EQ(v.verdict, VoteVerdict::kAgree);
  EXPECT_TRUE(v.has_majority);
  EXPECT_EQ(v.groups[0].value, 7u);
  EXPECT_TRUE(v.dissenters.empty());
}

TEST(ReplayVote, StrictMajorityAttributesTheOthers) {
  auto v = vote({{0, 7}, {1, 7}, {5, 9}, {3, 7}, {6, 8}});
  EXPECT_EQ(v.verdict, VoteVerdict::kAttributed);
  EXPECT_EQ(v.groups[0].value, 7u);
  EXPECT_EQ(v.dissenters, (std::vector<int>{5, 6}));
  ASSERT_EQ(v.groups.size(), 3u);
  EXPECT_EQ(v.groups[0].voters, (std::vector<int>{0, 1, 3}));
  const nlohmann::json j = scout::replay::vote_json(v);
  EXPECT_EQ(j["outcome"], "attributed");
  EXPECT_EQ(j["majority"], "0x0000000000000007");
  EXPECT_EQ(j["groups"][1]["value"], "0x0000000000000008");  // ties by value
  EXPECT_EQ(j["groups"][2]["voters"], nlohmann::json({5}));
}

TEST(ReplayVote, OneOfTwoIsInconclusive) {
  auto v = vote({{4, 1}, {5, 2}});
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
  EXPECT_FALSE(v.has_majority);
  EXPECT_TRUE(v.dissenters.empty());
  EXPECT_EQ(scout::replay::vote_json(v)["majority"], nullptr);
}

TEST(ReplayVote, HalfIsNotAMajority) {
  auto v = vote({{0, 1}, {1, 1}, {2, 2}, {3, 3}});
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
}

TEST(ReplayVote, NoBallotBlamesNobody) {
  auto v = vote({});
  EXPECT_EQ(v.verdict, VoteVerdict::kAgree);
  EXPECT_FALSE(v.has_majority);
  EXPECT_TRUE(v.dissenters.empty());
}

TEST(ReplayOutlier, MedianIsTheUpperMiddle) {
  EXPECT_EQ(scout::replay::median_of({5, 1, 3}), 3);
  EXPECT_EQ(scout::replay::median_of({4, 1, 3, 2}), 3);
  EXPECT_EQ(scout::replay::median_of({}), 0);
  EXPECT_EQ(scout::replay::mad_of({1, 2, 3, 4, 100}, 3), 1);
}

TEST(ReplayOutlier, SlowerThanBothFloorsAndTheMad) {
  OutlierRule rule;
  // median 10 ms: floor = max(11 ms, 12 ms) = 12 ms.
  std::vector<int64_t> t = {10'000'000, 10'100'000, 9'900'000, 12'500'000, 10'050'000};
  EXPECT_EQ(scout::replay::slow_outliers(t, rule), (std::vector<int>{3}));
  t[3] = 11'900'000;  // beyond 1.1x but within median + 2 ms
  EXPECT_TRUE(scout::replay::slow_outliers(t, rule).empty());
}

TEST(ReplayOutlier, RelativeFloorForLongTimes) {
  OutlierRule rule;
  // median about 100 ms: the relative floor (1.1x) is above median + 2 ms.
  std::vector<int64_t> t = {100'000'000, 101'000'000, 99'000'000, 108'000'000};
  EXPECT_TRUE(scout::replay::slow_outliers(t, rule).empty());
  t[3] = 113'000'000;  // median 101 ms (upper middle): floor 111.1 ms
  EXPECT_EQ(scout::replay::slow_outliers(t, rule), (std::vector<int>{3}));
}

TEST(ReplayOutlier, TwoSamplesNameNobody) {
  EXPECT_TRUE(scout::replay::slow_outliers({1'000'000, 90'000'000}, OutlierRule{}).empty());
}

TEST(ReplayOutlier, ConfirmationNeedsTwoRounds) {
  OutlierRule rule;
  std::vector<int64_t> slow3 = {5'000'000, 5'000'000, 5'000'000, 15'000'000};
  std::vector<int64_t> healthy = {5'000'000, 5'000'000, 5'000'000, 5'000'000};
  std::vector<int64_t> slow1 = {5'000'000, 15'000'000, 5'000'000, 5'000'000};
  EXPECT_TRUE(scout::replay::confirmed_outliers({slow3, healthy}, rule).empty());
  EXPECT_EQ(scout::replay::confirmed_outliers({slow3, healthy, slow3}, rule), (std::vector<int>{3}));
  EXPECT_TRUE(scout::replay::confirmed_outliers({slow3, slow1}, rule).empty());
  // A missing sample (-1) never counts.
  std::vector<int64_t> missing = {5'000'000, 5'000'000, 5'000'000, -1};
  EXPECT_TRUE(scout::replay::confirmed_outliers({slow3, missing}, rule).empty());
}

}  // namespace
