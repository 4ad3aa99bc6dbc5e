#include "test/support/observed_job.h"

#include <signal.h>

#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "observer/store/reader.h"
#include "test/support/settle.h"
#include "test/support/tmpdir.h"

namespace scout::testing {

Outcome observed_job(const std::string& job, const std::vector<std::string>& sim_args, size_t expect, bool hung,
                     const std::vector<std::string>& observer_args) {
  TempDir dir;
  const std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()},
      {"SCOUT_STATE_DIR", dir.path() + "/state"},
      {"SCOUT_FP_BUDGET", "0"},
  };
  const std::string store = dir.path() + "/state/" + job + "/node-0.db";
  std::vector<std::string> obs_argv = {build_path("bin/scout-observer"), "--job", job, "--hang-timeout", "1.5",
                                       "--interval", "50"};
  obs_argv.insert(obs_argv.end(), observer_args.begin(), observer_args.end());
  Subprocess observer(obs_argv, env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", dir.path() + "/truth.jsonl"};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  Outcome o;
  std::unique_ptr<Subprocess> sim;
  if (hung) {
    sim = std::make_unique<Subprocess>(argv, env);
  } else {
    o.sim = run_process(argv, env, 120);
  }
  wait_for_findings(store, expect, std::chrono::seconds(hung ? 10 : 5));
  ProcessResult obs = observer.stop(SIGTERM, 30);
  o.observer_err = obs.err;
  EXPECT_EQ(obs.exit_code, 0) << obs.err;
  if (sim) o.sim = sim->stop(SIGTERM, 30);
  o.findings = store::StoreReader::open(store)->findings();
  o.ops = stored_ops(store);
  o.found = named(o.findings);
  o.truth = read_truth(dir.path() + "/truth.jsonl");
  return o;
}

LiveJob::LiveJob(const std::string& name, const std::vector<std::string>& sim_args,
                 const std::vector<std::string>& observer_args, const std::map<std::string, std::string>& extra_env)
    : job(name) {
  env = {{"SCOUT_SHM_DIR", dir.path()}, {"SCOUT_STATE_DIR", dir.path() + "/state"}};
  env.insert(extra_env.begin(), extra_env.end());
  store = dir.path() + "/state/" + job + "/node-0.db";
  truth = dir.path() + "/truth.jsonl";
  std::vector<std::string> obs_argv = {build_path("bin/scout-observer"), "--job", job};
  obs_argv.insert(obs_argv.end(), observer_args.begin(), observer_args.end());
  observer = std::make_unique<Subprocess>(obs_argv, env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", truth};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  sim = std::make_unique<Subprocess>(argv, env);
}

std::vector<obs::Finding> LiveJob::findings() const { return stored_findings(store); }

std::vector<nlohmann::json> LiveJob::truth_lines() const { return scout::testing::truth_lines(truth); }

}  // namespace scout::testing
