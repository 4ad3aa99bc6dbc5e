// The scout-replay protocol (replay/server.h) over the emulated backend.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <cstdio>

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

// The second adversarial trial's hostile requests: each is answered by one error line (the old
// server aborted with rc 134 on wrong JSON types, turned a 50 KB prepare+run into a 117 MB answer,
// accepted a 10^6 x 10^6 x 10^6 GEMM and a 2^62-byte link, and overflowed on deadline INT64_MAX).
namespace hostile {

json parts(int n) {
  json p = json::array();
  for (int i = 0; i < n; ++i) p.push_back(to_json(Participant{i, "GPU-sim-node0-" + std::to_string(i), i}));
  return p;
}

json prepare(ReplayServer& s, const json& recipes, int nparts = 2, uint64_t cycle = 5) {
  json ids = json::array();
  for (const auto& r : recipes) ids.push_back(r.value("id", std::string("?")));
  json members = json::array();
  for (int i = 0; i < nparts; ++i) members.push_back(i);
  return call(s, {{"op", "prepare"},
                  {"contract", {{"cycle", cycle}, {"recipes", ids}, {"members", members}}},
                  {"participants", parts(nparts)},
                  {"recipes", recipes}});
}

json gemm(int64_t m, int64_t n, int64_t k, const std::string& id = "g") {
  return {{"id", id}, {"kind", "gemm"}, {"seed", 1}, {"rounds", 2}, {"iters", 1},
          {"gemm", {{"m", m}, {"n", n}, {"k", k}, {"dtype", "fp32"}}}};
}

}  // namespace hostile

TEST(ReplayServerHostile, WrongTypesAreOneErrorLineNeverAnAbort) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  ASSERT_EQ(hostile::prepare(server, json::array({hostile::gemm(64, 64, 64)}))["op"], "ready");
  const std::vector<std::string> lines = {
      R"({"op":"run","cycle":"x","admitted":[],"deadline_ms":10})",
      R"({"op":"run","cycle":5,"admitted":"g","deadline_ms":10})",
      R"({"op":"run","cycle":5,"admitted":[1],"deadline_ms":10})",
      R"({"op":"run","cycle":5,"admitted":[],"deadline_ms":"soon"})",
      R"({"op":"link_id","cycle":5,"recipe":"g","role":5})",
      R"({"op":"link_id","cycle":-1,"recipe":"g","role":"send"})",
      R"({"op":"link_end","cycle":5,"recipe":["g"],"role":"recv"})",
      R"({"op":"prepare","contract":{"cycle":"1","recipes":[],"members":[]},"participants":[],"recipes":[]})",
      R"({"op":"prepare","contract":{"cycle":1,"recipes":[],"members":[]},"participants":[{"global_rank":1e300,"gpu":"x","cuda_dev":0}],"recipes":[]})",
      R"({"op":"prepare","contract":{"cycle":1,"recipes":[],"members":[]},"participants":{},"recipes":[]})",
      "{\"op\":\"fl\xff\xfey\"}",
      R"({"op":7})",
      R"([1,2,3])",
  };
  for (const std::string& l : lines) {
    bool q = false;
    std::string out;
    ASSERT_NO_THROW(out = server.handle(l, &q)) << l;
    json a = json::parse(out);
    EXPECT_EQ(a["op"], "error") << l << " -> " << out;
    EXPECT_FALSE(q);
  }
}

TEST(ReplayServerHostile, SizesBeyondTheLimitsAreRefusedWithTheReason) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend, uint64_t(2) << 30);  // SCOUT_REPLAY_MAX_MEM 2 GiB
  json a = hostile::prepare(server, json::array({hostile::gemm(1000000, 1000000, 1000000)}));
  EXPECT_EQ(a["error"], "recipe: integer out of range 1..65536") << a.dump();
  a = hostile::prepare(server, json::array({hostile::gemm(65536, 65536, 65536)}));
  EXPECT_EQ(a["error"],
            "recipe \"g\" needs 51539607552 bytes, more than the replay memory limit of 2147483648 (SCOUT_REPLAY_MAX_MEM)");
  json link = {{"id", "link:0->1"}, {"kind", "link"}, {"seed", 1}, {"rounds", 1},
               {"link", {{"src", 0}, {"dst", 1}, {"bytes", uint64_t(1) << 62}}}};
  a = hostile::prepare(server, json::array({link}));
  EXPECT_EQ(a["error"], "recipe \"link:0->1\" needs 4611686018427387904 bytes, more than the replay memory limit of "
                        "2147483648 (SCOUT_REPLAY_MAX_MEM)");
  link["link"]["bytes"] = uint64_t(1) << 63;  // int64_t(bytes) was negative: passed the old budget check
  EXPECT_EQ(hostile::prepare(server, json::array({link}))["op"], "error");
  // The 50 KB prepare that asked for 2.17 GB of samples: 400 GEMM recipes x 64 GPUs x 16 rounds.
  json many = json::array();
  for (int i = 0; i < 400; ++i) {
    json g = hostile::gemm(16, 16, 16, "g" + std::to_string(i));
    g["rounds"] = 16;
    many.push_back(g);
  }
  a = hostile::prepare(server, many, 64);
  EXPECT_EQ(a["error"], "prepare: the recipes would give more than 16384 samples (rounds x GPUs, summed)");
  // Too many participants.
  a = hostile::prepare(server, json::array(), 1025);
  EXPECT_EQ(a["error"], "prepare: at most 1024 participants and 4096 recipes");
}

TEST(ReplayServerHostile, DeadlineInt64MaxIsClampedAndRunsEveryRecipe) {
  scout::testing::TempDir dir;
  EmuBackend backend(dir.path(), "j");
  ReplayServer server(&backend);
  ASSERT_EQ(hostile::prepare(server, json::array({hostile::gemm(64, 64, 64)}))["op"], "ready");
  json res = call(server, {{"op", "run"}, {"cycle", 5}, {"admitted", {"g"}}, {"deadline_ms", INT64_MAX}});
  ASSERT_EQ(res["op"], "result") << res.dump();
  ASSERT_EQ(res["samples"].size(), 4u);  // 2 GPUs x 2 rounds
  for (const auto& s : res["samples"]) EXPECT_EQ(s["status"], "ok") << s.dump();  // none skipped for "deadline"
  ASSERT_EQ(hostile::prepare(server, json::array({hostile::gemm(64, 64, 64)}))["op"], "ready");
  res = call(server, {{"op", "run"}, {"cycle", 5}, {"admitted", {"g"}}, {"deadline_ms", INT64_MIN}});
  ASSERT_EQ(res["op"], "result");
  for (const auto& s : res["samples"]) EXPECT_EQ(s["reason"], "deadline");  // clamped to 0: already past
}

// The program itself: a 300 MB line is refused without being held, `--max-mem abc` and `-5` are
// refused at start, and the answers keep coming (no abort).
TEST(ReplayServerHostile, ProgramCapsLinesAndValidatesItsFlags) {
  scout::testing::TempDir dir;
  const std::string exe = scout::testing::build_path("bin/scout-replay");
  for (const char* bad : {"abc", "-5", "1", "99999999999999999999999"}) {
    const std::string cmd = exe + " --job j --shm-dir " + dir.path() + " --max-mem " + bad + " </dev/null 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[512] = {};
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, p);
    const int st = ::pclose(p);
    EXPECT_EQ(WEXITSTATUS(st), 2) << bad;
    EXPECT_NE(std::string(buf, n).find("--max-mem"), std::string::npos) << std::string(buf, n);
  }
  // A 300 MB request line, then a valid quit: one error for the line, then "bye"; memory stays
  // bounded (the line is never held: the process is limited to 256 MB of address space here).
  const std::string in = dir.path() + "/in";
  {
    FILE* f = std::fopen(in.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string chunk(1 << 20, 'x');
    std::fputs("{\"op\":\"", f);
    for (int i = 0; i < 300; ++i) std::fwrite(chunk.data(), 1, chunk.size(), f);
    std::fputs("\"}\n{\"op\":\"quit\"}\n", f);
    std::fclose(f);
  }
  const std::string cmd = "ulimit -v 262144; " + exe + " --job j --shm-dir " + dir.path() + " <" + in + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(st), 0) << out;
  EXPECT_EQ(out, "{\"op\":\"error\",\"error\":\"request line longer than 1048576 bytes: refused\"}\n{\"op\":\"bye\"}\n");
}
