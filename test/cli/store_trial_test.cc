// The second adversarial trial: the store degrades loudly and `scout run` always runs the job. The
// trial's inputs: the store's write lock held for 12 s by another process, an invalid observer
// setting, two observers creating one store at once, a 222 MB store read by every CLI call
// (quick_check once per file identity and size). The full disk and the read-only mount are in
// test/observer/full_disk_test.sh (they need a mount).
#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "observer/store/health.h"
#include "observer/store/reader.h"
#include "observer/store/retrying.h"
#include "observer/store/writer.h"
#include "test/support/cli_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::run_process;
using scout::testing::TempDir;

// Another process's connection holding the store's write lock (BEGIN IMMEDIATE) until released.
struct WriteLock {
  sqlite3* db = nullptr;
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  void release() {
    if (!db) return;
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    db = nullptr;
  }
  ~WriteLock() { release(); }
};

scout::obs::Finding sdc(const std::string& key) {
  scout::obs::Finding f;
  f.kind = scout::obs::FindingKind::kSdc;
  f.verdict = scout::obs::Verdict::kAttributed;
  f.dedup_key = key;
  f.first_seen_ns = f.last_seen_ns = 1'700'000'000'000'000'000;
  f.summary = "rank 3 differs";
  return f;
}

TEST(StoreTrial, LockedAtStartTheStoreIsOpenedLaterAndNoFindingIsLost) {
  TempDir d;
  const std::string path = d.path() + "/node-0.db";
  scout::testing::write_demo_store(path);
  WriteLock lock(path);
  std::vector<std::string> said;
  scout::store::WriterOptions wo;
  wo.on_error = [&](const std::string& l) { said.push_back(l); };
  scout::store::RetryingStore st(path, wo);
  ASSERT_FALSE(st.is_open());
  EXPECT_FALSE(st.permanent()) << st.error();
  EXPECT_NE(st.error().find("database is locked"), std::string::npos) << st.error();
  scout::obs::Finding f = sdc("sdc/late");
  st.upsert_finding(&f);
  EXPECT_FALSE(st.flush());  // still locked: kept in memory by the caller
  EXPECT_EQ(st.health().unstored_findings, 1u);
  EXPECT_EQ(st.health().failed_batches, 1u);
  ASSERT_TRUE(scout::store::read_health(path));  // the health file says so while the store cannot
  EXPECT_EQ(scout::store::read_health(path)->unstored_findings, 1u);
  lock.release();
  st.upsert_finding(&f);
  EXPECT_FALSE(st.flush());  // opens now; this batch's calls went nowhere
  ASSERT_TRUE(st.is_open());
  st.upsert_finding(&f);
  EXPECT_TRUE(st.flush());
  EXPECT_EQ(st.health().failing_since_ns, 0);
  EXPECT_EQ(st.health().failed_batches, 2u);
  auto rd = scout::store::StoreReader::open(path);
  int found = 0;
  for (const auto& g : rd->findings()) found += g.dedup_key == "sdc/late";
  EXPECT_EQ(found, 1);
  EXPECT_EQ(rd->job()->store.failed_batches, 2u);
}

TEST(StoreTrial, WritesFailingUnderAHeldLockAreRetriedAndCounted) {
  TempDir d;
  const std::string path = d.path() + "/node-0.db";
  scout::testing::write_demo_store(path);
  std::string err;
  std::vector<std::string> said;
  scout::store::WriterOptions wo;
  wo.on_error = [&](const std::string& l) { said.push_back(l); };
  auto w = scout::store::StoreWriter::open(path, wo, &err);
  ASSERT_TRUE(w) << err;
  scout::obs::Finding f = sdc("sdc/held");
  {
    WriteLock lock(path);
    const auto t0 = std::chrono::steady_clock::now();
    scout::obs::JobInfo j;
    j.job = "demo";
    w->put_job(j);
    w->upsert_finding(&f);
    w->put_ranks({});
    EXPECT_FALSE(w->flush());
    // One busy wait per batch, not one per call.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
    EXPECT_NE(w->health().failing_since_ns, 0);
    EXPECT_EQ(w->health().unstored_findings, 1u);
    // status, from the health file while the store is stale.
    auto r = run_process({build_path("bin/scout"), "status", "--store", path}, {{"NO_COLOR", "1"}}, 60);
    EXPECT_NE(r.out.find("warning: the observer cannot write this store since"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 findings kept in its memory, not stored yet"), std::string::npos) << r.out;
  }
  ASSERT_EQ(said.size(), 1u);  // the first failure, said at once
  EXPECT_NE(said[0].find("cannot write the store: "), std::string::npos) << said[0];
  w->upsert_finding(&f);
  EXPECT_TRUE(w->flush());
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[1].find("store writes succeed again"), std::string::npos) << said[1];
  w.reset();
  auto r = run_process({build_path("bin/scout"), "status", "--store", path}, {{"NO_COLOR", "1"}}, 60);
  EXPECT_NE(r.out.find("note: 1 store batches failed and were written again later (no finding lost)"),
            std::string::npos)
      << r.out;
  r = run_process({build_path("bin/scout"), "export", "--store", path, "--format", "prometheus"}, {}, 60);
  EXPECT_NE(r.out.find("scout_store_failed_batches_total{job=\"demo\"} 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scout_store_failing{job=\"demo\"} 0\n"), std::string::npos) << r.out;
}

// The trial held the lock 12 s while `scout run` started: it refused to run the job. Now the job
// runs at once, its SDC is found while the lock is held and stored once it is released.
TEST(StoreTrial, StoreLockedTwelveSecondsTheJobRunsAndItsSdcIsStored) {
  TempDir d;
  const std::string path = d.path() + "/locked.db";
  {
    auto r = run_process({build_path("bin/scout"), "run", "--job", "locked", "--store", path, "--",
                          build_path("bin/scout-sim"), "--ranks", "2", "--steps", "5", "--step-ms", "2"},
                         {{"SCOUT_SHM_DIR", d.path()}}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::thread holder([&] {
    WriteLock lock(path);
    std::this_thread::sleep_for(std::chrono::seconds(12));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_process({build_path("bin/scout"), "run", "--job", "locked", "--store", path, "--",
                        build_path("bin/scout-sim"), "--ranks", "4", "--steps", "600", "--step-ms", "25", "--fault",
                        "sdc:rank=1,step=40"},
                       {{"SCOUT_SHM_DIR", d.path()}, {"NO_COLOR", "1"}}, 180);
  holder.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("COMMAND not run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("database is locked; the job is observed and its findings kept in memory"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("scout: warning: the observer cannot write its store now"), std::string::npos) << r.err;
  EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(12));
  auto rd = scout::store::StoreReader::open(path);
  int found = 0;
  for (const auto& f : rd->findings()) found += f.kind == scout::obs::FindingKind::kSdc;
  EXPECT_EQ(found, 1);
  EXPECT_GT(rd->job()->store.failed_batches, 0u);
}

// An invalid observer setting made `scout run` refuse the job: now it is said at once and the
// job runs unobserved, with COMMAND's exit status.
TEST(StoreTrial, InvalidObserverSettingTheJobRunsUnobserved) {
  TempDir d;
  auto r = run_process({build_path("bin/scout"), "run", "--job", "badset", "--store", d.path() + "/s.db", "--",
                        build_path("bin/scout-sim"), "--ranks", "2", "--steps", "5", "--step-ms", "2"},
                       {{"SCOUT_SHM_DIR", d.path()}, {"SCOUT_EQUIV", d.path() + "/no-such-equiv-file"}}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("scout: warning: scout-observer exited before its first pass (status 2"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("COMMAND runs unobserved"), std::string::npos) << r.err;
  // COMMAND's own failure still decides the status.
  r = run_process({build_path("bin/scout"), "run", "--job", "badset2", "--store", d.path() + "/s2.db", "--", "false"},
                  {{"SCOUT_SHM_DIR", d.path()}, {"SCOUT_EQUIV", d.path() + "/no-such-equiv-file"}}, 120);
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

TEST(StoreTrial, TwoObserversCreatingOneStoreBothOpenIt) {
  for (int round = 0; round < 5; ++round) {
    TempDir d;
    const std::string path = d.path() + "/race.db";
    std::string e1, e2;
    std::unique_ptr<scout::store::StoreWriter> w1, w2;
    std::thread t1([&] { w1 = scout::store::StoreWriter::open(path, {}, &e1); });
    std::thread t2([&] { w2 = scout::store::StoreWriter::open(path, {}, &e2); });
    t1.join();
    t2.join();
    EXPECT_TRUE(w1) << e1;
    EXPECT_TRUE(w2) << e2;
  }
}

// quick_check ran on every CLI call (0.63 s per call on the trial's 222 MB store): now once per
// file identity and size, remembered in the user's cache.
TEST(StoreTrial, QuickCheckRunsOncePerFileIdentityAndSize) {
  TempDir d;
  const std::string path = d.path() + "/demo.db";
  scout::testing::write_demo_store(path);
  const std::string cache = d.path() + "/cache";
  const std::map<std::string, std::string> env = {{"XDG_CACHE_HOME", cache}, {"NO_COLOR", "1"}};
  auto lines = [&] {
    std::ifstream in(cache + "/scout/checked");
    int n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  };
  ASSERT_EQ(run_process({build_path("bin/scout"), "status", "--store", path}, env).exit_code, 0);
  EXPECT_EQ(lines(), 1);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  std::ifstream in(cache + "/scout/checked");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size));
  ASSERT_EQ(run_process({build_path("bin/scout"), "findings", "--store", path}, env).exit_code, 0);
  EXPECT_EQ(lines(), 1);  // same file, same size: not checked again
  {
    std::string err;
    auto w = scout::store::StoreWriter::open(path, {}, &err);
    ASSERT_TRUE(w) << err;
    for (int i = 0; i < 200; ++i) {
      scout::obs::Finding f = sdc("sdc/grow/" + std::to_string(i));
      f.summary = std::string(2000, 'x');
      w->upsert_finding(&f);
    }
    ASSERT_TRUE(w->flush());
  }
  ASSERT_EQ(run_process({build_path("bin/scout"), "status", "--store", path}, env).exit_code, 0);
  EXPECT_EQ(lines(), 2);  // it grew: checked again
}

}  // namespace
