// A job whose environment already names another profiler plugin in NCCL_PROFILER_PLUGIN, run with
// `scout run` (docs/cli.md "scout run"; docs/plugin.md "A second profiler plugin"): scout run moves
// that plugin to SCOUT_PROFILER_DELEGATE and says so in one line at start; scout-sim loads scout as
// NCCL does, scout forwards every callback; the other plugin's own output (the Inspector-like test
// plugin, test/profdelegate/) has every collective of every rank, measured, with no value that was
// not its own; and scout's findings are those of the same job run without the other plugin.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

struct Job {
  ProcessResult run;
  std::string store;
};

// `scout run --job JOB -- scout-sim` (8 ranks, TP=2 PP=2, seed 7, an SDC on rank 5 in the world
// Broadcast of step 10), with `extra` in the environment.
Job run_job(const TempDir& d, const std::string& job, std::map<std::string, std::string> extra) {
  std::map<std::string, std::string> env = {{"SCOUT_SHM_DIR", d.path() + "/shm"},
                                            {"SCOUT_STATE_DIR", d.path() + "/state"},
                                            {"SCOUT_HOST", "node0"},
                                            {"SCOUT_JOB_ID", ""},
                                            {"TORCHELASTIC_RUN_ID", ""},
                                            {"SLURM_JOB_ID", ""},
                                            {"NCCL_PROFILER_PLUGIN", ""},
                                            {"SCOUT_PROFILER_DELEGATE", ""},
                                            {"SCOUT_GPU", ""}};
  for (auto& [k, v] : extra) env[k] = v;
  fs::create_directories(d.path() + "/shm");
  Job j;
  j.run = run_process({build_path("bin/scout"), "run", "--job", job, "--keep-segments", "--",
                       build_path("bin/scout-sim"), "--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "12", "--seed",
                       "7", "--fault", "sdc:rank=5,op=111", "--truth", d.path() + "/" + job + ".truth.jsonl"},
                      env, 120);
  j.store = d.path() + "/state/" + job + "/node-0.db";
  return j;
}

nlohmann::json scout_json(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_path("bin/scout")};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, {}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json all = nlohmann::json::array();
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) all.push_back(nlohmann::json::parse(line));
  return all;
}

// What a finding says, without its times: kind, verdict, suspects' global ranks, communicator, key.
std::set<std::string> finding_words(const std::string& store) {
  std::set<std::string> out;
  for (const auto& f : scout_json({"findings", "--json", "--store", store})) {
    std::string s = f["kind"].get<std::string>() + " " + f["verdict"].get<std::string>() + " suspects";
    for (const auto& su : f["suspects"]) s += " " + std::to_string(su["global_rank"].get<int>());
    s += " in " + (f["comm"].is_object() ? f["comm"]["name"].get<std::string>() : std::string("-"));
    if (f.contains("key") && !f["key"].is_null()) {
      s += " " + f["key"]["func"].get<std::string>() + " #" + std::to_string(f["key"]["seq"].get<int>());
    }
    out.insert(s);
  }
  return out;
}

TEST(DelegateRun, BothPluginsSeeEveryCollectiveAndScoutsFindingsAreUnchanged) {
  TempDir d;
  const std::string other = build_path("lib/libnccl-profiler-inspectish.so");
  fs::create_directories(d.path() + "/inspector");
  Job alone = run_job(d, "alone", {});
  Job both = run_job(d, "both",
                     {{"NCCL_PROFILER_PLUGIN", other},
                      {"INSPECTISH_DUMP_DIR", d.path() + "/inspector"},
                      {"INSPECTISH_P2P", "0"}});
  ASSERT_EQ(alone.run.exit_code, 0) << alone.run.err;
  ASSERT_EQ(both.run.exit_code, 0) << both.run.err;

  // One line at start says where the other plugin went.
  EXPECT_EQ(both.run.err.substr(0, both.run.err.find('\n') + 1),
            "scout: NCCL_PROFILER_PLUGIN=" + other +
                " moved to SCOUT_PROFILER_DELEGATE: scout loads it and forwards every profiler event to it\n");
  EXPECT_EQ(alone.run.err.find("SCOUT_PROFILER_DELEGATE"), std::string::npos);

  // scout's findings: the same, and the injected SDC among them.
  const std::set<std::string> fa = finding_words(alone.store);
  EXPECT_EQ(finding_words(both.store), fa);
  EXPECT_EQ(fa.count("sdc attributed suspects 5 in world Broadcast #1"), 1u) << ::testing::PrintToString(fa);

  // The other plugin's own output: per (communicator, rank) every collective scout completed,
  // each timed, and no value it was given that was not its own.
  std::map<std::string, int> collectives;  // comm hash -> collectives scout completed
  const nlohmann::json status = scout_json({"status", "--json", "--store", both.store});
  for (const auto& c : status[0]["comms"]) {
    int n = 0;
    for (const auto& [func, seq] : c["last_seq"].items()) n += seq.get<int>();
    if (n > 0) collectives[c["hash"].get<std::string>()] = n;
  }
  ASSERT_EQ(collectives.size(), 9u);  // world, 4 dp, 4 tp (the pp communicators only send and receive)
  std::map<std::pair<std::string, int>, int> ops;  // (comm, rank) -> collectives measured
  int files = 0, finalized = 0;
  for (const auto& e : fs::directory_iterator(d.path() + "/inspector")) {
    ++files;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("finalize")) {
        ++finalized;
        EXPECT_EQ(j["foreign"], 0) << line;
        continue;
      }
      EXPECT_GT(j["gpu_ns"].get<uint64_t>(), 0u) << line;
      ops[{j["comm"].get<std::string>(), j["rank"].get<int>()}]++;
    }
  }
  EXPECT_EQ(files, 8);  // one per rank process
  int pairs = 0;
  for (const auto& [comm, n] : collectives) {
    for (int r = 0; r < 8; ++r) {
      auto it = ops.find({comm, r});
      if (it == ops.end()) continue;
      ++pairs;
      EXPECT_EQ(it->second, n) << comm << " rank " << r;
    }
  }
  EXPECT_EQ(pairs, int(ops.size()));
  EXPECT_EQ(pairs, 24);      // 8 ranks in world, one dp and one tp communicator each
  EXPECT_EQ(finalized, 32);  // and a pp one: every communicator of every rank, finalized in both plugins

  // scout's own counters: nothing misrouted to it.
  ProcessResult dump = run_process({build_path("bin/scout"), "dump", "--no-ops", "--dir", d.path() + "/shm", "--job",
                                    "both"},
                                   {}, 60);
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  std::istringstream in(dump.out);
  int comm_lines = 0;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] == "segment") {
      EXPECT_EQ(j["events_bad_handle"], 0);
      EXPECT_EQ(j["events_unknown"], 0);
    } else if (j["type"] == "comm") {
      ++comm_lines;
      EXPECT_EQ(j["bad_handles"], 0);
      EXPECT_EQ(j["ignored_events"], 0);
    }
  }
  EXPECT_EQ(comm_lines, 32);
}

}  // namespace
