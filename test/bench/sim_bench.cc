// scout-sim at scale: a 64-rank, 200-step job (TP 4, PP 4, DP 4, EP 2) driving the plugin, timed
// against the same job with profiling off (NCCL_PROFILER_PLUGIN=none) measured in the same run.
// Prints wall times, their ratio, the records the plugin wrote (counted from the segments) and
// records per second.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "test/sim/job_segments.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

constexpr const char* kRanks = "64";
constexpr const char* kSteps = "200";

ProcessResult run_job(const std::string& job, const std::string& shm_dir, const std::string& plugin) {
  std::vector<std::string> argv = {build_path("bin/scout-sim"),
                                   "--ranks",
                                   kRanks,
                                   "--tp",
                                   "4",
                                   "--pp",
                                   "4",
                                   "--ep",
                                   "2",
                                   "--steps",
                                   kSteps,
                                   "--bytes",
                                   "64K",
                                   "--job",
                                   job,
                                   "--timeout",
                                   "900"};
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", shm_dir}, {"SCOUT_MAX_COMMS", "8"}, {"NCCL_DEBUG", ""}, {"NCCL_PROFILER_PLUGIN", plugin}};
  return run_process(argv, env, 1000);
}

}  // namespace

int main() {
  TempDir dir;
  const char* user_plugin = std::getenv("NCCL_PROFILER_PLUGIN");
  std::string plugin = user_plugin && *user_plugin ? user_plugin : build_path("lib/libnccl-profiler-scout.so");
  std::printf("scout-sim bench: %s ranks (tp 4, pp 4, dp 4, ep 2), %s steps, 64 KiB messages\n", kRanks, kSteps);
  std::fflush(stdout);

  ProcessResult base = run_job("bench-none", dir.path(), "none");
  if (base.exit_code != 0) {
    std::fprintf(stderr, "baseline run failed (exit %d):\n%s%s", base.exit_code, base.out.c_str(), base.err.c_str());
    return 1;
  }
  ProcessResult with = run_job("bench-plugin", dir.path(), plugin);
  if (with.exit_code != 0) {
    std::fprintf(stderr, "plugin run failed (exit %d):\n%s%s", with.exit_code, with.out.c_str(), with.err.c_str());
    return 1;
  }
  std::vector<std::string> errors;
  std::vector<scout::sim::RankSegment> segs = scout::sim::read_job_segments(dir.path(), "bench-plugin", &errors);
  uint64_t records = scout::sim::count_records(segs);
  std::printf("  without plugin (baseline): %8.2f s\n", base.seconds);
  std::printf("  with plugin %s: %8.2f s  (%.2fx baseline)\n", plugin.c_str(), with.seconds,
              base.seconds > 0 ? with.seconds / base.seconds : 0.0);
  std::printf("  segments: %zu, records: %llu, records/s: %.0f%s\n", segs.size(),
              static_cast<unsigned long long>(records), with.seconds > 0 ? records / with.seconds : 0.0,
              records == 0 ? "  (this plugin records nothing)" : "");
  for (const std::string& e : errors) std::printf("  unreadable segment: %s\n", e.c_str());
  std::fflush(stdout);
  return 0;
}
