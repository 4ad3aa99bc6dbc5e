// The second adversarial trial, row 4: paths the training process opens from its environment are
// checked without blocking (common/safe_file.h), and a segment truncated under a live rank does
// not kill it (common/write_guard.h). The trial's inputs: SCOUT_NET_DELEGATE naming a FIFO (every
// rank hung in init, 0 of 10 steps), SCOUT_TRUTH as a FIFO (a drill hung), SCOUT_RECORD_CALLS'
// file and SCOUT_SHM_DIR as FIFOs, `truncate -s 0` of a live rank's segment (SIGBUS).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "common/paths.h"
#include "common/safe_file.h"
#include "common/segment_writer.h"
#include "common/write_guard.h"
#include "plugin/core/delegate.h"
#include "plugin/net/delegate.h"
#include "plugin/net/truth.h"
#include "plugin/record/recorder.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::run_process;
using scout::testing::TempDir;

// Runs `f`; fails when it has not returned within 10 s (it blocked).
template <typename F>
auto within_10s(F f) {
  auto fut = std::async(std::launch::async, f);
  EXPECT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "blocked";
  return fut.get();
}

std::string fifo(const TempDir& d, const std::string& name) {
  const std::string p = d.path() + "/" + name;
  EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
  return p;
}

TEST(SafeFile, FifoSymlinkAndDeviceAreRefusedWithoutBlocking) {
  TempDir d;
  const std::string f = fifo(d, "pipe");
  const std::string z = d.path() + "/zero";
  ASSERT_EQ(::symlink("/dev/zero", z.c_str()), 0);
  std::string err, text;
  within_10s([&] { return scout::safe::open_regular(f, &err); });
  EXPECT_EQ(err, f + " is a FIFO, not a regular file");
  EXPECT_EQ(scout::safe::open_regular(z, &err), -1);
  EXPECT_EQ(err, z + " is a symlink, not a regular file");
  EXPECT_FALSE(scout::safe::read_regular(z, 1 << 20, &text, &err, /*follow=*/true));
  EXPECT_EQ(err, z + " is a device, not a regular file");
  EXPECT_EQ(within_10s([&] { return scout::safe::open_append(f, 0600, &err); }), -1);
  EXPECT_FALSE(scout::safe::check_directory(f, &err));
  EXPECT_EQ(err, f + " is not a directory");
  // A regular file larger than the cap is refused, not truncated.
  std::ofstream(d.path() + "/big") << std::string(100, 'x');
  EXPECT_FALSE(scout::safe::read_regular(d.path() + "/big", 99, &text, &err));
  EXPECT_TRUE(scout::safe::read_regular(d.path() + "/big", 100, &text, &err)) << err;
  EXPECT_EQ(text.size(), 100u);
}

TEST(EnvPaths, NetDelegateFifoIsRefusedWithoutBlocking) {
  TempDir d;
  const std::string f = fifo(d, "libnccl-net-fifo.so");
  scout::net::Delegate del;
  std::string err;
  EXPECT_FALSE(within_10s([&] { return scout::net::open_delegate(f, &del, &err); }));
  EXPECT_EQ(err, "cannot open the delegate '" + f + "': " + f + " is a FIFO, not a regular file");
  // A bare name found as a FIFO in LD_LIBRARY_PATH.
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = old ? old : "";
  ::setenv("LD_LIBRARY_PATH", d.path().c_str(), 1);
  EXPECT_FALSE(within_10s([&] { return scout::net::open_delegate("fifo", &del, &err); }));
  EXPECT_EQ(err, "cannot open the delegate 'fifo': " + f + " is not a regular file");
  if (old) {
    ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    ::unsetenv("LD_LIBRARY_PATH");
  }
}

// The profiler delegate is opened by the same code (plugin/core/library.h): a FIFO named by
// SCOUT_PROFILER_DELEGATE, as a path or as a bare name in LD_LIBRARY_PATH, is refused, not opened.
TEST(EnvPaths, ProfilerDelegateFifoIsRefusedWithoutBlocking) {
  TempDir d;
  const std::string f = fifo(d, "libnccl-profiler-fifo.so");
  scout::core::dlg::Table t;
  void* dl = nullptr;
  std::string opened, err;
  EXPECT_FALSE(within_10s([&] { return scout::core::dlg::open_delegate(f, 6, &t, &dl, &opened, &err); }));
  EXPECT_EQ(err, "cannot open the delegate '" + f + "': " + f + " is a FIFO, not a regular file");
  EXPECT_EQ(dl, nullptr);
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = old ? old : "";
  ::setenv("LD_LIBRARY_PATH", d.path().c_str(), 1);
  EXPECT_FALSE(within_10s([&] { return scout::core::dlg::open_delegate("fifo", 6, &t, &dl, &opened, &err); }));
  EXPECT_EQ(err, "cannot open the delegate 'fifo': " + f + " is not a regular file");
  if (old) {
    ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    ::unsetenv("LD_LIBRARY_PATH");
  }
}

TEST(EnvPaths, TruthAndRecordCallsFifosAreRefusedWithoutBlocking) {
  TempDir d;
  const std::string truth = fifo(d, "truth.jsonl");
  scout::net::TruthLine t;
  t.kind = "slowlink";
  t.drill = "delay:peer=1";
  EXPECT_FALSE(within_10s([&] { return scout::net::write_truth(truth, t); }));
  const std::string prefix = d.path() + "/calls";
  fifo(d, "calls." + std::to_string(::getpid()) + ".bin");
  std::string err;
  EXPECT_EQ(within_10s([&] { return scout::rec::Recorder::open(prefix, &err); }), nullptr);
  EXPECT_NE(err.find("is a FIFO, not a regular file"), std::string::npos) << err;
}

// The trial's job with the FIFO delegate: 2 ranks on two emulated hosts through the net plugin.
// The old code hung every rank in dlopen (0 of 10 steps); now the net half refuses init with the
// reason and the job finishes.
TEST(EnvPaths, JobWithAFifoDelegateFinishesItsSteps) {
  TempDir d;
  const std::string f = fifo(d, "delegate.so");
  auto r = run_process({build_path("bin/scout-sim"), "--job", "fifodel", "--ranks", "2", "--pp", "2", "--nodes", "2",
                        "--steps", "10", "--step-ms", "5"},
                       {{"NCCL_NET_PLUGIN", build_path("lib/libnccl-profiler-scout.so")},
                        {"NCCL_PROFILER_PLUGIN", build_path("lib/libnccl-profiler-scout.so")},
                        {"SCOUT_NET_DELEGATE", f},
                        {"SCOUT_SHM_DIR", d.path()},
                        {"NCCL_DEBUG", "WARN"}},
                       60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 30.0);
  EXPECT_NE(r.err.find(f + " is a FIFO, not a regular file"), std::string::npos) << r.err;
}

// SCOUT_SHM_DIR naming a FIFO: no segment, one warning, the job runs.
TEST(EnvPaths, ShmDirFifoGivesNoSegmentAndTheJobRuns) {
  TempDir d;
  const std::string f = fifo(d, "shm");
  auto r = run_process({build_path("bin/scout-sim"), "--job", "fifoshm", "--ranks", "2", "--steps", "10", "--step-ms",
                        "2"},
                       {{"NCCL_PROFILER_PLUGIN", build_path("lib/libnccl-profiler-scout.so")},
                        {"SCOUT_SHM_DIR", f},
                        {"NCCL_DEBUG", "WARN"}},
                       60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(f + " is not a directory"), std::string::npos) << r.err;
}

// A process writing its segment while the file is truncated to 0 (the trial's `truncate -s 0`):
// it keeps running and its writer knows it is detached. Without the guard the child dies of SIGBUS.
TEST(WriteGuard, SegmentTruncatedUnderALiveWriterDoesNotKillIt) {
  TempDir d;
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    scout::shm::SegmentIdentity id;
    id.job = "trunc";
    id.host = "node0";
    std::string err;
    auto w = scout::shm::SegmentWriter::create(d.path(), id, 2, 64, &err);
    if (!w) ::_exit(3);
    scout::shm::RingWriter* ring = w->open_ring(0x77, 2, 0, 1, "tp0", 0);
    if (ring == nullptr) ::_exit(4);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) ::_exit(5);
    if (::read(go[0], &c, 1) != 1) ::_exit(6);  // the parent truncated the file
    for (int i = 0; i < 1000; ++i) {             // every store now hits a vanished page
      uint64_t idx = 0;
      scout::shm::OpRecord* rec = ring->begin(&idx);
      rec->count = uint64_t(i);
      ring->publish(rec, idx);
    }
    ::_exit(w->detached() && scout::shm::mappings_lost() == 1 ? 0 : 7);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string seg = d.path() + "/" + scout::shm::segment_name("trunc", "node0", pid);
  ASSERT_EQ(::truncate(seg.c_str(), 0), 0) << seg;
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A SIGBUS that is not a truncated segment keeps its default action (scout does not hide real
// faults): a read past the end of another truncated mapping still kills the process.
TEST(WriteGuard, OtherSigbusKeepsItsDefaultAction) {
  TempDir d;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    scout::shm::SegmentIdentity id;
    id.job = "other";
    id.host = "node0";
    std::string err;
    auto w = scout::shm::SegmentWriter::create(d.path(), id, 1, 16, &err);  // installs the handler
    const std::string p = d.path() + "/plain";
    const int fd = ::open(p.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ::ftruncate(fd, 4096) != 0) ::_exit(3);
    auto* m = static_cast<volatile char*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (::ftruncate(fd, 0) != 0) ::_exit(4);
    m[0] = 1;  // SIGBUS outside any segment
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
}

// The same through the real plugin in an emulated job: every rank's segment truncated while the
// job runs; every rank finishes (exit 0) and says once that its segment was truncated.
TEST(WriteGuard, JobWhoseSegmentsAreTruncatedFinishes) {
  TempDir d;
  scout::testing::Subprocess sim(
      {build_path("bin/scout-sim"), "--job", "truncjob", "--ranks", "2", "--steps", "300", "--step-ms", "10"},
      {{"NCCL_PROFILER_PLUGIN", build_path("lib/libnccl-profiler-scout.so")},
       {"SCOUT_SHM_DIR", d.path()},
       {"NCCL_DEBUG", "WARN"}});
  std::vector<std::string> segs;
  for (int i = 0; i < 500 && segs.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    segs = scout::shm::list_segments(d.path(), "truncjob");
  }
  ASSERT_EQ(segs.size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const auto& s : segs) ASSERT_EQ(::truncate(s.c_str(), 0), 0);
  auto r = sim.wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t said = 0;
  for (size_t at = r.err.find("was truncated under this process"); at != std::string::npos;
       at = r.err.find("was truncated under this process", at + 1))
    ++said;
  EXPECT_EQ(said, 2u) << r.err;
}

}  // namespace
