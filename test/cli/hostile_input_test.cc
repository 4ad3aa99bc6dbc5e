// Hostile input and silent loss, end to end through the built tools (build/bin/scout,
// build/bin/scout-observer): each test re-runs one way an adversarial trial made scout crash,
// block, lose a finding or let one user's files act on another's, and checks the one-line error
// or warning that now comes instead.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/paths.h"
#include "common/segment_writer.h"
#include "common/utf8.h"
#include "observer/export/atomic_file.h"
#include "observer/store/reader.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "test/support/cli_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using Result = scout::testing::ShellResult;
using scout::testing::build_path;
using scout::testing::run_shell;
using scout::testing::slurp;
using scout::testing::TempDir;

// Runs `build/bin/TOOL ARGS` through the shell with `env` prepended and no stdin; stdout and
// stderr captured.
Result tool(const std::string& dir, const std::string& name, const std::string& args, const std::string& env = "") {
  return run_shell(dir, env + " " + build_path("bin/" + name) + " " + args + " </dev/null");
}

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_.path() + "/state/demo/node-0.db";
    scout::testing::write_demo_store(store_);
  }
  void sql(const std::string& text) {
    scout::store::Db db(store_, SQLITE_OPEN_READWRITE);
    db.exec(text);
  }
  Result scout(const std::string& args, const std::string& env = "") { return tool(dir_.path(), "scout", args, env); }
  TempDir dir_;
  std::string store_;
};

// Row 8: a host and a communicator name that are not UTF-8 (a name cut mid-character by an older
// plugin, or a hostile store) no longer abort the JSON outputs; every output, text included, is
// UTF-8 (the store reader hands out valid UTF-8 only).
TEST_F(HostileInput, InvalidUtf8NamesKeepEveryOutputValid) {
  sql("UPDATE ranks SET host = CAST(X'6EC3' AS TEXT) WHERE global_rank = 7;"
      "UPDATE comms SET name = CAST(X'776FFF' AS TEXT) WHERE name = 'world';"
      "UPDATE findings SET comm_name = CAST(X'776FFF' AS TEXT) WHERE comm_name = 'world';");
  for (std::string args : {"status --json", "findings --json", "export --format jsonl", "export --format chrome-trace",
                           "export --format prometheus", "status"}) {
    Result r = scout(args + " --store " + store_);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.err;
    EXPECT_TRUE(scout::utf8_valid(r.out)) << args;
    if (args != "status" && args != "export --format prometheus") {
      std::istringstream lines(r.out);
      std::string line;
      while (std::getline(lines, line))
        EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << args;
    }
  }
  EXPECT_NE(scout("status --json --store " + store_).out.find("\"host\":\"n\xef\xbf\xbd\""), std::string::npos);
  EXPECT_NE(scout("export --format prometheus --store " + store_).out.find("comm=\"wo\xef\xbf\xbd\""),
            std::string::npos);
}

// Row 9: numeric flags refuse nan and inf (NaN passes every range comparison).
TEST_F(HostileInput, NanAndInfFlagsAreRefused) {
  Result r = tool(dir_.path(), "scout-observer", "--hang-timeout nan --once --store " + dir_.path() + "/x.db");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "scout-observer: --hang-timeout: 'nan': expected a number\n");
  r = tool(dir_.path(), "scout-observer", "--hang-timeout inf --once --store " + dir_.path() + "/x.db");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "scout-observer: --hang-timeout: 'inf': expected a number\n");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/x.db"));
  r = scout("run --hang-timeout nan -- true");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "scout run: --hang-timeout: 'nan': expected a number (" + build_path("bin/scout") + " run --help)\n");
  r = scout("run --stop-timeout -inf -- true");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "scout run: --stop-timeout: '-inf': expected a number (" + build_path("bin/scout") + " run --help)\n");
}

// Row 11: `export --out` in a world-writable directory never follows a planted link: the
// temporary file gets a fresh random name created O_EXCL.
TEST_F(HostileInput, ExportNeverFollowsAPlantedLink) {
  std::string victim = dir_.path() + "/victim";
  std::ofstream(victim) << "precious\n";
  std::string out = dir_.path() + "/pub/metrics.prom";
  std::filesystem::create_directories(dir_.path() + "/pub");
  ::chmod((dir_.path() + "/pub").c_str(), 01777);
  // The old name was <out>.tmp.<pid>: plant links for the pids the command may get.
  for (int p = ::getpid(); p < ::getpid() + 400; ++p) {
    ASSERT_EQ(::symlink(victim.c_str(), (out + ".tmp." + std::to_string(p)).c_str()), 0);
  }
  Result r = scout("export --format prometheus --store " + store_ + " --out " + out);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(victim), "precious\n");
  struct stat st;
  ASSERT_EQ(::lstat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(slurp(out), scout("export --format prometheus --store " + store_).out);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/pub")) entries += !e.is_symlink();
  EXPECT_EQ(entries, 1);  // no temporary file left behind
  // --out itself a link: the link is replaced, its target is untouched.
  std::string link = dir_.path() + "/pub/link.prom";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  std::string err;
  ASSERT_TRUE(scout::exporter::write_file_atomic(link, "new\n", &err)) << err;
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_EQ(slurp(link), "new\n");
  EXPECT_FALSE(scout::exporter::write_file_atomic(dir_.path() + "/none/x", "x", &err));
  EXPECT_EQ(err, "cannot write " + dir_.path() +
                     "/none/x: cannot create a temporary file beside it: No such file or directory");
}

// Row 12: an observer pointed at another job's store refuses it and leaves it as it was.
TEST_F(HostileInput, ObserverRefusesAnotherJobsStore) {
  Result r =
      tool(dir_.path(), "scout-observer", "--job other --once --quiet --shm-dir " + dir_.path() + " --store " + store_);
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "scout-observer: store " + store_ +
                       " belongs to job 'demo', not 'other': refused (another job's store is never rewritten)\n");
  auto rd = scout::store::StoreReader::open(store_);
  ASSERT_TRUE(rd->job());
  EXPECT_EQ(rd->job()->job, "demo");
  EXPECT_EQ(rd->job()->observer_version, "scout-fixture");
}

// Row 13: garbage inside a store page is reported by readers and refused by the observer.
TEST_F(HostileInput, DamagedStorePageIsReported) {
  {
    std::fstream f(store_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 3);
    std::string junk(64, '\xab');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  Result r = scout("status --store " + store_);
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("scout: store " + store_ + " is damaged (SQLite quick_check: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1);
  r = tool(dir_.path(), "scout-observer", "--job demo --once --quiet --shm-dir " + dir_.path() + " --store " + store_);
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("scout-observer: store " + store_ + " is damaged (SQLite quick_check: ", 0), 0u) << r.err;
}

// Row 14: a store in a directory the observer cannot write is blamed on the directory.
TEST_F(HostileInput, ReadOnlyStoreDirectoryIsNamed) {
  std::string ro = dir_.path() + "/ro";
  std::filesystem::create_directories(ro);
  ::chmod(dir_.path().c_str(), 0755);
  ::chmod(ro.c_str(), 0555);
  std::string path = ro + "/node-0.db";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && ::setuid(65534) != 0) _exit(3);  // root writes anywhere: be nobody
    std::string err;
    auto w = scout::store::StoreWriter::open(path, {}, &err);
    std::string want = "cannot open store " + path + ": directory " + ro + " is not writable (Permission denied)";
    _exit(w ? 4 : err == want ? 0 : 5);
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "3: setuid failed, 4: opened, 5: other message";
}

// Rows 6 and 7: what the observer could not see is in `scout status`, its JSON and Prometheus.
TEST_F(HostileInput, LostRecordsAndIngestWarningsAreShown) {
  sql("INSERT OR REPLACE INTO meta (key, value) VALUES ('records_read', '32'), ('records_lost', '48'),"
      "('records_invalid', '2'), ('segments_refused', '1'),"
      "('ingest_warning', 'segment directory /x (SCOUT_SHM_DIR): No such file or directory; the plugin cannot create "
      "segments')");
  std::string text = scout("status --store " + store_).out;
  EXPECT_NE(text.find("\nwarning: segment directory /x (SCOUT_SHM_DIR): No such file or directory; the plugin cannot "
                      "create segments\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nwarning: 48 of 80 records lost (ring overwritten before the observer read them): a finding "
                      "may be missing; raise SCOUT_RING_SLOTS or start the observer before the job\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nwarning: 1 segment files refused (see the observer's log)\n"), std::string::npos) << text;
  auto j = nlohmann::json::parse(scout("status --json --store " + store_).out);
  EXPECT_EQ(j["job"]["records_lost"], 48);
  EXPECT_EQ(j["job"]["records_read"], 32);
  std::string prom = scout("export --format prometheus --store " + store_).out;
  EXPECT_NE(prom.find("\nscout_records_lost_total{job=\"demo\"} 48\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("\nscout_records_invalid_total{job=\"demo\"} 2\n"), std::string::npos) << prom;
}

// Row 15: the observer network's state (store meta "network", written every pass by a
// multi-node observer) is in `scout status`, with a warning while the channel is down, in its
// JSON and in Prometheus.
TEST_F(HostileInput, NetworkStateIsShownAndADownChannelIsAWarning) {
  const int64_t t0 = scout::testing::kFixtureT0;
  auto set = [&](const nlohmann::json& n) {
    scout::store::Db db(store_, SQLITE_OPEN_READWRITE);
    scout::store::Stmt st(db, "INSERT OR REPLACE INTO meta (key, value) VALUES ('network', ?)");
    st.bind(1, n.dump()).run();
  };
  const std::string rdzv = "redis:10.0.0.5:6379";
  set({{"connected", false},
       {"peers", 0},
       {"epoch", 3},
       {"rounds", 41},
       {"formed", 2},
       {"failures", 5},
       {"since_ns", t0 + 4300 * 1000000LL},
       {"last_round_ns", t0 + 4200 * 1000000LL},
       {"rendezvous", rdzv},
       {"last_error", "observer network: rendezvous " + rdzv + " unreachable: Connection refused"}});
  std::string text = scout("status --store " + store_).out;
  EXPECT_NE(text.find("\nnetwork: node-rank 0 of 2, not connected since 8.20s ago (epoch 3, rendezvous " + rdzv +
                      "), 41 rounds, last 8.30s ago, re-formed 1 time, 5 failures\n"
                      "warning: the observer network is down: operations of communicators that span nodes are not "
                      "compared until it re-forms; last error: observer network: rendezvous " +
                      rdzv + " unreachable: Connection refused\n"),
            std::string::npos)
      << text;
  set({{"connected", true},
       {"peers", 1},
       {"epoch", 4},
       {"rounds", 60},
       {"formed", 3},
       {"failures", 5},
       {"since_ns", t0 + 10 * 1000000000LL},
       {"last_round_ns", t0 + 12420 * 1000000LL},
       {"rendezvous", rdzv},
       {"last_error", ""}});
  text = scout("status --store " + store_).out;
  EXPECT_NE(text.find("\nnetwork: node-rank 0 of 2, connected to 1 peer (epoch 4, rendezvous " + rdzv +
                      "), 60 rounds, last 80.0ms ago, re-formed 2 times, 5 failures\nranks: "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("network is down"), std::string::npos) << text;
  auto j = nlohmann::json::parse(scout("status --json --store " + store_).out);
  EXPECT_EQ(j["job"]["network"]["connected"], true);
  EXPECT_EQ(j["job"]["network"]["peers"], 1);
  EXPECT_EQ(j["job"]["network"]["reforms"], 2);
  EXPECT_EQ(j["job"]["network"]["rendezvous"], rdzv);
  std::string prom = scout("export --format prometheus --store " + store_).out;
  EXPECT_NE(prom.find("\nscout_net_connected{job=\"demo\"} 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("\nscout_net_reforms_total{job=\"demo\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("\nscout_net_rounds_total{job=\"demo\"} 60\n"), std::string::npos) << prom;
}

// Row 7: `scout run` with SCOUT_SHM_DIR missing says so before and after the job.
TEST_F(HostileInput, RunWarnsWhenTheSegmentDirectoryIsMissing) {
  std::string env = "SCOUT_SHM_DIR=" + dir_.path() + "/noshm SCOUT_STATE_DIR=" + dir_.path() + "/st";
  Result r = scout("run --job nodir -- true", env);
  EXPECT_EQ(r.rc, 0) << r.err;
  std::string why = "segment directory " + dir_.path() +
                    "/noshm (SCOUT_SHM_DIR): No such file or directory; the "
                    "plugin cannot create segments";
  EXPECT_NE(r.err.find("scout: warning: " + why + "; the job runs unobserved\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("scout: warning: the observer saw no rank: " + why + "\n"), std::string::npos) << r.err;
}

// Row 17: without an observer, `scout clean` removes the segments of processes that are gone and
// leaves those of running processes and files it does not trust.
TEST_F(HostileInput, CleanRemovesSegmentsOfDeadProcesses) {
  std::string shm = dir_.path() + "/shm";
  std::filesystem::create_directories(shm);
  scout::shm::SegmentIdentity id;
  id.job = "cleanjob";
  id.host = "h";
  std::string err;
  auto mine = scout::shm::SegmentWriter::create(shm, id, 1, 16, &err);
  ASSERT_TRUE(mine) << err;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string e;
    auto w = scout::shm::SegmentWriter::create(shm, id, 1, 16, &e);
    _exit(w ? 0 : 1);  // exits without removing it, as a killed rank would
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_EQ(WEXITSTATUS(st), 0);
  std::string dead = shm + "/" + scout::shm::segment_name("cleanjob", "h", child);
  ASSERT_TRUE(std::filesystem::exists(dead));
  std::string fifo = shm + "/scout.cleanjob.h.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result r = scout("clean --dir " + shm);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(mine->path()));
  EXPECT_TRUE(std::filesystem::exists(fifo));
  EXPECT_EQ(r.out, "left " + fifo +
                       ": a FIFO, not a regular file: refused\n"
                       "removed " +
                       dead + " (pid " + std::to_string(child) +
                       " gone, 9.0KiB)\n"
                       "scout clean: 1 segments removed (9.0KiB), 1 of running processes kept, 1 left alone, in " +
                       shm + "\n");
}

// The second adversarial trial: hidden `.scout.*.new` files (a process killed while creating its
// segment) were never cleaned. `scout clean` removes those of gone processes, keeps a live one's.
TEST_F(HostileInput, CleanRemovesHalfCreatedSegmentsOfGoneProcesses) {
  std::string shm = dir_.path() + "/shm";
  std::filesystem::create_directories(shm);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int st = 0;
  ::waitpid(child, &st, 0);
  const std::string gone = shm + "/." + scout::shm::segment_name("cleanjob", "h", child) + ".new";
  const std::string live = shm + "/." + scout::shm::segment_name("cleanjob", "h", ::getpid()) + ".new";
  std::ofstream(gone) << std::string(100, 'x');
  std::ofstream(live) << "x";
  Result r = scout("clean --dir " + shm);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_EQ(r.out, "removed " + gone + " (half-created by pid " + std::to_string(child) +
                       ", gone)\nscout clean: 0 segments and 1 half-created ones removed (100B), 0 of running "
                       "processes kept, 0 left alone, in " +
                       shm + "\n");
}

}  // namespace
