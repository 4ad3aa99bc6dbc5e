// Segment creation, ring protocol, and the reader's validation (include/scout/shm_format.h).
#include "common/paths.h"
#include "common/segment_reader.h"
#include "common/segment_writer.h"
#include "common/utf8.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "test/support/tmpdir.h"

namespace {

using namespace scout::shm;
using scout::testing::TempDir;

SegmentIdentity ident() {
  SegmentIdentity id;
  id.job = "job/1";
  id.host = "node 7";
  id.gpu = "GPU-test";
  id.global_rank = 3;
  id.local_rank = 1;
  id.world_size = 8;
  id.plugin_version = "test";
  return id;
}

TEST(Segment, NameIsEncodedAndParsed) {
  EXPECT_EQ(segment_name("job/1", "node 7", 42), "scout.job_2f1.node_207.42");
  std::string job, host;
  int pid = 0;
  ASSERT_TRUE(parse_segment_name("scout.job_2f1.node_207.42", &job, &host, &pid));
  EXPECT_EQ(job, "job_2f1");
  EXPECT_EQ(host, "node_207");
  EXPECT_EQ(pid, 42);
  EXPECT_FALSE(parse_segment_name("scout.a.b.c.1", nullptr, nullptr, nullptr));
  EXPECT_FALSE(parse_segment_name("scout.a.b.x1", nullptr, nullptr, nullptr));
  EXPECT_FALSE(parse_segment_name("other.a.b.1", nullptr, nullptr, nullptr));
}

TEST(Segment, TablesFollowTheRingsAndAreFoundById) {
  TempDir dir;
  std::string err;
  std::vector<TableRequest> tables = {{kTableGemmShapes, kGemmTableVersion, gemm_table_bytes(16)}, {77, 3, 100}};
  auto w = SegmentWriter::create(dir.path(), ident(), 2, 16, &err, tables);
  ASSERT_TRUE(w) << err;
  const uint64_t rings_end = segment_bytes(2, 16);
  struct stat st;
  ASSERT_EQ(::stat(w->path().c_str(), &st), 0);
  EXPECT_EQ(uint64_t(st.st_size), rings_end + gemm_table_bytes(16) + 128);  // 100 rounded up to 64
  uint64_t bytes = 0;
  char* t1 = static_cast<char*>(w->table(kTableGemmShapes, &bytes));
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(bytes, gemm_table_bytes(16));
  EXPECT_EQ(t1 - reinterpret_cast<char*>(w->header()), int64_t(rings_end));
  EXPECT_EQ(static_cast<char*>(w->table(77)) - t1, int64_t(gemm_table_bytes(16)));
  EXPECT_EQ(w->table(5), nullptr);
  t1[0] = 42;
  auto r = SegmentReader::open(w->path(), &err);
  ASSERT_TRUE(r) << err;
  uint32_t version = 0;
  const char* rt = static_cast<const char*>(r->table(77, &version, &bytes));
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(bytes, 100u);
  EXPECT_EQ(*static_cast<const char*>(r->table(kTableGemmShapes, &version, &bytes)), 42);
  EXPECT_EQ(r->table(5, &version, &bytes), nullptr);
  EXPECT_EQ(r->bytes(), uint64_t(st.st_size));
  // Duplicate ids and more than kMaxTables are refused.
  EXPECT_FALSE(SegmentWriter::create(dir.path() + "/x", ident(), 2, 16, &err, {{9, 1, 64}, {9, 1, 64}}));
  EXPECT_EQ(err, "duplicate table id");
}

TEST(Segment, ReaderRejectsATableOutsideTheFile) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 1, 16, &err, {{kTableGemmShapes, 1, 256}});
  ASSERT_TRUE(w) << err;
  w->header()->tables[0].offset = segment_bytes(1, 16) + 64;  // past the end
  EXPECT_FALSE(SegmentReader::open(w->path(), &err));
  EXPECT_NE(err.find("table 0 out of bounds"), std::string::npos) << err;
  w->header()->tables[0].offset = 64;  // inside the header
  EXPECT_FALSE(SegmentReader::open(w->path(), &err));
}

TEST(Segment, CreatedWithMode0600AndFullSize) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 4, 64, &err);
  ASSERT_TRUE(w) << err;
  struct stat st;
  ASSERT_EQ(::stat(w->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(uint64_t(st.st_size), segment_bytes(4, 64));
  EXPECT_EQ(w->path(), dir.path() + "/scout.job_2f1.node_207." + std::to_string(getpid()));
  auto r = SegmentReader::open(w->path(), &err);
  ASSERT_TRUE(r) << err;
  SegmentInfo info = r->info();
  EXPECT_EQ(info.job, "job/1");
  EXPECT_EQ(info.host, "node 7");
  EXPECT_EQ(info.global_rank, 3);
  EXPECT_EQ(info.owner_pid, getpid());
  EXPECT_TRUE(r->owner_alive());
  EXPECT_EQ(list_segments(dir.path(), "job/1"), std::vector<std::string>{w->path()});
  EXPECT_EQ(list_segments(dir.path(), "job/1", "node 7").size(), 1u);
  EXPECT_TRUE(list_segments(dir.path(), "job/1", "node 8").empty());
  EXPECT_TRUE(list_segments(dir.path(), "job").empty());
}

// A segment appears under its real name only complete (magic written), so an observer never opens
// a half-created file; the hidden name it was built under is gone, and a leftover of a process
// killed while creating is replaced.
TEST(Segment, PublishedOnlyWhenCompleteUnderItsName) {
  TempDir dir;
  const std::string hidden =
      dir.path() + "/.scout.job_2f1.node_207." + std::to_string(getpid()) + ".new";
  { std::ofstream(hidden) << "leftover"; }
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 4, 64, &err);
  ASSERT_TRUE(w) << err;
  struct stat st;
  EXPECT_NE(::stat(hidden.c_str(), &st), 0) << "the hidden name is left behind";
  ASSERT_EQ(::stat(w->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  std::ifstream f(w->path(), std::ios::binary);
  uint64_t magic = 0;
  f.read(reinterpret_cast<char*>(&magic), sizeof magic);
  EXPECT_EQ(magic, kSegmentMagic);
  EXPECT_EQ(list_segments(dir.path(), "job/1"), std::vector<std::string>{w->path()});
}

TEST(Segment, UnwritableDirectoryGivesOneLineError) {
  std::string err;
  auto w = SegmentWriter::create("/proc/does-not-exist", ident(), 4, 64, &err);
  EXPECT_FALSE(w);
  EXPECT_NE(err.find("cannot create /proc/does-not-exist/scout.job_2f1.node_207."), std::string::npos) << err;
}

TEST(Segment, RecordsRoundTripAndOverwriteOldest) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 2, 16, &err);
  ASSERT_TRUE(w) << err;
  RingWriter* ring = w->open_ring(0xabcdef, 8, 3, 2, "dp", 0);
  ASSERT_NE(ring, nullptr);
  for (uint64_t k = 0; k < 20; ++k) {
    uint64_t idx;
    OpRecord* rec = ring->begin(&idx);
    EXPECT_EQ(idx, k);
    rec->kind = kKindColl;
    rec->func = kFuncAllReduce;
    rec->key = k;
    rec->count = 100 + k;
    rec->datatype = kTypeFloat32;
    rec->algo = kAlgoRing;
    rec->proto = kProtoSimple;
    rec->state.store(kStateEnqueued);
    RingWriter::publish(rec, idx);
  }
  auto r = SegmentReader::open(w->path(), &err);
  ASSERT_TRUE(r) << err;
  ASSERT_EQ(r->n_rings(), 1u);
  CommSnapshot c;
  ASSERT_TRUE(r->comm(0, &c));
  EXPECT_EQ(c.comm_hash, 0xabcdefu);
  EXPECT_EQ(c.name, "dp");
  EXPECT_EQ(c.head, 20u);
  EXPECT_EQ(c.overwritten_live, 4u);  // records 0..3 were still enqueued when reused
  RecordSnapshot s;
  EXPECT_EQ(r->read(0, 3, &s), ReadStatus::kOverwritten);
  ASSERT_EQ(r->read(0, 4, &s), ReadStatus::kOk);
  EXPECT_EQ(s.key, 4u);
  EXPECT_EQ(s.count, 104u);
  EXPECT_EQ(s.peer, -1);
  ASSERT_EQ(r->read(0, 19, &s), ReadStatus::kOk);
  EXPECT_EQ(s.key, 19u);
  EXPECT_EQ(r->read(0, 20, &s), ReadStatus::kNotYet);
  EXPECT_FALSE(r->comm(1, &c));  // never assigned
}

TEST(Segment, FingerprintWordsAreTaggedWithTheRecordIndex) {
  EXPECT_EQ(fp_status(fp_word(5, kFpDone), 5), kFpDone);
  EXPECT_EQ(fp_status(fp_word(5, kFpDone), 5 + 16), kFpNone);  // a late write for a reused slot
}

TEST(Segment, RingsBeyondMaxAreCountedNotRecorded) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 2, 16, &err);
  ASSERT_TRUE(w);
  EXPECT_NE(w->open_ring(1, 2, 0, 1, nullptr, 0), nullptr);
  EXPECT_NE(w->open_ring(2, 2, 0, 1, nullptr, 0), nullptr);
  EXPECT_EQ(w->open_ring(3, 2, 0, 1, nullptr, 0), nullptr);
  EXPECT_EQ(w->header()->comms_dropped.load(), 1u);
}

TEST(Segment, ReaderRejectsBadFiles) {
  TempDir dir;
  std::string err;
  std::string p = dir.path() + "/scout.j.h.1";
  { std::ofstream(p) << "short"; }
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
  EXPECT_FALSE(SegmentReader::open(p, &err));
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  {
    std::ofstream f(p);
    f << std::string(8192, 'x');
  }
  EXPECT_FALSE(SegmentReader::open(p, &err));
  EXPECT_NE(err.find("bad magic"), std::string::npos) << err;

  auto w = SegmentWriter::create(dir.path(), ident(), 1, 16, &err);
  ASSERT_TRUE(w);
  ASSERT_EQ(::truncate(w->path().c_str(), segment_bytes(1, 16) - 256), 0);
  EXPECT_FALSE(SegmentReader::open(w->path(), &err));
  EXPECT_NE(err.find("geometry needs"), std::string::npos) << err;
}

// Row 1 of the hostile-input trial: a FIFO named like a segment must not block the reader.
TEST(SegmentTrust, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  std::string p = dir.path() + "/scout.j.h.77";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::string err;
  EXPECT_FALSE(SegmentReader::open(p, &err));  // would block forever in open() without O_NONBLOCK
  EXPECT_EQ(err, p + ": a FIFO, not a regular file: refused");
}

TEST(SegmentTrust, SymbolicLinkIsRefused) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 1, 16, &err);
  ASSERT_TRUE(w) << err;
  std::string link = dir.path() + "/scout.j.h.78";
  ASSERT_EQ(::symlink(w->path().c_str(), link.c_str()), 0);
  EXPECT_FALSE(SegmentReader::open(link, &err));
  EXPECT_EQ(err, link + ": a symbolic link: refused (segments are regular files)");
}

// Copies `from` to a new file `to` of the same size with only the first `data_bytes` written
// (the rest a hole: sparse), mode 0600.
void copy_sparse(const std::string& from, const std::string& to, size_t data_bytes) {
  std::ifstream in(from, std::ios::binary);
  std::string head(data_bytes, '\0');
  in.read(head.data(), std::streamsize(data_bytes));
  struct stat st;
  ASSERT_EQ(::stat(from.c_str(), &st), 0);
  int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, head.data(), head.size()), ssize_t(head.size()));
  ASSERT_EQ(::ftruncate(fd, st.st_size), 0);
  ::close(fd);
}

// Row 3: a sparse file with valid geometry would make every read allocate tmpfs pages.
TEST(SegmentTrust, SparseFileIsRefused) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 8, 4096, &err);  // 8 MiB
  ASSERT_TRUE(w) << err;
  std::string p = dir.path() + "/scout.j.h.79";
  copy_sparse(w->path(), p, kSegmentHeaderBytes);
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  ASSERT_LT(uint64_t(st.st_blocks) * 512, uint64_t(st.st_size)) << "file system without holes";
  EXPECT_FALSE(SegmentReader::open(p, &err));
  EXPECT_EQ(err, p + ": sparse: " + std::to_string(uint64_t(st.st_blocks) * 512) + " of " +
                     std::to_string(segment_bytes(8, 4096)) +
                     " bytes allocated (segments are fully allocated): refused");
}

// Row 4: segments other users could write (mode) or that another user owns are refused;
// TrustPolicy names the owners a site trusts besides the reader's own uid.
TEST(SegmentTrust, OtherUsersSegmentsAreRefused) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 1, 16, &err);
  ASSERT_TRUE(w) << err;
  ASSERT_EQ(::chmod(w->path().c_str(), 0666), 0);
  EXPECT_FALSE(SegmentReader::open(w->path(), &err, TrustPolicy{}));
  EXPECT_EQ(err, w->path() + ": mode 0666 lets other users write or read it (segments are 0600): refused");
  ASSERT_EQ(::chmod(w->path().c_str(), 0600), 0);
  EXPECT_TRUE(SegmentReader::open(w->path(), &err, TrustPolicy{})) << err;
  if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
  ASSERT_EQ(::chown(w->path().c_str(), 4242, 4242), 0);
  EXPECT_FALSE(SegmentReader::open(w->path(), &err, TrustPolicy{}));
  EXPECT_EQ(err, w->path() + ": owned by uid 4242, not by this user (uid 0) or SCOUT_SHM_TRUSTED_UIDS: refused");
  TrustPolicy trusted;
  trusted.uids = {4242};
  EXPECT_TRUE(SegmentReader::open(w->path(), &err, trusted)) << err;
}

// Row 10: job ids are encoded injectively in segment and store names.
TEST(SegmentNames, JobIdsNeverShareNames) {
  EXPECT_EQ(encode_component("team.run1"), "team_2erun1");
  EXPECT_EQ(encode_component("team_run1"), "team_5frun1");
  EXPECT_NE(segment_name("team.run1", "h", 1), segment_name("team_run1", "h", 1));
  std::string err;
  EXPECT_NE(scout::store::default_store_path("/s", "team.run1", 0, &err),
            scout::store::default_store_path("/s", "team_run1", 0, &err));
  std::string a = std::string(48, 'j') + "-first", b = std::string(48, 'j') + "-second";
  EXPECT_NE(encode_component(a), encode_component(b));
  std::string la(100, 'x'), lb = std::string(99, 'x') + "y";
  EXPECT_EQ(encode_component(la).size(), kMaxComponentChars);
  EXPECT_EQ(encode_component(la).substr(0, 48), std::string(46, 'x') + "_h");
  EXPECT_NE(encode_component(la), encode_component(lb));
  EXPECT_EQ(encode_component(""), "_");
  EXPECT_EQ(encode_component("_"), "_5f");
  TempDir dir;
  auto id = ident();
  id.job = "team.run1";
  auto w = SegmentWriter::create(dir.path(), id, 1, 16, &err);
  ASSERT_TRUE(w) << err;
  EXPECT_EQ(list_segments(dir.path(), "team.run1").size(), 1u);
  EXPECT_TRUE(list_segments(dir.path(), "team_run1").empty());
}

// Row 8: names are cut at a character boundary by the writer and made valid UTF-8 by the reader.
TEST(SegmentNames, HostCutAtCharacterBoundary) {
  TempDir dir;
  std::string err;
  auto id = ident();
  id.host = std::string(62, 'h') + "\xc3\xa9";  // 64 bytes ending in "é": the field holds 63
  auto w = SegmentWriter::create(dir.path(), id, 1, 16, &err);
  ASSERT_TRUE(w) << err;
  auto r = SegmentReader::open(w->path(), &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->info().host, std::string(62, 'h'));
  // A writer that ignores the rule: invalid bytes read back as U+FFFD.
  std::memcpy(w->header()->host, "n\xff\xc3", 4);
  EXPECT_EQ(r->info().host, "n\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(scout::utf8_clean("ok \xc3\xa9"), "ok \xc3\xa9");
  EXPECT_EQ(scout::utf8_prefix_len("ab\xe2\x82\xac", 4), 2u);
  EXPECT_EQ(scout::utf8_prefix_len("ab\xe2\x82\xac", 5), 5u);
  EXPECT_FALSE(scout::utf8_valid("\xed\xa0\x80"));  // a surrogate
}

TEST(Segment, ConcurrentWritersNeverTearReaders) {
  TempDir dir;
  std::string err;
  auto w = SegmentWriter::create(dir.path(), ident(), 1, 64, &err);
  ASSERT_TRUE(w);
  RingWriter* ring = w->open_ring(9, 2, 0, 1, "x", 0);
  auto r = SegmentReader::open(w->path(), &err);
  ASSERT_TRUE(r);
  std::atomic<bool> stop{false};
  auto writer = [&] {
    while (!stop.load()) {
      uint64_t idx;
      OpRecord* rec = ring->begin(&idx);
      rec->kind = kKindColl;
      rec->func = kFuncAllReduce;
      rec->key = idx;
      rec->count = idx * 3;
      rec->datatype = kTypeFloat32;
      RingWriter::publish(rec, idx);
    }
  };
  std::thread t1(writer), t2(writer);
  uint64_t ok = 0, bad = 0;
  // Read records a little behind the head (published, not yet reused) until enough were seen;
  // a loaded machine only makes this take longer, never makes it wrong.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ok < 2000 && std::chrono::steady_clock::now() < deadline) {
    CommSnapshot c;
    r->comm(0, &c);
    if (c.head < 16) continue;
    RecordSnapshot s;
    if (r->read(0, c.head - 16, &s) == ReadStatus::kOk) {
      ++ok;
      if (s.key != s.index || s.count != s.index * 3) ++bad;
    }
  }
  stop = true;
  t1.join();
  t2.join();
  EXPECT_GT(ok, 0u);
  EXPECT_EQ(bad, 0u);
}

}  // namespace
