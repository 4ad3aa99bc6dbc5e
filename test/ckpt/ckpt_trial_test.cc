// The second adversarial trial's attacks on checkpoint certification, each with the
// trial's exact input: a stray notes-20241201.txt, a deleted or changed verified checkpoint, an
// edited scout-certificate.json inside a checkpoint, folder names with \xff\xfe and a newline,
// `latest` as a symlink to /dev/zero and as a FIFO, 100,000 empty files, a candidate a stored
// finding rejects. Certification runs through the real Certifier on synthetic passes (one
// agreeing collective per 100 ms, 1 s check cycles, K = 2); answers come from the real `scout`.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "common/utf8.h"
#include "observer/ckpt/certificate.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/manifest.h"
#include "observer/ckpt/markers.h"
#include "observer/store/writer.h"
#include "test/support/ckpt_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using namespace scout::ckpt;
using scout::testing::agreeing_op_at;
using scout::testing::build_path;
using scout::testing::certifier_options_for_test;
using scout::testing::run_process;
using scout::testing::TempDir;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSec;  // a fixed wall time (2023) for the synthetic passes

void set_mtime(const std::string& path, int64_t t) {
  const timespec ts[2] = {{time_t(t / kSec), long(t % kSec)}, {time_t(t / kSec), long(t % kSec)}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// A finished PyTorch DCP checkpoint <root>/<name>: two shards and its .metadata written at `t`.
void dcp_checkpoint(const std::string& root, const std::string& name, int64_t t) {
  const std::string dir = root + "/" + name;
  fs::create_directories(dir);
  std::ofstream(dir + "/__0_0.distcp") << std::string(4096, 'a');
  std::ofstream(dir + "/__1_0.distcp") << std::string(4096, 'b');
  std::ofstream(dir + "/.metadata") << "m";
  for (const char* f : {"/__0_0.distcp", "/__1_0.distcp", "/.metadata"}) set_mtime(dir + f, t);
}

// The observer's certification of job "j" over `root`, store <dir>/node-0.db.
struct Certification {
  std::string dir, root, store;
  std::vector<std::string> log;
  std::unique_ptr<CkptStore> st;
  std::unique_ptr<Certifier> cert;
  scout::obs::Model m;
  scout::obs::FindingBoard board;
  uint64_t seq = 0;

  Certification(const std::string& d, const std::string& r, bool beside = false) : dir(d), root(r) {
    store = dir + "/node-0.db";
    restart(beside);
  }
  void restart(bool beside = false) {
    cert.reset();
    st = CkptStore::open_writer(store);
    CertifierOptions o = certifier_options_for_test(root, dir + "/certificates");
    o.write_beside = beside;
    o.log = [this](const std::string& l) { log.push_back(l); };
    cert = std::make_unique<Certifier>(o, st.get());
  }
  // Passes every 100 ms over [from, to].
  void run(int64_t from, int64_t to) {
    for (int64_t t = from; t <= to; t += 100'000'000) cert->on_pass(m, agreeing_op_at(t - 50'000'000, ++seq), board, t);
  }
  const Checkpoint* find(const std::string& name) const {
    for (const Checkpoint& c : cert->checkpoints())
      if (c.path == root + "/" + name) return &c;
    return nullptr;
  }
  std::string log_text() const {
    std::string s;
    for (const auto& l : log) s += l + "\n";
    return s;
  }
};

scout::testing::ProcessResult scout_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_path("/bin/scout")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, {{"NO_COLOR", "1"}}, 60);
}

// Two verified DCP checkpoints step-1 and step-2 (completed at kT0 + 0.3 s and + 2.3 s).
void two_verified(Certification& c) {
  dcp_checkpoint(c.root, "step-1", kT0 + 300'000'000);
  c.run(kT0 + 200'000'000, kT0 + 2 * kSec);
  dcp_checkpoint(c.root, "step-2", kT0 + 2 * kSec + 300'000'000);
  c.run(kT0 + 2 * kSec + 100'000'000, kT0 + 6 * kSec);
  ASSERT_NE(c.find("step-1"), nullptr);
  ASSERT_NE(c.find("step-2"), nullptr);
  ASSERT_EQ(c.find("step-1")->state, State::kVerified) << c.log_text();
  ASSERT_EQ(c.find("step-2")->state, State::kVerified) << c.log_text();
}

TEST(CkptTrial, StrayNotesFileIsNeverACheckpointAndNeverNamed) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  fs::create_directories(root);
  std::ofstream(root + "/notes-20241201.txt") << "12345678";  // the trial's 8-byte stray file
  set_mtime(root + "/notes-20241201.txt", kT0 - 3600 * kSec);
  Certification c(d.path(), root);
  two_verified(c);
  ASSERT_EQ(c.cert->checkpoints().size(), 2u);  // the notes file is not among them
  auto r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, root + "/step-2\n");
  auto list = scout_cli({"ckpt", "list", "--store", c.store});
  EXPECT_EQ(list.out.find("notes-20241201"), std::string::npos) << list.out;
  // Said once, however many scans saw it.
  int said = 0;
  for (const auto& l : c.log) said += l.find("are not checkpoints") != std::string::npos;
  EXPECT_EQ(said, 1) << c.log_text();
}

TEST(CkptTrial, DeletedVerifiedCheckpointIsNeverNamed) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  Certification c(d.path(), root);
  two_verified(c);
  fs::remove_all(root + "/step-2");
  auto r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, root + "/step-1\n");  // the older one, still intact
  EXPECT_NE(r.err.find("not naming " + root + "/step-2 (verified): the checkpoint directory " + root +
                       "/step-2 is missing"),
            std::string::npos)
      << r.err;
  fs::remove_all(root + "/step-1");
  r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("scout: no verified checkpoint: 2 seen, 0 candidate(s) waiting for clean check cycles, 0 rejected, 2 not named (reasons above)\n"),
            std::string::npos)
      << r.err;
  // Without --verified either.
  r = scout_cli({"ckpt", "latest", "--store", c.store});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
}

TEST(CkptTrial, ShardChangedOrAddedAfterCertificationIsNeverNamed) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  Certification c(d.path(), root);
  two_verified(c);
  ::truncate((root + "/step-2/__1_0.distcp").c_str(), 0);
  auto r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.out, root + "/step-1\n");
  EXPECT_NE(r.err.find("__1_0.distcp changed size (4096 -> 0 bytes)"), std::string::npos) << r.err;
  std::ofstream(root + "/step-1/__2_0.distcp") << "planted";
  r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("__2_0.distcp was added after the checkpoint was certified"), std::string::npos) << r.err;
  auto show = scout_cli({"ckpt", "show", root + "/step-1", "--store", c.store});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.out.find("restart from it now: NO: __2_0.distcp was added"), std::string::npos) << show.out;
}

TEST(CkptTrial, EditedCertificateInsideTheCheckpointIsRefused) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  Certification c(d.path(), root, /*beside=*/true);
  two_verified(c);
  const std::string beside = root + "/step-2/scout-certificate.json";
  ASSERT_TRUE(fs::exists(beside));
  auto show = scout_cli({"ckpt", "show", root + "/step-2", "--store", c.store});
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("restart from it now: yes"), std::string::npos) << show.out;
  // The trial's edit: the verdict's reason changed in the copy inside the checkpoint.
  std::ifstream in(beside);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const size_t at = text.find("consecutive clean");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "CONSECUTIVE");
  std::ofstream(beside, std::ios::trunc) << text;
  show = scout_cli({"ckpt", "show", root + "/step-2", "--store", c.store});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.out.find("restart from it now: NO: the certificate inside the checkpoint (" + beside +
                          ") differs from the chain's"),
            std::string::npos)
      << show.out;
  auto r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.out, root + "/step-1\n");
  EXPECT_NE(r.err.find("not naming " + root + "/step-2"), std::string::npos) << r.err;
}

TEST(CkptTrial, FolderNamesWithInvalidUtf8OrANewlineNeverCrashAndArePrintedEscaped) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  const std::string bad = "ev\xff\xfe step=99999";  // the trial's folder name (NeMo-like)
  const std::string nl = "a\nstep=5";
  fs::create_directories(root + "/" + bad);
  fs::create_directories(root + "/" + nl);
  Certification c(d.path(), root);
  two_verified(c);
  EXPECT_EQ(c.cert->checkpoints().size(), 2u);
  const std::string log = c.log_text();
  EXPECT_NE(log.find("2 entries whose names are not valid UTF-8 or hold control characters are ignored (e.g. '"),
            std::string::npos)
      << log;
  for (const auto& l : c.log) {
    EXPECT_EQ(l.find('\n'), std::string::npos) << l;
    EXPECT_TRUE(scout::utf8_valid(l)) << l;
  }
  // A store that already holds such a path (written by an older scout): the observer restarts,
  // certifies it (certificate JSON from the raw name) and every reader prints it, never aborting.
  fs::create_directories(root + "/" + bad + "/weights");
  std::ofstream(root + "/" + bad + "/weights/metadata.json") << "{}";
  {
    Checkpoint raw;
    raw.path = root + "/" + bad;
    raw.framework = "nemo";
    raw.step = 99999;
    raw.completed_ns = kT0 + 6 * kSec + 200'000'000;
    raw.discovered_ns = raw.completed_ns;
    raw.manifest = take_manifest(raw.path);
    c.st->put_checkpoint(&raw);
  }
  c.restart();
  c.run(kT0 + 6 * kSec + 100'000'000, kT0 + 10 * kSec);  // the old code threw json type_error 316 here
  const Checkpoint* got = c.find(bad);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->state, State::kVerified);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"ckpt", "list", "--json"}, {"ckpt", "list"}, {"ckpt", "show", "3", "--json"},
        {"ckpt", "show", "3"}}) {
    std::vector<std::string> a = args;
    a.push_back("--store");
    a.push_back(c.store);
    auto r = scout_cli(a);
    EXPECT_LT(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_TRUE(scout::utf8_valid(r.out)) << r.out;
    EXPECT_EQ(r.out.find("\xff"), std::string::npos);
  }
  auto list = scout_cli({"ckpt", "list", "--store", c.store});
  EXPECT_NE(list.out.find("ev\\xff\\xfe step=99999"), std::string::npos) << list.out;
  // Named for a restart? Its path is not printable: refused with the reason.
  auto r = scout_cli({"ckpt", "latest", "--verified", "--store", c.store});
  EXPECT_EQ(r.out, root + "/step-2\n");
  EXPECT_NE(r.err.find("its path holds bytes a script would misread"), std::string::npos) << r.err;
}

// Runs `f` in another thread; fails the test when it has not returned within 10 s (it blocked).
template <typename F>
void within_10s(F f) {
  auto fut = std::async(std::launch::async, f);
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "blocked";
  fut.get();
}

TEST(CkptTrial, LatestAsSymlinkToDevZeroOrAsFifoNeverBlocksNorGrows) {
  TempDir d;
  const std::string a = d.path() + "/a", b = d.path() + "/b";
  fs::create_directories(a + "/global_step5");
  std::ofstream(a + "/global_step5/x.pt") << "x";
  ASSERT_EQ(::symlink("/dev/zero", (a + "/latest").c_str()), 0);
  fs::create_directories(b + "/global_step5");
  std::ofstream(b + "/global_step5/x.pt") << "x";
  ASSERT_EQ(::mkfifo((b + "/latest").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((b + "/latest_checkpointed_iteration.txt").c_str(), 0600), 0);
  fs::create_directories(b + "/checkpoint-7");
  ASSERT_EQ(::mkfifo((b + "/checkpoint-7/trainer_state.json").c_str(), 0600), 0);
  fs::create_directories(b + "/iter_0000007");
  ASSERT_EQ(::mkfifo((b + "/iter_0000007/metadata.json").c_str(), 0600), 0);
  within_10s([&] {
    for (const std::string& r : {a, b}) {
      auto v = scan_root(r, kT0, ScanOptions{});
      for (const Entry& e : v) EXPECT_FALSE(e.complete) << e.path;  // no marker could be read
    }
    const Manifest m = take_manifest(b + "/checkpoint-7");  // never opens the FIFO
    EXPECT_EQ(m.files.size(), 0u);
  });
  // A certifier over both roots keeps running passes.
  within_10s([&] {
    Certification c(d.path(), a);
    c.run(kT0, kT0 + 2 * kSec);
    EXPECT_TRUE(c.cert->checkpoints().empty());
  });
}

TEST(CkptTrial, HundredThousandEmptyFilesAreNoCandidatesAndOneLine) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  fs::create_directories(root);
  for (int i = 0; i < 100000; ++i) {
    const int fd = ::open((root + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  Certification c(d.path(), root);
  c.run(kT0, kT0 + kSec);
  EXPECT_TRUE(c.cert->checkpoints().empty());
  EXPECT_EQ(c.log.size(), 1u) << c.log_text();
  EXPECT_NE(c.log_text().find("100000 files, symlinks or special files at its top level are not checkpoints"),
            std::string::npos)
      << c.log_text();
}

TEST(CkptTrial, ThousandsOfNewDirectoriesAreCappedPerScanAndSaidOnce) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  for (int i = 0; i < 1500; ++i) {
    fs::create_directories(root + "/step-" + std::to_string(i));
    std::ofstream(root + "/step-" + std::to_string(i) + "/__0_0.distcp") << "x";  // half-written DCP
  }
  ScanStats st;
  auto v = scan_root(root, kT0, ScanOptions{}, &st);
  EXPECT_EQ(v.size(), kMaxNewEntriesPerRoot);
  EXPECT_EQ(st.over_cap, 1500 - int64_t(kMaxNewEntriesPerRoot));
  Certification c(d.path(), root);
  c.run(kT0, kT0 + kSec);
  int said = 0;
  for (const auto& l : c.log) said += l.find("more than 1024 new directories") != std::string::npos;
  EXPECT_EQ(said, 1) << c.log_text();
}

TEST(CkptTrial, CandidateAStoredFindingRejectsIsNeverNamedWithoutVerified) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  const std::string db = d.path() + "/node-0.db";
  dcp_checkpoint(root, "step-1", kT0 + 300'000'000);
  {
    // An sdc finding stored by the observer after the checkpoint completed, which the certifier
    // has not noted (it stopped): the store alone must keep `latest` from naming it.
    std::string err;
    scout::store::WriterOptions wo;
    wo.job = "j";
    auto w = scout::store::StoreWriter::open(db, wo, &err);
    ASSERT_TRUE(w) << err;
    scout::obs::Finding f;
    f.kind = scout::obs::FindingKind::kSdc;
    f.verdict = scout::obs::Verdict::kAttributed;
    f.dedup_key = "sdc/1";
    f.first_seen_ns = kT0 + kSec;
    f.last_seen_ns = kT0 + kSec;
    f.summary = "rank 3 differs";
    w->upsert_finding(&f);
    ASSERT_TRUE(w->flush());
  }
  {
    auto st = CkptStore::open_writer(db);
    Checkpoint cand;
    cand.path = root + "/step-1";
    cand.framework = "dcp";
    cand.step = 1;
    cand.completed_ns = kT0 + 300'000'000;
    cand.manifest = take_manifest(cand.path);
    st->put_checkpoint(&cand);
  }
  auto r = scout_cli({"ckpt", "latest", "--store", db});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("a finding rejects it: sdc finding #1 (attributed) after it was written"), std::string::npos)
      << r.err;
}

TEST(Manifest, RecordsSizesTimesAndSmallHashesAndComparesThem) {
  TempDir d;
  const std::string dir = d.path() + "/c";
  fs::create_directories(dir + "/sub");
  std::ofstream(dir + "/meta.json") << "{\"a\":1}";
  std::ofstream(dir + "/sub/shard.pt") << std::string(100, 'x');
  Manifest m = take_manifest(dir);
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[0].path, "meta.json");
  EXPECT_EQ(m.files[0].sha256.size(), 64u);
  EXPECT_EQ(m.files[1].path, "sub/shard.pt");
  EXPECT_EQ(m.files[1].size, 100u);
  EXPECT_EQ(m.bytes, 107u);
  const Manifest back = manifest_from_json(to_json(m));
  EXPECT_TRUE(back.present);
  EXPECT_EQ(compare_manifest(dir, back), "");
  // Same size and time, other content: the hash tells.
  struct stat st;
  ASSERT_EQ(::stat((dir + "/meta.json").c_str(), &st), 0);
  std::ofstream(dir + "/meta.json") << "{\"a\":2}";
  const timespec ts[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir + "/meta.json").c_str(), ts, 0), 0);
  EXPECT_EQ(compare_manifest(dir, back), "meta.json changed content (SHA-256 differs)");
  fs::remove(dir + "/sub/shard.pt");
  std::ofstream(dir + "/meta.json") << "{\"a\":1}";
  ::utimensat(AT_FDCWD, (dir + "/meta.json").c_str(), ts, 0);
  EXPECT_EQ(compare_manifest(dir, back), "sub/shard.pt is missing");
  EXPECT_FALSE(manifest_from_json(nlohmann::json::parse(R"({"files":[["a","x",1,"",false]]})")).present);
}

}  // namespace
