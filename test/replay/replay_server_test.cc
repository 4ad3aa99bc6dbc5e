// The scout-replay protocol (replay/server.h) over the emulated backend.
#include <gtest/gtest.h>

#include "replay/emu_backend.h"
#include "replay/server.h"
#include "replay/vote.h"
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
  EXPECT_EQ(ready["answers"][0]["digest"], fp_hex(contract_digest(c)));
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

}  // namespace
