// Checkpoint certification end to end: `scout run` starts the real observer watching a checkpoint
// directory (--ckpt-dir) around scout-sim writing checkpoints in each framework's layout, with
// check cycles of 1 s (SCOUT_CHECK_CYCLE_S=1); then `scout ckpt list/latest/show` are checked
// against what the run must show (docs/certification.md, "What a run shows").
//
// Timing: 160 steps of >= 50 ms put checkpoint N at >= N*50 ms and the fault of step 110 at
// >= 5.5 s, so the two 1 s cycles after checkpoints 20 and 40 (which begin within 1 s of them)
// end before the fault; the observer judges a cycle once it ended and its operations are decided.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::Subprocess;
using scout::testing::TempDir;

struct JobRun {
  std::unique_ptr<TempDir> dir;
  std::map<std::string, std::string> env;
  std::string ckpt;
  ProcessResult result;
};

std::map<std::string, std::string> base_env(const std::string& d) {
  return {{"SCOUT_SHM_DIR", d + "/shm"},
          {"SCOUT_STATE_DIR", d + "/state"},
          {"SCOUT_HOST", "node0"},
          {"SCOUT_CHECK_CYCLE_S", "1"},
          {"SCOUT_OBSERVER_STRAGGLER_MIN_MS", "20"},
          {"SCOUT_OBSERVER_SLOW_MIN_MS", "20"},
          {"SCOUT_JOB_ID", ""},
          {"TORCHELASTIC_RUN_ID", ""},
          {"SLURM_JOB_ID", ""},
          {"NCCL_PROFILER_PLUGIN", ""},
          {"SCOUT_GPU", ""},
          {"SCOUT_CKPT_DIR", ""}};
}

// `scout run --job ck` around scout-sim with `sim_args`, watching <dir>/ckpt.
JobRun run_job(const std::vector<std::string>& sim_args) {
  JobRun r;
  r.dir = std::make_unique<TempDir>();
  const std::string d = r.dir->path();
  fs::create_directories(d + "/shm");
  r.ckpt = d + "/ckpt";
  r.env = base_env(d);
  std::vector<std::string> argv = {build_path("bin/scout"),
                                   "run",
                                   "--job",
                                   "ck",
                                   "--interval",
                                   "100",
                                   "--observer-arg=--ckpt-dir=" + r.ckpt,
                                   "--",
                                   build_path("bin/scout-sim"),
                                   "--ckpt-dir",
                                   r.ckpt,
                                   "--truth",
                                   d + "/truth.jsonl"};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  r.result = run_process(argv, r.env, 180);
  return r;
}

ProcessResult scout(const JobRun& r, std::vector<std::string> args) {
  args.insert(args.begin(), build_path("bin/scout"));
  args.push_back("--job");
  args.push_back("ck");
  return run_process(args, r.env, 60);
}

// step -> the checkpoint's JSON object of `scout ckpt list --json`.
std::map<int64_t, nlohmann::json> list(const JobRun& r) {
  ProcessResult p = scout(r, {"ckpt", "list", "--json"});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  std::map<int64_t, nlohmann::json> m;
  std::istringstream in(p.out);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    m[j["step"].get<int64_t>()] = j;
  }
  return m;
}

std::string states(const std::map<int64_t, nlohmann::json>& m) {
  std::string s;
  for (const auto& [step, j] : m) s += std::to_string(step) + "=" + j["state"].get<std::string>() + " ";
  return s;
}

std::vector<std::string> sdc_args(const std::string& format) {
  return {"--ranks",       "8",
          "--tp",          "4",
          "--steps",       "160",
          "--step-ms",     "50",
          "--ckpt-every",  "20",
          "--ckpt-format", format,
          "--fault",       "sdc:rank=3,step=110"};
}

// What every format must show with an sdc at step 110.
void expect_sdc_run(const JobRun& r, const std::string& format) {
  ASSERT_NE(r.result.exit_code, -1) << r.result.err;
  auto m = list(r);
  ASSERT_TRUE(m.count(20) && m.count(40) && m.count(120) && m.count(140))
      << format << ": " << states(m) << r.result.err;
  for (const auto& [step, j] : m) EXPECT_EQ(j["framework"], format) << step;
  EXPECT_EQ(m[20]["state"], "verified") << format << ": " << states(m) << m[20]["reason"];
  EXPECT_EQ(m[40]["state"], "verified") << format << ": " << states(m) << m[40]["reason"];
  for (int64_t s : {120, 140}) {
    EXPECT_EQ(m[s]["state"], "rejected") << format << " " << s << ": " << states(m);
    EXPECT_NE(m[s]["reason"].get<std::string>().find("sdc finding #"), std::string::npos) << m[s]["reason"];
    EXPECT_EQ(m[s]["finding_ids"].size(), 1u);
  }
  ProcessResult latest = scout(r, {"ckpt", "latest", "--verified"});
  EXPECT_EQ(latest.exit_code, 0) << latest.err;
  bool before_fault = false;
  for (const auto& [step, j] : m)
    if (latest.out == j["path"].get<std::string>() + "\n") before_fault = step < 110;
  EXPECT_TRUE(before_fault) << latest.out << states(m);
}

TEST(CkptE2E, MegatronSdcVerifiesEarlyRejectsLateAndDetectsATamperedCertificate) {
  JobRun r = run_job(sdc_args("megatron"));
  expect_sdc_run(r, "megatron");
  // The certificate of checkpoint 20 (verified): edit its verdict.
  auto m = list(r);
  const std::string file = m[20]["certificate"].get<std::string>();
  ProcessResult ok = scout(r, {"ckpt", "show", m[20]["path"].get<std::string>()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("certificate chain: intact"), std::string::npos) << ok.out;
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  ASSERT_NE(text.find("\"verdict\": \"verified\""), std::string::npos) << text;
  text.replace(text.find("\"verdict\": \"verified\""), 21, "\"verdict\": \"rejected\"");
  fs::remove(file);
  std::ofstream(file) << text;
  ProcessResult bad = scout(r, {"ckpt", "show", std::to_string(m[20]["id"].get<int64_t>())});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("certificate chain: BROKEN: certificate "), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("its content does not match its sha256 (edited)"), std::string::npos) << bad.out;
  ProcessResult latest = scout(r, {"ckpt", "latest", "--verified"});
  EXPECT_EQ(latest.exit_code, 1);
  EXPECT_NE(latest.err.find("certificate chain is broken"), std::string::npos) << latest.err;
}

class EveryFormat : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryFormat, SdcVerifiesEarlyAndRejectsLate) {
  JobRun r = run_job(sdc_args(GetParam()));
  expect_sdc_run(r, GetParam());
}

INSTANTIATE_TEST_SUITE_P(CkptE2E, EveryFormat, ::testing::Values("dcp", "deepspeed", "hf", "nemo"));

TEST(CkptE2E, HealthyRunVerifiesEveryCheckpointWithTwoCyclesAfterIt) {
  JobRun r = run_job({"--ranks", "8", "--tp", "4", "--steps", "160", "--step-ms", "50", "--ckpt-every", "20"});
  auto m = list(r);
  ASSERT_EQ(m.size(), 8u) << states(m) << r.result.err;
  // Checkpoint 80 is >= 4 s before the end of the job: its two cycles end before it.
  for (int64_t s : {20, 40, 60, 80}) EXPECT_EQ(m[s]["state"], "verified") << s << ": " << states(m);
  for (const auto& [step, j] : m) EXPECT_NE(j["state"], "rejected") << step;
  ProcessResult st = scout(r, {"status"});
  EXPECT_NE(st.out.find("checkpoints: 8 ("), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("newest verified: " + r.ckpt + "/iter_"), std::string::npos) << st.out;
  // status --json: the same counts, and the checkpoint `ckpt latest --verified` prints.
  ProcessResult js = scout(r, {"status", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const nlohmann::json ck = nlohmann::json::parse(js.out)["checkpoints"];
  int verified = 0;
  for (const auto& [step, j] : m) verified += j["state"] == "verified";
  EXPECT_EQ(ck["total"], 8);
  EXPECT_EQ(ck["verified"], verified);
  EXPECT_EQ(ck["rejected"], 0);
  EXPECT_EQ(ck["candidates"], 8 - verified);
  ProcessResult latest = scout(r, {"ckpt", "latest", "--verified"});
  ASSERT_EQ(latest.exit_code, 0) << latest.err;
  EXPECT_EQ(ck["newest_verified"]["path"].get<std::string>() + "\n", latest.out) << ck.dump();
  EXPECT_EQ(ck["newest_verified"]["framework"], "megatron");
  EXPECT_EQ(m[ck["newest_verified"]["step"].get<int64_t>()]["path"], ck["newest_verified"]["path"]);
}

TEST(CkptE2E, InconclusiveSdcInATwoRankGroupRejectsToo) {
  // TP 2 and DP 2: the AllReduce of step 111 has two voters, so the sdc is inconclusive.
  JobRun r = run_job({"--ranks", "4", "--tp", "2", "--steps", "160", "--step-ms", "50", "--ckpt-every", "20", "--fault",
                      "sdc:rank=1,step=111"});
  auto m = list(r);
  ASSERT_TRUE(m.count(20) && m.count(120) && m.count(140)) << states(m) << r.result.err;
  EXPECT_EQ(m[20]["state"], "verified") << states(m);
  for (int64_t s : {120, 140}) {
    EXPECT_EQ(m[s]["state"], "rejected") << s << ": " << states(m);
    EXPECT_NE(m[s]["reason"].get<std::string>().find("sdc finding #"), std::string::npos) << m[s]["reason"];
    EXPECT_NE(m[s]["reason"].get<std::string>().find("(inconclusive)"), std::string::npos) << m[s]["reason"];
  }
}

TEST(CkptE2E, DeadVoterLeavesCandidatesWaiting) {
  // Rank 3 dies in step 21, right after checkpoint 20: every cycle after it misses its votes (its
  // peers' operations are never decided), so checkpoint 20 waits; the launcher ends the job.
  JobRun r = run_job({"--ranks", "8", "--tp", "4", "--steps", "160", "--step-ms", "50", "--ckpt-every", "20", "--fault",
                      "crash:rank=3,step=21", "--timeout", "8"});
  auto m = list(r);
  ASSERT_TRUE(m.count(20)) << states(m) << r.result.err;
  EXPECT_EQ(m.size(), 1u) << states(m);
  EXPECT_EQ(m[20]["state"], "candidate") << states(m);
  ProcessResult latest = scout(r, {"ckpt", "latest", "--verified"});
  EXPECT_EQ(latest.exit_code, 1);
  EXPECT_EQ(latest.out, "");
  EXPECT_EQ(latest.err,
            "scout: no verified checkpoint: 1 seen, 1 candidate(s) that cannot verify: the job ended, 0 rejected\n");
}

TEST(CkptE2E, CheckpointHalfWrittenWhenTheJobIsKilledIsNeverACandidate) {
  JobRun r = run_job(
      {"--ranks", "8", "--tp", "4", "--steps", "160", "--step-ms", "50", "--ckpt-every", "20", "--ckpt-kill-at", "60"});
  EXPECT_NE(r.result.exit_code, 0);
  ASSERT_TRUE(fs::exists(r.ckpt + "/iter_0000060/__0_0.distcp"));
  EXPECT_FALSE(fs::exists(r.ckpt + "/iter_0000060/metadata.json"));
  auto m = list(r);
  EXPECT_TRUE(m.count(20) && m.count(40)) << states(m);
  EXPECT_EQ(m.count(60), 0u) << states(m);
}

TEST(CkptE2E, ObserverRestartKeepsDecidedStatesAndIssuesEachCertificateOnce) {
  TempDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/shm");
  auto env = base_env(d);
  env["SCOUT_JOB_ID"] = "ck";
  env["NCCL_PROFILER_PLUGIN"] = build_path("lib/libnccl-profiler-scout.so");
  const std::string ckpt = d + "/ckpt";
  std::vector<std::string> obs = {
      build_path("bin/scout-observer"), "--job", "ck", "--interval", "100", "--ckpt-dir", ckpt};
  JobRun view;  // for scout() and list()
  view.env = env;
  auto first = std::make_unique<Subprocess>(obs, env);
  Subprocess sim(
      {build_path("bin/scout-sim"), "--ranks", "8", "--tp", "4", "--steps", "160", "--step-ms", "50", "--ckpt-every",
       "20", "--ckpt-dir", ckpt, "--fault", "sdc:rank=3,step=110", "--truth", d + "/truth.jsonl"},
      env);
  // Kill the observer (no final pass) once a checkpoint is decided.
  std::map<int64_t, nlohmann::json> before;
  for (int i = 0; i < 200 && sim.running(); ++i) {
    usleep(100'000);
    before = list(view);
    bool decided = false;
    for (const auto& [s, j] : before) decided |= j["state"] != "candidate";
    if (decided) break;
  }
  first->signal(SIGKILL);
  first->wait(10);
  before = list(view);
  Subprocess second(obs, env);
  ProcessResult s = sim.wait(120);
  usleep(1'500'000);
  second.signal(SIGTERM);
  second.wait(30);
  auto after = list(view);
  int decided = 0;
  for (const auto& [step, j] : before) {
    if (j["state"] == "candidate") continue;
    decided++;
    ASSERT_TRUE(after.count(step));
    EXPECT_EQ(after[step]["state"], j["state"]) << step;
    EXPECT_EQ(after[step]["reason"], j["reason"]) << step;
    EXPECT_EQ(after[step]["certificate"], j["certificate"]) << step;
  }
  EXPECT_GT(decided, 0) << states(before);
  // One certificate per decided checkpoint, chain intact across the restart.
  std::map<std::string, int> certs;
  int n_decided = 0;
  for (const auto& [step, j] : after) {
    if (j["state"] == "candidate") continue;
    n_decided++;
    certs[j["certificate"].get<std::string>()]++;
  }
  EXPECT_EQ(int(certs.size()), n_decided);
  int files = 0;
  for (const auto& e : fs::directory_iterator(d + "/state/ck/certificates")) files += e.path().extension() == ".json";
  EXPECT_EQ(files, n_decided);
  ProcessResult show = scout(view, {"ckpt", "show", std::to_string(after.begin()->second["id"].get<int64_t>())});
  EXPECT_NE(show.out.find("certificate chain: intact"), std::string::npos) << show.out;
  EXPECT_EQ(after[120]["state"], "rejected") << states(after);
  EXPECT_EQ(after[140]["state"], "rejected") << states(after);
}

}  // namespace
