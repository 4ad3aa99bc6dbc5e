// Strict-majority voting (docs/observer.md#consensus): the edge cases every verdict depends on.
#include "common/vote.h"

#include <gtest/gtest.h>

namespace {

using scout::strict_majority;
using scout::VoteVerdict;
using Ballots = std::vector<std::pair<int, int>>;

TEST(Vote, AllAgree) {
  auto v = strict_majority(Ballots{{0, 7}, {1, 7}, {2, 7}}, 3);
  EXPECT_EQ(v.verdict, VoteVerdict::kAgree);
  EXPECT_TRUE(v.has_majority);
  EXPECT_TRUE(v.dissenters.empty());
}

TEST(Vote, TwoRanksDisagreeIsInconclusive) {
  auto v = strict_majority(Ballots{{0, 1}, {1, 2}}, 2);
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
  EXPECT_FALSE(v.has_majority);
  EXPECT_TRUE(v.dissenters.empty());
  EXPECT_EQ(v.groups.size(), 2u);
}

TEST(Vote, ThreeAgainstOneIsAttributed) {
  auto v = strict_majority(Ballots{{0, 5}, {1, 5}, {2, 9}, {3, 5}}, 4);
  EXPECT_EQ(v.verdict, VoteVerdict::kAttributed);
  EXPECT_EQ(v.groups[0].value, 5);
  EXPECT_EQ(v.groups[0].voters, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(v.dissenters, (std::vector<int>{2}));
}

TEST(Vote, TwoAgainstTwoIsInconclusive) {
  auto v = strict_majority(Ballots{{0, 1}, {1, 1}, {2, 2}, {3, 2}}, 4);
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
}

TEST(Vote, MajorityIsOfTheWholeElectorate) {
  // 8 ranks, only 4 voted: 3 vs 1 is not a strict majority of 8.
  auto v = strict_majority(Ballots{{0, 1}, {1, 1}, {2, 1}, {3, 2}}, 8);
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
  // 5 of 8 agree: attributed even though 2 ranks did not vote.
  auto w = strict_majority(Ballots{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 2}}, 8);
  EXPECT_EQ(w.verdict, VoteVerdict::kAttributed);
  EXPECT_EQ(w.dissenters, (std::vector<int>{5}));
}

TEST(Vote, ThreeWaySplitWithPlurality) {
  // 2, 1, 1 of 4: the largest group is not a strict majority.
  auto v = strict_majority(Ballots{{0, 1}, {1, 1}, {2, 2}, {3, 3}}, 4);
  EXPECT_EQ(v.verdict, VoteVerdict::kInconclusive);
  // 3, 1, 1 of 5: attributed, both others named.
  auto w = strict_majority(Ballots{{0, 1}, {1, 1}, {2, 2}, {3, 3}, {4, 1}}, 5);
  EXPECT_EQ(w.verdict, VoteVerdict::kAttributed);
  EXPECT_EQ(w.dissenters, (std::vector<int>{2, 3}));
}

TEST(Vote, NoBallotsAgree) {
  auto v = strict_majority(Ballots{}, 4);
  EXPECT_EQ(v.verdict, VoteVerdict::kAgree);
  EXPECT_FALSE(v.has_majority);
}

}  // namespace
