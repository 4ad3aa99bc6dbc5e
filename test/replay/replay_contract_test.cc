// The readiness contract (replay/contract.h) and the recipe builder (replay/recipe.h).
#include <gtest/gtest.h>

#include "replay/contract.h"
#include "replay/recipe.h"

namespace {

using namespace scout::replay;

Readiness ready(int rank, uint64_t digest, const std::string& libs = "nccl 22809", bool ok = true) {
  Readiness r;
  r.gpu.global_rank = rank;
  r.gpu.gpu = "GPU-" + std::to_string(rank);
  r.gpu.model = "H200";
  r.gpu.sm_count = 132;
  r.gpu.libs = libs;
  r.gpu.ready = ok;
  if (!ok) r.gpu.reason = "no device";
  r.digest = digest;
  return r;
}

std::vector<Recipe> recipes() {
  RecipePlan p;
  p.gemms = {{256, 256, 256, "bf16"}};
  CollClass c;
  c.func = "AllReduce";
  c.datatype = "float32";
  c.count = 1024;
  c.ranks = {0, 1, 2};
  p.colls = {c};
  p.links = {{0, 1}, {2, 3}};
  return build_recipes(p);
}

TEST(ReplayContract, DigestCoversCycleRecipesAndMembers) {
  Contract a{7, {"gemm:x", "link:0->1"}, {0, 1, 2}};
  Contract b = a;
  EXPECT_EQ(contract_digest(a), contract_digest(b));
  b.cycle = 8;
  EXPECT_NE(contract_digest(a), contract_digest(b));
  b = a;
  b.recipes = {"link:0->1", "gemm:x"};
  EXPECT_NE(contract_digest(a), contract_digest(b));
  b = a;
  b.members = {0, 1};
  EXPECT_NE(contract_digest(a), contract_digest(b));
}

TEST(ReplayContract, EveryoneReadyAdmitsEverything) {
  auto rs = recipes();
  Contract c{1, {}, {0, 1, 2, 3}};
  for (auto& r : rs) c.recipes.push_back(r.id);
  const uint64_t d = contract_digest(c);
  std::vector<Readiness> ans = {ready(0, d), ready(1, d), ready(2, d), ready(3, d)};
  ContractCheck chk = check_contract(c, ans);
  EXPECT_TRUE(chk.all_ready());
  EXPECT_EQ(chk.classes.at("H200|132|nccl 22809"), (std::vector<int>{0, 1, 2, 3}));
  Admission a = admit(rs, chk, ans);
  EXPECT_EQ(a.run.size(), rs.size());
  EXPECT_TRUE(a.inconclusive.empty());
}

TEST(ReplayContract, MissingParticipantBlocksItsCollectivesAndLinksOnly) {
  auto rs = recipes();
  Contract c{1, {}, {0, 1, 2, 3}};
  for (auto& r : rs) c.recipes.push_back(r.id);
  const uint64_t d = contract_digest(c);
  std::vector<Readiness> ans = {ready(0, d), ready(1, d), ready(3, d)};  // 2 never answered
  ContractCheck chk = check_contract(c, ans);
  EXPECT_FALSE(chk.all_ready());
  EXPECT_EQ(chk.missing, (std::vector<int>{2}));
  Admission a = admit(rs, chk, ans);
  EXPECT_EQ(a.run, (std::vector<std::string>{"gemm:bf16:256x256x256", "link:0->1"}));
  ASSERT_EQ(a.inconclusive.size(), 2u);
  EXPECT_EQ(a.inconclusive[0].first, "coll:AllReduce:float32:1024:[0,1,2]");  // no algorithm or protocol known
  EXPECT_EQ(a.inconclusive[0].second, "rank 2 did not answer the readiness contract");
  EXPECT_EQ(a.inconclusive[1].first, "link:2->3");
}

TEST(ReplayContract, WrongDigestNotReadyAndLibraryMismatch) {
  auto rs = recipes();
  Contract c{1, {}, {0, 1, 2, 3}};
  for (auto& r : rs) c.recipes.push_back(r.id);
  const uint64_t d = contract_digest(c);
  std::vector<Readiness> ans = {ready(0, d), ready(1, d + 1), ready(2, d, "nccl 22700"),
                                ready(3, d, "nccl 22809", false)};
  ContractCheck chk = check_contract(c, ans);
  EXPECT_EQ(chk.wrong_contract, (std::vector<int>{1}));
  EXPECT_EQ(chk.not_ready, (std::vector<int>{3}));
  Admission a = admit(rs, chk, ans);
  EXPECT_EQ(a.run, (std::vector<std::string>{"gemm:bf16:256x256x256"}));
  ASSERT_EQ(a.inconclusive.size(), 3u);
  EXPECT_EQ(a.inconclusive[0].second, "rank 1 answered another contract");
  EXPECT_EQ(a.inconclusive[1].second, "rank 1 answered another contract");
  EXPECT_EQ(a.inconclusive[2].second, "rank 3 is not ready");
  // Two ready members with different library versions.
  Recipe l;
  l.kind = RecipeKind::kLink;
  l.id = "link:0->2";
  l.src = 0;
  l.dst = 2;
  Admission b = admit({l}, chk, ans);
  ASSERT_EQ(b.inconclusive.size(), 1u);
  EXPECT_EQ(b.inconclusive[0].second, "members run different library versions");
}

TEST(ReplayRecipes, ParseGemms) {
  std::vector<GemmShape> g;
  std::string err;
  ASSERT_TRUE(parse_gemms("4096x4096x4096:bf16, 1024x8192x512:fp32,16x16x16", &g, &err)) << err;
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], (GemmShape{4096, 4096, 4096, "bf16"}));
  EXPECT_EQ(g[1], (GemmShape{1024, 8192, 512, "fp32"}));
  EXPECT_EQ(g[2], (GemmShape{16, 16, 16, "bf16"}));
  EXPECT_FALSE(parse_gemms("4096x4096", &g, &err));
  EXPECT_EQ(err, "SCOUT_REPLAY_GEMMS item '4096x4096': expected MxNxK[:dtype]");
  EXPECT_FALSE(parse_gemms("8x8x8:int8", &g, &err));
  EXPECT_EQ(err, "SCOUT_REPLAY_GEMMS item '8x8x8:int8': datatype must be bf16, fp16 or fp32");
  EXPECT_FALSE(parse_gemms("0x8x8", &g, &err));
  EXPECT_EQ(err, "SCOUT_REPLAY_GEMMS item '0x8x8': dimensions must be 1..65536");
  EXPECT_EQ(default_gemms().size(), 2u);
}

// A collective class whose algorithm or protocol NCCL did not report: the id leaves the part out
// instead of an empty field.
TEST(ReplayRecipes, CollectiveIdsHaveNoEmptyField) {
  RecipePlan p;
  p.colls = {CollClass{"Broadcast", "int8", 1, 32768, "", "LL128", {0, 1, 2, 3}},
             CollClass{"AllGather", "int8", 1, 4096, "RING", "", {4, 5}},
             CollClass{"AllReduce", "float32", 4, 1024, "", "", {0, 1, 2}}};
  auto rs = build_recipes(p);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].id, "coll:Broadcast:int8:32768:LL128:[0,1,2,3]");
  EXPECT_EQ(rs[1].id, "coll:AllGather:int8:4096:RING:[4,5]");
  EXPECT_EQ(rs[2].id, "coll:AllReduce:float32:1024:[0,1,2]");
}

TEST(ReplayRecipes, BuilderOrdersCapsAndNames) {
  RecipePlan p;
  p.gemms = {{64, 64, 64, "fp32"}, {64, 64, 64, "fp32"}};
  CollClass c{"AllReduce", "bfloat16", 2, uint64_t(1) << 30, "RING", "SIMPLE", {2, 3}};
  p.colls = {c};
  p.links = {{3, 2}};
  p.seed = 9;
  p.max_coll_bytes = 1 << 20;
  auto rs = build_recipes(p);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[0].id, "gemm:fp32:64x64x64");
  EXPECT_EQ(rs[1].id, "gemm:fp32:64x64x64#2");
  EXPECT_EQ(rs[2].id, "coll:AllReduce:bfloat16:524288:RING/SIMPLE:[2,3]");
  EXPECT_EQ(rs[2].coll.count, 524288u);  // capped to 1 MiB of bfloat16
  EXPECT_EQ(rs[3].id, "link:3->2");
  EXPECT_EQ(rs[3].src, 3);
  EXPECT_EQ(rs[3].bytes, uint64_t(4) << 20);
  EXPECT_EQ(rs[0].iters, 10);
  EXPECT_EQ(rs[3].iters, 10);  // iters only matter for GEMMs
  for (const auto& r : rs) {
    EXPECT_EQ(r.seed, 9u);
    Recipe back;
    std::string err;
    ASSERT_TRUE(from_json(to_json(r), &back, &err)) << err;
    EXPECT_EQ(back.id, r.id);
    EXPECT_EQ(back.kind, r.kind);
    EXPECT_EQ(back.coll, r.coll);
    EXPECT_EQ(back.gemm, r.gemm);
  }
}

TEST(ReplayRecipes, PairsAndClasses) {
  EXPECT_EQ(pairs_of({{1, 2}, {2, 3}, {1, 2}}), (std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 3}, {3, 2}}));
  CollClassSet s(2);
  CollClass a{"AllReduce", "float32", 4, 10, "RING", "LL", {0, 1}};
  CollClass b = a;
  b.count = 20;
  CollClass c = a;
  c.func = "AllGather";
  s.add(a);
  s.add(a);
  s.add(b);
  s.add(c);
  EXPECT_EQ(s.classes().size(), 2u);
  EXPECT_EQ(s.dropped(), 1u);
}

}  // namespace
