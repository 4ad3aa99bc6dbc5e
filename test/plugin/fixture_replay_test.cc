// Replays committed call recordings into the built plugin and compares the records it writes
// with the committed expectations, field by field.
//
//   test/fixtures/real-nccl/*.bin   recorded under real NCCL 2.28.9 on an H200 (scripts/gpu-check.sh,
//                                   step 5; test/fixtures/real-nccl/README.md)
//   test/fixtures/recorded/*.bin    recorded from scout-sim with SCOUT_RECORD_CALLS, so the
//                                   replay path itself is exercised on every commit
// Each NAME.bin has NAME.expected.jsonl: the plugin's segment dump after the replay, with the
// fields that legitimately differ between runs removed (times, pids, addresses, paths; see
// normalise()). To (re)generate after reviewing a change: SCOUT_FIXTURE_REGEN=1 build/test/fixture_replay_test
#include <dirent.h>
#include <stdlib.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/dump.h"
#include "common/paths.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/call_replay.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::TempDir;

std::vector<std::string> fixtures(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".bin") == 0) out.push_back(dir + "/" + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Keys whose values depend on when, where and in which process the replay ran.
bool volatile_key(const std::string& type, const std::string& k) {
  static const char* always[] = {"path",
                                 "owner_pid",
                                 "owner_start_ticks",
                                 "owner_alive",
                                 "created_ns",
                                 "closed_ns",
                                 "last_event_ns",
                                 "plugin_version",
                                 "host",
                                 "init_ns",
                                 "finalize_ns",
                                 "last_api_ns",
                                 "gpu_clock_offset_ns",
                                 "fp_gpu_ns",
                                 "kernel_ns",
                                 "thread",
                                 "send_buf",
                                 "recv_buf",
                                 "api_ns",
                                 "launch_ns",
                                 "enqueue_ns",
                                 "gpu_start_ns",
                                 "gpu_end_ns",
                                 "complete_ns",
                                 "job",
                                 // link table: when and how long (the replay runs at its own pace)
                                 "open_ns",
                                 "last_ns",
                                 "busy_ns",
                                 "max_ns",
                                 "hist",
                                 "proxy_window_start_ns",
                                 "proxy_window_end_ns",
                                 "proxy_window_ns",
                                 // progress table: when a ProxyOp started, when a request was answered
                                 "start_ns",
                                 "ack_ns"};
  for (const char* a : always) {
    if (k == a) return true;
  }
  (void)type;
  return false;
}

// The dump of every segment in `dir`, normalised: one JSON object per line, volatile keys
// removed, segments in name order.
std::string normalised_dump(const std::string& dir) {
  std::ostringstream raw;
  for (const std::string& p : scout::shm::list_segments(dir, "fixture")) {
    std::string err;
    scout::shm::DumpStats stats;
    EXPECT_TRUE(scout::shm::dump_segment_file(p, raw, {}, &stats, &err)) << err;
  }
  std::istringstream in(raw.str());
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    std::string type = j.value("type", "");
    nlohmann::json o = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!volatile_key(type, it.key())) o[it.key()] = it.value();
    }
    out << o.dump() << "\n";
  }
  return out.str();
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void replay_and_compare(const std::string& bin) {
  SCOPED_TRACE(bin);
  std::string expected_path = bin.substr(0, bin.size() - 4) + ".expected.jsonl";
  std::string err;
  int abi = scout::testing::recording_abi(bin, &err);
  ASSERT_NE(abi, 0) << err;

  TempDir shm;
  ::setenv("SCOUT_SHM_DIR", shm.path().c_str(), 1);
  ::setenv("SCOUT_JOB_ID", "fixture", 1);
  ::setenv("SCOUT_HOST", "fixture-host", 1);
  ::setenv("SCOUT_GPU", "GPU-fixture", 1);
  ::unsetenv("SCOUT_RECORD_CALLS");
  // The fingerprint budget compares the host's hashing time with the recorded kernel times, so
  // its level would depend on this machine's speed: off (level 0), the sampling is then a pure
  // function of the recording (docs/fingerprint.md, "Sampling").
  ::setenv("SCOUT_FP_BUDGET", "0", 1);
  // Likewise the ProxyStep windows (wall-clock periods): one window open from the first API call
  // for the whole replay, so every recorded ProxyOp/ProxyStep is timed, whatever the pace.
  ::setenv("SCOUT_PROXY_WINDOW_MS", "3600000", 1);
  ::setenv("SCOUT_PROXY_BUDGET", "1", 1);
  std::string so = scout::testing::build_path("lib/libnccl-profiler-scout.so");
  auto lookup = abi == 6 ? scout::sim::NcclLookup::k2_30 : scout::sim::NcclLookup::k2_28;
  scout::sim::LoadedPlugin p = scout::sim::load_profiler_plugin(so.c_str(), lookup);
  ASSERT_TRUE(p.ok()) << p.error;
  scout::testing::ReplayStats stats;
  ASSERT_TRUE(scout::testing::replay_calls(bin, p, &stats, &err)) << err;
  EXPECT_GT(stats.starts, 0u);
  std::string got = normalised_dump(shm.path());
  scout::sim::unload_profiler_plugin(&p);
  ::unsetenv("SCOUT_SHM_DIR");

  if (const char* regen = std::getenv("SCOUT_FIXTURE_REGEN"); regen && std::string(regen) == "1") {
    std::ofstream(expected_path) << got;
    GTEST_SKIP() << "regenerated " << expected_path;
  }
  std::string want = read_text(expected_path);
  ASSERT_FALSE(want.empty()) << expected_path << " missing: review the replay and regenerate";
  // Line by line, so a difference names the record.
  std::istringstream a(got), b(want);
  std::string la, lb;
  int n = 0;
  while (true) {
    bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    ++n;
    ASSERT_EQ(la, lb) << "line " << n << " of " << expected_path;
  }
}

TEST(FixtureReplay, SimRecordingsReplayToTheExpectedRecords) {
  auto bins = fixtures(scout::testing::source_path("test/fixtures/recorded"));
  ASSERT_FALSE(bins.empty()) << "test/fixtures/recorded holds the scout-sim recordings";
  for (const auto& b : bins) replay_and_compare(b);
}

TEST(FixtureReplay, RealNcclRecordingsReplayToTheExpectedRecords) {
  auto bins = fixtures(scout::testing::source_path("test/fixtures/real-nccl"));
  ASSERT_EQ(bins.size(), 3u) << "test/fixtures/real-nccl holds the three ranks of the H200 recording";
  for (const auto& b : bins) replay_and_compare(b);
}

}  // namespace
