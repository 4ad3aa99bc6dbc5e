// Marker recognition per framework (observer/ckpt/markers.h): a finished checkpoint of each
// layout is complete with the right step and marker; the same layout without its last write is
// an entry that is not complete; bookkeeping files are not entries; the generic quiet rule.
#include <sys/stat.h>
#include <sys/time.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "observer/ckpt/markers.h"
#include "observer/ckpt/watcher.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::ckpt::Entry;
using scout::ckpt::scan_root;
using scout::testing::TempDir;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kQuiet = 60 * kSec;

scout::ckpt::ScanOptions opts(bool generic = false) {
  scout::ckpt::ScanOptions o;
  o.quiet_ns = kQuiet;
  o.generic = generic;
  return o;
}

void put(const std::string& path, const std::string& text = "x") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * kSec + ts.tv_nsec;
}

const Entry* find(const std::vector<Entry>& v, const std::string& name) {
  for (const Entry& e : v)
    if (fs::path(e.path).filename() == name) return &e;
  return nullptr;
}

TEST(Markers, MegatronTorchDistIsCompleteOnlyWithMetadataJson) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/iter_0000020/__0_0.distcp");
  put(r + "/iter_0000020/.metadata");
  put(r + "/iter_0000020/metadata.json", "{}");
  put(r + "/iter_0000040/__0_0.distcp");  // half-written: shards only
  put(r + "/latest_checkpointed_iteration.txt", "20");
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 2u);  // the tracker is not an entry
  const Entry* a = find(v, "iter_0000020");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->framework, "megatron");
  EXPECT_EQ(a->step, 20);
  EXPECT_TRUE(a->complete);
  EXPECT_EQ(a->marker, r + "/iter_0000020/metadata.json");
  const Entry* b = find(v, "iter_0000040");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->framework, "megatron");
  EXPECT_EQ(b->step, 40);
  EXPECT_FALSE(b->complete);
}

TEST(Markers, MegatronLegacyIsCompleteWhenTheTrackerNamesIt) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/iter_0000300/mp_rank_00/model_optim_rng.pt");
  put(r + "/latest_checkpointed_iteration.txt", "");  // not atomic: empty while being written
  EXPECT_FALSE(scan_root(r, now_ns(), opts()).at(0).complete);
  put(r + "/latest_checkpointed_iteration.txt", "300\n");
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].complete);
  EXPECT_EQ(v[0].step, 300);
  EXPECT_EQ(v[0].marker, r + "/latest_checkpointed_iteration.txt");
}

TEST(Markers, DcpIsCompleteWithDotMetadata) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/step-100/__0_0.distcp");
  put(r + "/step-100/__1_0.distcp");
  put(r + "/step-200/__0_0.distcp");
  put(r + "/step-200/.metadata.tmp");  // not renamed yet
  put(r + "/step-100/.metadata");
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(find(v, "step-100")->framework, "dcp");
  EXPECT_EQ(find(v, "step-100")->step, 100);
  EXPECT_TRUE(find(v, "step-100")->complete);
  EXPECT_EQ(find(v, "step-200")->framework, "dcp");
  EXPECT_FALSE(find(v, "step-200")->complete);
}

TEST(Markers, DeepSpeedIsCompleteWhenLatestNamesTheTag) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/global_step10/mp_rank_00_model_states.pt");
  put(r + "/global_step20/mp_rank_00_model_states.pt");
  put(r + "/zero_to_fp32.py");
  put(r + "/latest", "global_step20");
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(find(v, "global_step20")->framework, "deepspeed");
  EXPECT_EQ(find(v, "global_step20")->step, 20);
  EXPECT_TRUE(find(v, "global_step20")->complete);
  EXPECT_FALSE(find(v, "global_step10")->complete);  // latest never named it while we looked
}

TEST(Markers, HfIsCompleteWithTrainerStateAndTakesItsGlobalStep) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/checkpoint-500/model.safetensors");
  put(r + "/checkpoint-500/trainer_state.json", "{\"global_step\": 500}");
  put(r + "/checkpoint-600/model.safetensors");
  put(r + "/checkpoint-700/trainer_state.json", "{\"global_st");  // partly written: not JSON
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(find(v, "checkpoint-500")->framework, "hf");
  EXPECT_EQ(find(v, "checkpoint-500")->step, 500);
  EXPECT_TRUE(find(v, "checkpoint-500")->complete);
  EXPECT_FALSE(find(v, "checkpoint-600")->complete);
  EXPECT_FALSE(find(v, "checkpoint-700")->complete);
}

TEST(Markers, NemoIsCompleteOnceTheUnfinishedMarkerIsGone) {
  TempDir d;
  const std::string r = d.path();
  const std::string n = "m--val_loss=1.20-step=1000-consumed_samples=8000.0";
  put(r + "/" + n + "/weights/__0_0.distcp");
  put(r + "/" + n + "/weights/.metadata");
  put(r + "/" + n + "/weights/metadata.json", "{}");
  put(r + "/" + n + "-unfinished", "");
  auto v = scan_root(r, now_ns(), opts());
  ASSERT_EQ(v.size(), 1u);  // the marker file is not an entry
  EXPECT_EQ(v[0].framework, "nemo");
  EXPECT_EQ(v[0].step, 1000);
  EXPECT_FALSE(v[0].complete);
  fs::remove(r + "/" + n + "-unfinished");
  v = scan_root(r, now_ns(), opts());
  EXPECT_TRUE(v[0].complete);
  EXPECT_EQ(v[0].marker, r + "/" + n + "/weights/metadata.json");
}

TEST(Markers, GenericDirectoryIsCompleteAfterTheQuietTimeOnlyWhenTheGenericRuleIsOn) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/model_epoch7/weights.bin");
  const int64_t t = now_ns();
  EXPECT_TRUE(scan_root(r, t + kQuiet + kSec, opts()).empty());  // default: markers only
  auto v = scan_root(r, t, opts(true));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].framework, "generic");
  EXPECT_EQ(v[0].step, 7);
  EXPECT_FALSE(v[0].complete);
  v = scan_root(r, t + kQuiet + kSec, opts(true));
  EXPECT_TRUE(v[0].complete);
}

TEST(Markers, HalfWrittenKnownLayoutNeverFallsBackToTheQuietRule) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/iter_0000040/__0_0.distcp");
  put(r + "/checkpoint-40/rng_state_0.pth");
  put(r + "/step-40/__0_0.distcp");
  put(r + "/global_step40/zero_pp_rank_0_mp_rank_00_optim_states.pt");
  auto v = scan_root(r, now_ns() + 1000 * kQuiet, opts());
  ASSERT_EQ(v.size(), 4u);
  for (const Entry& e : v) EXPECT_FALSE(e.complete) << e.path << " " << e.framework;
}

TEST(Markers, LastNumber) {
  EXPECT_EQ(scout::ckpt::last_number("step-300"), 300);
  EXPECT_EQ(scout::ckpt::last_number("ckpt_7_of_12"), 12);
  EXPECT_EQ(scout::ckpt::last_number("final"), -1);
}

TEST(Watcher, ReportsEachCheckpointOnceAndSkipsKnownOnes) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/step-1/.metadata");
  put(r + "/step-2/.metadata");
  scout::ckpt::WatchOptions o;
  o.roots = {r};
  scout::ckpt::Watcher w(o);
  w.mark_known(r + "/step-1");
  auto first = w.poll(now_ns());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].path, r + "/step-2");
  put(r + "/step-3/__0_0.distcp");
  EXPECT_TRUE(w.poll(now_ns()).empty());
  put(r + "/step-3/.metadata");  // inotify on the pending directory sees it at the next poll
  auto later = w.poll(now_ns());
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].path, r + "/step-3");
  EXPECT_TRUE(w.poll(now_ns()).empty());
}

TEST(Watcher, DeepSpeedWaitsForItsFilesToSettle) {
  TempDir d;
  const std::string r = d.path();
  put(r + "/global_step5/a.pt");
  put(r + "/latest", "global_step5");
  scout::ckpt::WatchOptions o;
  o.roots = {r};
  o.inotify = false;
  o.poll_ns = 0;
  scout::ckpt::Watcher w(o);
  EXPECT_TRUE(w.poll(now_ns()).empty());  // first sight: remembered, not reported
  auto v = w.poll(now_ns());              // unchanged since: reported
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].step, 5);
}

TEST(Watcher, RootCreatedAfterStartIsScannedAtOnceNotAPollPeriodLater) {
  // DeepSpeed's `latest` names only the newest tag: a scan a poll period after the root appeared
  // would never see global_step5 complete once global_step10 is saved.
  TempDir d;
  const std::string r = d.path() + "/ckpt";
  scout::ckpt::WatchOptions o;
  o.roots = {r};
  o.poll_ns = 3600 * kSec;
  scout::ckpt::Watcher w(o);
  ASSERT_TRUE(w.inotify_active());
  EXPECT_TRUE(w.poll(now_ns()).empty());  // the first scan: no root yet
  EXPECT_EQ(w.scans(), 1u);
  put(r + "/global_step5/a.pt");
  put(r + "/latest", "global_step5");
  EXPECT_TRUE(w.poll(now_ns()).empty());  // the root appeared: scanned, first sight of the tag
  EXPECT_EQ(w.scans(), 2u);
  auto v = w.poll(now_ns());  // unchanged since: reported
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].path, r + "/global_step5");
  EXPECT_EQ(v[0].step, 5);
  EXPECT_EQ(v[0].framework, "deepspeed");
  put(r + "/global_step10/a.pt");
  put(r + "/latest", "global_step10");
  EXPECT_TRUE(w.poll(now_ns()).empty());  // inotify on the root: seen at the next poll
  v = w.poll(now_ns());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].step, 10);
  EXPECT_EQ(w.scans(), 5u);
}

}  // namespace
