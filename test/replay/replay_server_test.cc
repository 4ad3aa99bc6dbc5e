// The scout-replay protocol (replay/server.h) over the emulated backend.
#include <gtest/gtest.h>

#include <algorithm>

#include "replay/emu_backend.h"
#include "replay/server.h"
#include "common/hex.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::replay;
using nlohmann::json;

json call(ReplayServer& s, const json& req, bool* quit = nullptr) {
  bool q = false;
  json a = json::parse(s.handle(req.dump(), &q));
  if (quit) *quit = q;
  return a;
}

TEST(ReplayServer, PrepareRunQuit) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  RecipePlan plan;
  plan.gemms = {{64, 64, 64, "fp32"}};
  plan.links = {{0, 1}};
  auto rs = build_recipes(plan);
  Contract c{3, {rs[0].id, rs[1].id}, {0, 1, 2}};
  json recipes = json::array();
  for (auto& r : rs) recipes.push_back(to_json(r));
  json parts = json::array({to_json(Participant{0, "GPU-sim-node0-0", 0}),
                            to_json(Participant{1, "GPU-sim-node0-1", 1}), to_json(Participant{2, "GPU-real-2", 2})});
  json ready =
      call(server, {{"op", "prepare"}, {"contract", to_json(c)}, {"participants", parts}, {"recipes", recipes}});
  ASSERT_EQ(ready["op"], "ready") << ready.dump();
  EXPECT_EQ(ready["cycle"], 3);
  ASSERT_EQ(ready["answers"].size(), 3u);
  EXPECT_EQ(ready["answers"][0]["digest"], scout::shm::fp_hex(contract_digest(c)));
  EXPECT_EQ(ready["answers"][0]["gpu"]["ready"], true);
  EXPECT_EQ(ready["answers"][2]["gpu"]["ready"], false);
  EXPECT_EQ(ready["answers"][2]["gpu"]["reason"], "not an emulated GPU (GPU-real-2)");

  json wrong = call(server, {{"op", "run"}, {"cycle", 4}, {"admitted", {rs[0].id}}, {"deadline_ms", 1000}});
  EXPECT_EQ(wrong["op"], "error");
  EXPECT_EQ(wrong["error"], "run for cycle 4 but cycle 3 is prepared");

  json res = call(server, {{"op", "run"}, {"cycle", 3}, {"admitted", {rs[0].id, rs[1].id}}, {"deadline_ms", 10000}});
  ASSERT_EQ(res["op"], "result") << res.dump();
  // GEMM: 3 participants x 2 rounds; link 0->1: 2 rounds.
  ASSERT_EQ(res["samples"].size(), 8u);
  EXPECT_EQ(res["samples"][2]["gpu"], "GPU-real-2");
  EXPECT_EQ(res["samples"][2]["status"], "ok");  // the emulated backend ran it; the contract would not admit it
  EXPECT_EQ(res["samples"][3]["recipe"], "link:0->1");
  EXPECT_EQ(res["samples"][3]["fp"], res["samples"][3]["expected_fp"]);

  json again = call(server, {{"op", "run"}, {"cycle", 3}, {"admitted", json::array()}, {"deadline_ms", 1}});
  EXPECT_EQ(again["error"], "run before prepare");
  EXPECT_EQ(call(server, json::parse("{\"op\":\"fly\"}"))["error"], "unknown op 'fly'");
  bool q = false;
  EXPECT_EQ(json::parse(server.handle("not json", &q))["op"], "error");
  EXPECT_EQ(call(server, {{"op", "quit"}}, &q)["op"], "bye");
  EXPECT_TRUE(q);
}

bool all_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A cycle with link recipe link:1->6 prepared on the node of rank 1 (the sender) and rank 6
// (the receiver): on the emulated backend both ranks are participants of one server.
json prepare_link(ReplayServer& server, Recipe* link) {
  RecipePlan plan;
  plan.links = {{1, 6}};
  auto rs = build_recipes(plan);
  *link = rs[0];
  Contract c{9, {rs[0].id}, {1, 6}};
  json parts =
      json::array({to_json(Participant{1, "GPU-sim-node0-1", 1}), to_json(Participant{6, "GPU-sim-node1-6", 2})});
  return call(server,
              {{"op", "prepare"}, {"contract", to_json(c)}, {"participants", parts}, {"recipes", {to_json(rs[0])}}});
}

json link_end(ReplayServer& s, const std::string& recipe, int peer, const std::string& uid, const char* role = "recv") {
  return call(s, {{"op", "link_end"},
                  {"cycle", 9},
                  {"recipe", recipe},
                  {"role", role},
                  {"peer", to_json(Participant{peer, "GPU-sim-node0-" + std::to_string(peer), 1})},
                  {"uid", uid},
                  {"deadline_ms", 5000}});
}

TEST(ReplayServer, LinkIdBeforePrepareIsAnError) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  json a = call(server, {{"op", "link_id"}, {"cycle", 9}, {"recipe", "link:1->6"}, {"role", "send"}});
  EXPECT_EQ(a, json({{"op", "error"}, {"error", "link_id before prepare"}}));
  json e = link_end(server, "link:1->6", 1, std::string(256, '0'));
  EXPECT_EQ(e, json({{"op", "error"}, {"error", "link_end before prepare"}}));
}

TEST(ReplayServer, LinkIdOfThePreparedSender) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  Recipe link;
  ASSERT_EQ(prepare_link(server, &link)["op"], "ready");
  ASSERT_EQ(link.id, "link:1->6");
  json a = call(server, {{"op", "link_id"}, {"cycle", 9}, {"recipe", "link:1->6"}, {"role", "send"}});
  ASSERT_EQ(a["op"], "link_id") << a.dump();
  EXPECT_EQ(a["cycle"], 9);
  EXPECT_EQ(a["recipe"], "link:1->6");
  const std::string uid = a["uid"].get<std::string>();
  EXPECT_EQ(uid.size(), 256u);
  EXPECT_TRUE(all_hex(uid)) << uid;
  json b = call(server, {{"op", "link_id"}, {"cycle", 9}, {"recipe", "link:1->6"}, {"role", "send"}});
  EXPECT_NE(b["uid"], a["uid"]);  // a fresh id each time
  json other = call(server, {{"op", "link_id"}, {"cycle", 8}, {"recipe", "link:1->6"}, {"role", "send"}});
  EXPECT_EQ(other["error"], "link for cycle 8 but cycle 9 is prepared");
}

TEST(ReplayServer, LinkEndAsReceiverRunsEveryRound) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  Recipe link;
  ASSERT_EQ(prepare_link(server, &link)["op"], "ready");
  ASSERT_EQ(link.rounds, 2);
  json a = link_end(server, "link:1->6", 1, std::string(128, 'a') + std::string(128, '7'));
  ASSERT_EQ(a["op"], "result") << a.dump();
  EXPECT_EQ(a["cycle"], 9);
  ASSERT_EQ(a["samples"].size(), 2u);
  Sample want = backend.run_link(link, {1, "GPU-sim-node0-1", 1}, {6, "GPU-sim-node1-6", 2}, 0);
  for (int round = 0; round < 2; ++round) {
    Sample s;
    std::string err;
    ASSERT_TRUE(from_json(a["samples"][round], &s, &err)) << err;
    EXPECT_EQ(s.recipe, "link:1->6");
    EXPECT_EQ(s.round, round);
    EXPECT_EQ(s.global_rank, 6);
    EXPECT_EQ(s.gpu, "GPU-sim-node1-6");
    EXPECT_EQ(s.peer, 1);
    EXPECT_EQ(s.status, SampleStatus::kOk);
    EXPECT_TRUE(s.expected_known);
    EXPECT_EQ(s.expected_fp, want.expected_fp);
    EXPECT_EQ(s.fp, s.expected_fp);
  }
  // The sender's end that ran gives no sample.
  json send = link_end(server, "link:1->6", 6, std::string(256, 'f'), "send");
  ASSERT_EQ(send["op"], "result") << send.dump();
  EXPECT_EQ(send["samples"], json::array());
}

TEST(ReplayServer, LinkEndWithAShortIdFails) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  Recipe link;
  ASSERT_EQ(prepare_link(server, &link)["op"], "ready");
  json a = link_end(server, "link:1->6", 1, "0123456789");
  ASSERT_EQ(a["op"], "result") << a.dump();
  ASSERT_EQ(a["samples"].size(), 2u);  // one per round, as the CUDA end
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(a["samples"][round]["status"], "failed");
    EXPECT_EQ(a["samples"][round]["global_rank"], 6);
    EXPECT_EQ(a["samples"][round]["peer"], 1);
    EXPECT_EQ(a["samples"][round]["round"], round);
    EXPECT_EQ(a["samples"][round]["reason"], "bootstrap id of 5 bytes, not 128");
  }
}

TEST(ReplayServer, LinkEndOfAnotherRecipeOrPeerIsAnError) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  Recipe link;
  ASSERT_EQ(prepare_link(server, &link)["op"], "ready");
  const std::string uid(256, 'c');
  EXPECT_EQ(link_end(server, "link:2->6", 2, uid),
            json({{"op", "error"}, {"error", "no prepared link recipe 'link:2->6'"}}));
  EXPECT_EQ(link_end(server, "link:1->6", 3, uid),
            json({{"op", "error"}, {"error", "peer 3 is not the other end of link:1->6"}}));
  // As the sender, the other end is the receiver (6), not the sender itself.
  EXPECT_EQ(link_end(server, "link:1->6", 1, uid, "send"),
            json({{"op", "error"}, {"error", "peer 1 is not the other end of link:1->6"}}));
  json missing = call(server, {{"op", "link_end"}, {"cycle", 9}, {"recipe", "link:1->6"}, {"role", "recv"}});
  EXPECT_EQ(missing["op"], "error");
}

TEST(ReplayServer, LinkEndOfARankThatIsNotAParticipantIsAnError) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  RecipePlan plan;
  plan.links = {{1, 6}};
  auto rs = build_recipes(plan);
  Contract c{9, {rs[0].id}, {1}};
  json parts = json::array({to_json(Participant{1, "GPU-sim-node0-1", 1})});
  ASSERT_EQ(
      call(server,
           {{"op", "prepare"}, {"contract", to_json(c)}, {"participants", parts}, {"recipes", {to_json(rs[0])}}})["op"],
      "ready");
  EXPECT_EQ(link_end(server, "link:1->6", 1, std::string(256, 'c')),
            json({{"op", "error"}, {"error", "rank 6 is not a participant"}}));
}

}  // namespace
