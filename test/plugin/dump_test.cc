// scout-dump and its library function (common/dump.h): JSON lines with the exact fields of
// a segment written through the event layer.
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/dump.h"
#include "plugin/core/events.h"
#include "test/support/plugin_driver.h"
#include "test/support/tmpdir.h"

namespace scout::testing {
namespace {

std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// One communicator with one complete AllReduce, one unmatched API call and 30 more collectives
// in a 16-slot ring, written through the in-process event layer.
class DumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("SCOUT_SHM_DIR", dir_.path());
    env_.set("SCOUT_JOB_ID", "dumpjob");
    env_.set("SCOUT_HOST", "h1");
    env_.set("SCOUT_RING_SLOTS", "16");
    env_.set("RANK", "5");
    env_.set("SCOUT_FP", "0");  // made-up buffer addresses
    void* ctx = nullptr;
    int mask = 0;
    ASSERT_EQ(core::init(&ctx, 0xfeedface, &mask, "tp0", 1, 2, 1, nullptr, 5), abi::kSuccess);
    auto start = [&](const abi::DescrV5& d) {
      void* h = nullptr;
      core::start_event(ctx, &h, &d, 5);
      return h;
    };
    for (uint64_t k = 0; k < 31; ++k) {
      void* ga = start(d_group_api(false, 1));
      void* ca = start(d_coll_api("AllReduce", 10, "ncclFloat32", 0, (void*)0xab, false, ga));
      void* g = start(d_group());
      void* op =
          start(d_coll(k, "AllReduce", (void*)0x10, (void*)0x10, 10, 0, "ncclFloat32", 1, "RING", "LL", ca, g, 1));
      core::stop_event(op);
      core::stop_event(ga);
      void* kc = start(d_kernel_ch(0, 1000 + k, op));
      abi::StateArgs a{};
      a.kernelCh.pTimer = 2000 + k;
      core::record_state(kc, abi::kStateKernelChStop, &a);
      core::stop_event(kc);
    }
    core::finalize(ctx);
    path_ = segment_files(dir_.path()).at(0);
  }
  TempDir dir_;
  ScopedEnv env_;
  std::string path_;
};

TEST_F(DumpTest, PrintsSegmentCommGapAndOpLines) {
  std::ostringstream out;
  shm::DumpStats st;
  std::string err;
  ASSERT_TRUE(shm::dump_segment_file(path_, out, {}, &st, &err)) << err;
  auto lines = parse_lines(out.str());
  ASSERT_EQ(lines.size(), 1u + 1u + 1u + 16u);
  EXPECT_EQ(st.comms, 1u);
  EXPECT_EQ(st.ops, 16u);
  EXPECT_EQ(st.missing, 15u);
  const auto& s = lines[0];
  EXPECT_EQ(s["type"], "segment");
  EXPECT_EQ(s["job"], "dumpjob");
  EXPECT_EQ(s["host"], "h1");
  EXPECT_EQ(s["global_rank"], 5);
  EXPECT_EQ(s["owner_pid"], int(::getpid()));
  EXPECT_EQ(s["owner_alive"], true);
  EXPECT_EQ(s["abi_version"], 5);
  EXPECT_EQ(s["ring_capacity"], 16);
  EXPECT_EQ(s["n_comms"], 1);
  EXPECT_EQ(s["path"], path_);
  const auto& c = lines[1];
  EXPECT_EQ(c["type"], "comm");
  EXPECT_EQ(c["comm_hash"], "0xfeedface");
  EXPECT_EQ(c["name"], "tp0");
  EXPECT_EQ(c["state"], "finalized");
  EXPECT_EQ(c["head"], 31);
  EXPECT_EQ(c["n_coll"], 31);
  EXPECT_EQ(c["api_calls"], 31);
  EXPECT_EQ(c["kernel_ns"], 31 * 1000);
  const auto& g = lines[2];
  EXPECT_EQ(g["type"], "gap");
  EXPECT_EQ(g["from"], 0);
  EXPECT_EQ(g["to"], 15);
  EXPECT_EQ(g["reason"], "overwritten");
  const auto& op = lines[3];
  EXPECT_EQ(op["type"], "op");
  EXPECT_EQ(op["ring"], 0);
  EXPECT_EQ(op["index"], 15);
  EXPECT_EQ(op["key"], 15);
  EXPECT_EQ(op["kind"], "coll");
  EXPECT_EQ(op["func"], "AllReduce");
  EXPECT_EQ(op["datatype"], "ncclFloat32");
  EXPECT_EQ(op["api_datatype"], "ncclFloat32");
  EXPECT_EQ(op["algo"], "RING");
  EXPECT_EQ(op["proto"], "LL");
  EXPECT_EQ(op["flags"], nlohmann::json::array({"in_place"}));
  EXPECT_EQ(op["count"], 10);
  EXPECT_EQ(op["bytes"], 40);
  EXPECT_EQ(op["send_buf"], "0x10");
  EXPECT_EQ(op["stream"], "0xab");
  EXPECT_EQ(op["state"], "complete");
  EXPECT_EQ(op["ch_started"], 1);
  EXPECT_EQ(op["gpu_start_raw"], 1015);
  EXPECT_EQ(op["fp_send_status"], "none");
  EXPECT_FALSE(op.contains("fp_send"));
  EXPECT_EQ(lines.back()["key"], 30);
}

TEST_F(DumpTest, ToolDumpsByPathAndByJob) {
  std::string bin = build_path("bin/scout-dump");
  auto run = [&](const std::string& args, int* status) {
    std::string cmd = bin + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    int st = ::pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
  };
  int status = -1;
  auto lines = parse_lines(run(path_, &status));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(lines.size(), 19u);
  lines = parse_lines(run("--no-ops --job dumpjob --dir " + dir_.path(), &status));
  EXPECT_EQ(status, 0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["type"], "comm");
  // Not a segment: an error naming the file, exit 1, the valid one still dumped.
  std::string bad = dir_.path() + "/scout.x.y.1";
  std::ofstream(bad) << "not a segment";
  ASSERT_EQ(::chmod(bad.c_str(), 0600), 0);
  std::string out = run(bad + " " + path_ + " --no-ops", &status);
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find(bad + ": truncated"), std::string::npos) << out;
  EXPECT_NE(out.find("\"type\":\"segment\""), std::string::npos);
  run("--job nosuchjob --dir " + dir_.path(), &status);
  EXPECT_EQ(status, 1);
  run("", &status);
  EXPECT_EQ(status, 2);
}

}  // namespace
}  // namespace scout::testing
