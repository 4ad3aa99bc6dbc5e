// Collective recipes across nodes, the scout-replay side (replay/server.h coll_id and coll_end,
// Backend::run_coll_end): each node's server runs its members of a class whose other members are
// on another node. Over the emulated backend the two nodes' halves give what one run_coll over
// every member gives, and an emulated fault gives the verdict of judge.h's coll rule (a corrupting
// ring link: sdc on its receiver; a GPU corrupting its input: every member wrong the same way).
// Over the fake CUDA table (test/support/fake_cuda_libs.h): one non-blocking communicator per
// local member, aborted at the deadline when a member never comes.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/clock.h"
#include "replay/cuda_backend.h"
#include "replay/emu_backend.h"
#include "replay/judge.h"
#include "replay/server.h"
#include "test/support/fake_cuda_libs.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::replay;
using nlohmann::json;
using scout::shm::mono_ns;

json call(ReplayServer& s, const json& req) {
  bool q = false;
  return json::parse(s.handle(req.dump(), &q));
}

// Members 0, 1 on node 0 and 6, 7 on node 1; an AllReduce class of 1024 float32 over all four.
const std::vector<Participant> kMembers = {
    {0, "GPU-sim-node0-0", 0}, {1, "GPU-sim-node0-1", 1}, {6, "GPU-sim-node1-6", 0}, {7, "GPU-sim-node1-7", 1}};

Recipe coll_recipe() {
  RecipePlan p;
  CollClass c;
  c.func = "AllReduce";
  c.datatype = "float32";
  c.count = 1024;
  c.proto = "LL128";
  c.ranks = {0, 1, 6, 7};
  p.colls = {c};
  p.seed = 5;
  return build_recipes(p)[0];
}

// The cycle prepared on one node: its two members are the participants.
json prepare(ReplayServer& server, int node) {
  const Recipe r = coll_recipe();
  Contract c{9, {r.id}, {0, 1, 6, 7}};
  json parts = json::array({to_json(kMembers[size_t(2 * node)]), to_json(kMembers[size_t(2 * node + 1)])});
  return call(server, {{"op", "prepare"}, {"contract", to_json(c)}, {"participants", parts}, {"recipes", {to_json(r)}}});
}

json coll_end(ReplayServer& server, const std::string& uid, std::vector<Participant> members = kMembers) {
  json m = json::array();
  for (const Participant& p : members) m.push_back(to_json(p));
  return call(server, {{"op", "coll_end"},
                       {"cycle", 9},
                       {"recipe", coll_recipe().id},
                       {"members", m},
                       {"uid", uid},
                       {"deadline_ms", 5000}});
}

std::vector<Sample> samples_of(const json& a) {
  std::vector<Sample> out;
  for (const auto& x : a["samples"]) {
    Sample s;
    std::string err;
    EXPECT_TRUE(from_json(x, &s, &err)) << err;
    out.push_back(s);
  }
  return out;
}

// Both nodes' halves of the collective (node 0 makes the id), concatenated.
std::vector<Sample> both_nodes(const std::string& dir) {
  EmuBackend b0(dir, "j"), b1(dir, "j");
  ReplayServer s0(&b0), s1(&b1);
  EXPECT_EQ(prepare(s0, 0)["op"], "ready");
  EXPECT_EQ(prepare(s1, 1)["op"], "ready");
  json id = call(s0, {{"op", "coll_id"}, {"cycle", 9}, {"recipe", coll_recipe().id}});
  EXPECT_EQ(id["op"], "coll_id") << id.dump();
  std::vector<Sample> out = samples_of(coll_end(s0, id.value("uid", "")));
  for (Sample& s : samples_of(coll_end(s1, id.value("uid", "")))) out.push_back(s);
  return out;
}

TEST(ReplayCollEnd, TwoNodesHalvesAreTheWholeCollective) {
  scout::testing::TempDir dir;
  const std::vector<Sample> got = both_nodes(dir.path());
  ASSERT_EQ(got.size(), 8u);  // 2 members x 2 rounds on each node
  EmuBackend whole(dir.path(), "j");
  const Recipe r = coll_recipe();
  EXPECT_EQ(r.id, "coll:AllReduce:float32:1024:LL128:[0,1,6,7]");
  for (int round = 0; round < 2; ++round) {
    const std::vector<Sample> want = whole.run_coll(r, kMembers, round);
    for (const Sample& s : got) {
      if (s.round != round) continue;
      auto w = std::find_if(want.begin(), want.end(), [&](const Sample& x) { return x.global_rank == s.global_rank; });
      ASSERT_NE(w, want.end());
      EXPECT_EQ(s.status, SampleStatus::kOk) << s.reason;
      EXPECT_EQ(s.gpu, w->gpu);
      EXPECT_EQ(s.fp, w->fp);
      EXPECT_EQ(s.expected_fp, w->expected_fp);
      EXPECT_EQ(s.fp, s.expected_fp);
      EXPECT_EQ(s.ns, w->ns);
    }
  }
  std::vector<std::pair<int, int>> who;
  for (const Sample& s : got) who.push_back({s.global_rank, s.round});
  EXPECT_EQ(who, (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {6, 0}, {7, 0}, {6, 1}, {7, 1}}));
  const CycleVerdict v = judge({r}, {}, got, {}, OutlierRule{});
  EXPECT_EQ(v.outcome, Outcome::kPass);
}

TEST(ReplayCollEnd, ACorruptingRingLinkIntoRankSixIsSdcOnSix) {
  scout::testing::TempDir dir;
  EmuDeviceState six;
  six.links_in["GPU-sim-node0-1"].flip = true;  // rank 1 is 6's ring predecessor in [0,1,6,7]
  std::string err;
  ASSERT_TRUE(write_emu_device(emu_device_path(dir.path(), "j", "GPU-sim-node1-6"), six, &err)) << err;
  const std::vector<Sample> got = both_nodes(dir.path());
  const CycleVerdict v = judge({coll_recipe()}, {}, got, {}, OutlierRule{});
  EXPECT_EQ(v.outcome, Outcome::kFail);
  ASSERT_EQ(v.sdc.size(), 1u);
  EXPECT_EQ(v.sdc[0].global_rank, 6);
  EXPECT_EQ(v.sdc[0].check, SdcCheck::kColl);
  EXPECT_EQ(v.sdc[0].gpu, "GPU-sim-node1-6");
  EXPECT_EQ(v.recipes[0].reason, "members received a result that differs from the expected one");
}

TEST(ReplayCollEnd, AGpuCorruptingItsInputMakesEveryMemberWrongTheSameWay) {
  scout::testing::TempDir dir;
  EmuDeviceState seven;
  seven.gemm_flip = true;  // gpusdc on rank 7: its input is corrupted, so is every member's sum
  std::string err;
  ASSERT_TRUE(write_emu_device(emu_device_path(dir.path(), "j", "GPU-sim-node1-7"), seven, &err)) << err;
  const std::vector<Sample> got = both_nodes(dir.path());
  ASSERT_EQ(got.size(), 8u);
  for (const Sample& s : got) {
    EXPECT_NE(s.fp, s.expected_fp) << s.global_rank;
    EXPECT_EQ(s.fp, got[0].fp);  // node 0's members see the same wrong sum as node 1's
  }
  const CycleVerdict v = judge({coll_recipe()}, {}, got, {}, OutlierRule{});
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_TRUE(v.sdc.empty());
  EXPECT_EQ(v.recipes[0].reason, "every member's result differs from the expected one (a corrupted input)");
}

TEST(ReplayCollEnd, OnlyTheLowestMembersNodeMakesTheIdAndRequestsAreChecked) {
  scout::testing::TempDir dir;
  EmuBackend b(dir.path(), "j");
  ReplayServer s(&b);
  const std::string id = coll_recipe().id;
  EXPECT_EQ(call(s, {{"op", "coll_id"}, {"cycle", 9}, {"recipe", id}}),
            json({{"op", "error"}, {"error", "coll_id before prepare"}}));
  ASSERT_EQ(prepare(s, 1)["op"], "ready");
  EXPECT_EQ(call(s, {{"op", "coll_id"}, {"cycle", 9}, {"recipe", id}}),
            json({{"op", "error"}, {"error", "coll_id: the lowest member, rank 0, is not a participant"}}));
  EXPECT_EQ(call(s, {{"op", "coll_id"}, {"cycle", 8}, {"recipe", id}}),
            json({{"op", "error"}, {"error", "coll_id for cycle 8 but cycle 9 is prepared"}}));
  EXPECT_EQ(call(s, {{"op", "coll_id"}, {"cycle", 9}, {"recipe", "link:0->6"}}),
            json({{"op", "error"}, {"error", "no prepared collective recipe 'link:0->6'"}}));
  const std::string uid(256, 'a');
  EXPECT_EQ(coll_end(s, uid, {kMembers[0], kMembers[1], kMembers[2]}),
            json({{"op", "error"}, {"error", "coll_end: members must list the recipe's 4 members"}}));
  EXPECT_EQ(coll_end(s, uid, {kMembers[1], kMembers[0], kMembers[2], kMembers[3]}),
            json({{"op", "error"}, {"error", "coll_end: member 0 is rank 1, not 0 of " + id}}));
  // Node 1's members run; a short id fails each of their samples.
  const std::vector<Sample> bad = samples_of(coll_end(s, "abcd"));
  ASSERT_EQ(bad.size(), 4u);
  for (const Sample& x : bad) {
    EXPECT_EQ(x.status, SampleStatus::kFailed);
    EXPECT_EQ(x.reason, "bootstrap id of 2 bytes, not 128");
    EXPECT_TRUE(x.global_rank == 6 || x.global_rank == 7);
  }
  // A server none of whose participants is a member refuses.
  ReplayServer other(&b);
  Contract c{9, {id}, {0, 1, 6, 7}};
  const Recipe r = coll_recipe();
  ASSERT_EQ(call(other, {{"op", "prepare"},
                         {"contract", to_json(c)},
                         {"participants", {to_json(Participant{3, "GPU-sim-node0-3", 0})}},
                         {"recipes", {to_json(r)}}})["op"],
            "ready");
  EXPECT_EQ(coll_end(other, uid), json({{"op", "error"}, {"error", "coll_end: no member of " + id + " is a participant"}}));
}

using scout::testing::fakecuda::F;
using scout::testing::fakecuda::N;
using scout::testing::fakecuda::nccl_libs;
using scout::testing::fakecuda::X;

// A class of two members, both on this host's fake devices 0 and 1.
Recipe pair_recipe() {
  RecipePlan p;
  CollClass c;
  c.func = "AllReduce";
  c.datatype = "float32";
  c.count = 256;
  c.ranks = {0, 1};
  p.colls = {c};
  return build_recipes(p)[0];
}

TEST(ReplayCollEndCuda, MembersJoinOneNonBlockingCommunicatorAndGetTheExactSum) {
  scout::testing::fakecuda::reset();
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);
  ASSERT_EQ(uid.size(), 256u) << err;
  N.pending = 2;
  const std::vector<Sample> got = b.run_coll_end(pair_recipe(), {{0, "", 0}, {1, "", 1}}, {0, 1}, uid,
                                                 mono_ns() + 5'000'000'000);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Sample& s = got[i];
    EXPECT_EQ(s.status, SampleStatus::kOk) << s.reason;
    EXPECT_EQ(s.global_rank, int(i % 2));
    EXPECT_EQ(s.round, int(i / 2));
    EXPECT_TRUE(s.expected_known);  // two members: the sum is exact
    EXPECT_EQ(s.fp, s.expected_fp);
    EXPECT_EQ(s.ns, 1'000'000);  // the fake AllReduce kernel on its device, from CUPTI
  }
  EXPECT_EQ(N.inits, 2);
  EXPECT_EQ(N.init_devices, (std::vector<int>{0, 1}));  // each member's communicator on its own device
  EXPECT_EQ(N.nranks, 2);
  EXPECT_EQ(N.rank, 1);
  EXPECT_EQ(N.config.blocking, 0);
  EXPECT_EQ(bytes_hex(N.id, sizeof(N.id)), uid);
  EXPECT_EQ(N.destroys, 2);
  EXPECT_EQ(N.aborts, 0);
  EXPECT_EQ(X.live["comm"], 0);  // contexts and streams stay with the backend
  EXPECT_EQ(X.live["mem"], 0);
  EXPECT_EQ(F.allocated, 0);
}

TEST(ReplayCollEndCuda, AMemberThatNeverComesAbortsAtTheDeadline) {
  scout::testing::fakecuda::reset();
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);
  N.pending = 1 << 30;  // the other node's member never joins
  const int64_t t0 = mono_ns();
  const std::vector<Sample> got =
      b.run_coll_end(pair_recipe(), {{0, "", 0}, {1, "GPU-elsewhere", -1}}, {0}, uid, t0 + 50'000'000);
  const int64_t took = mono_ns() - t0;
  EXPECT_GE(took, 50'000'000);
  EXPECT_LT(took, 500'000'000);
  ASSERT_EQ(got.size(), 2u);  // rank 0's two rounds
  for (const Sample& s : got) {
    EXPECT_EQ(s.global_rank, 0);
    EXPECT_EQ(s.status, SampleStatus::kFailed);
    EXPECT_EQ(s.reason, "a member did not join the replay communicator by the deadline (aborted)");
  }
  EXPECT_EQ(N.nranks, 2);
  EXPECT_EQ(N.rank, 0);
  EXPECT_EQ(N.aborts, 1);
  EXPECT_EQ(F.peak, 0);  // nothing was allocated
  // A class NCCL replay does not issue on GPUs, and a bad id, fail before any init.
  Recipe bc = pair_recipe();
  bc.coll.func = "Broadcast";
  N = scout::testing::fakecuda::FakeNccl{};
  EXPECT_EQ(b.run_coll_end(bc, {{0, "", 0}, {1, "", 1}}, {0}, uid, mono_ns() + 1'000'000)[0].reason,
            "only AllReduce classes are replayed on GPUs in this version");
  EXPECT_EQ(b.run_coll_end(pair_recipe(), {{0, "", 0}, {1, "", 1}}, {0}, "12", mono_ns() + 1'000'000)[0].reason,
            "bootstrap id is not 128 bytes of hex");
  EXPECT_EQ(N.inits, 0);
}

}  // namespace
