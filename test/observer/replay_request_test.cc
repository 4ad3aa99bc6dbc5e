// On-demand replay requests (observer/replay/request.h): a written request is taken
// once, oldest first, and removed; hostile files beside the store (a FIFO, a symbolic link, a
// file over 64 KiB, bad JSON, a kind that is not a recipe kind) are removed and reported without
// blocking, and never become a request.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "observer/replay/request.h"
#include "test/support/tmpdir.h"

namespace {

using scout::obs::ReplayRequest;
using scout::obs::replay_request_prefix;
using scout::obs::take_replay_request;
using scout::obs::write_replay_request;
using scout::testing::TempDir;

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ReplayRequest, WrittenRequestIsTakenOnceWithItsRanksAndKinds) {
  TempDir dir;
  const std::string prefix = replay_request_prefix(dir.path() + "/node-0.db");
  EXPECT_EQ(prefix, dir.path() + "/node-0.db.replay-request.");
  std::string err;
  ASSERT_TRUE(write_replay_request(prefix, {"42-1", {0, 1, 5}, {"gemm", "link"}}, &err)) << err;
  auto r = take_replay_request(prefix, &err);
  ASSERT_TRUE(r.has_value()) << err;
  EXPECT_EQ(r->id, "42-1");
  EXPECT_EQ(r->ranks, (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(r->recipes, (std::vector<std::string>{"gemm", "link"}));
  EXPECT_FALSE(take_replay_request(prefix, &err).has_value());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(ReplayRequest, OldestRequestFirstAndOtherStoresRequestsLeftAlone) {
  TempDir dir;
  const std::string prefix = replay_request_prefix(dir.path() + "/node-0.db");
  const std::string other = replay_request_prefix(dir.path() + "/node-1.db");
  std::string err;
  ASSERT_TRUE(write_replay_request(other, {"7", {}, {}}, &err)) << err;
  ASSERT_TRUE(write_replay_request(prefix, {"b", {}, {}}, &err)) << err;
  timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (prefix + "b.json").c_str(), old, 0), 0);
  ASSERT_TRUE(write_replay_request(prefix, {"a", {}, {}}, &err)) << err;
  EXPECT_EQ(take_replay_request(prefix, &err)->id, "b");
  EXPECT_EQ(take_replay_request(prefix, &err)->id, "a");
  EXPECT_FALSE(take_replay_request(prefix, &err).has_value());
  EXPECT_TRUE(std::filesystem::exists(other + "7.json"));
}

TEST(ReplayRequest, HostileFilesAreRemovedAndReportedNeverTaken) {
  TempDir dir;
  const std::string prefix = replay_request_prefix(dir.path() + "/node-0.db");
  struct Case {
    std::string name;
    std::function<void(const std::string&)> make;
    std::string why;
  };
  std::vector<Case> cases = {
      {"fifo", [](const std::string& p) { ASSERT_EQ(mkfifo(p.c_str(), 0600), 0); },
       "not a regular file owned by this user"},
      {"link", [&](const std::string& p) { ASSERT_EQ(symlink("/etc/passwd", p.c_str()), 0); }, "cannot open: "},
      {"big", [](const std::string& p) { put(p, std::string(70000, ' ')); }, "larger than 64 KiB"},
      {"json", [](const std::string& p) { put(p, "{not json"); }, "not a JSON object"},
      {"kind", [](const std::string& p) { put(p, R"({"id":"x","recipes":["rm"]})"); },
       "recipes holds a kind other than gemm, coll, link"},
      {"rank", [](const std::string& p) { put(p, R"({"id":"x","ranks":[-1]})"); },
       "ranks holds a value that is not a global rank"},
      {"id", [](const std::string& p) { put(p, R"({"id":"../x"})"); }, "no valid id"},
  };
  for (const Case& c : cases) {
    const std::string path = prefix + c.name + ".json";
    c.make(path);
    std::string err;
    EXPECT_FALSE(take_replay_request(prefix, &err).has_value()) << c.name;
    EXPECT_EQ(err.rfind("replay request " + path + " ignored: " + c.why, 0), 0u) << c.name << ": " << err;
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path))) << c.name;
  }
  EXPECT_TRUE(std::filesystem::exists("/etc/passwd"));
}

// The second adversarial trial: a directory named like a request file blocked every later
// `scout replay run` (taken first, reported at every pass, never removable). It is ignored now:
// the real request behind it is taken, and nothing is reported for the directory.
TEST(ReplayRequest, DirectoryNamedLikeARequestIsIgnoredAndDoesNotBlockLaterRequests) {
  TempDir dir;
  const std::string prefix = replay_request_prefix(dir.path() + "/node-0.db");
  ASSERT_TRUE(std::filesystem::create_directory(prefix + "aaa.json"));
  timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (prefix + "aaa.json").c_str(), old, 0), 0);  // the oldest entry
  std::string err;
  ASSERT_TRUE(write_replay_request(prefix, {"real", {}, {"gemm"}}, &err)) << err;
  err.clear();
  auto r = take_replay_request(prefix, &err);
  ASSERT_TRUE(r.has_value()) << err;
  EXPECT_EQ(r->id, "real");
  EXPECT_EQ(err, "");
  for (int pass = 0; pass < 3; ++pass) {
    EXPECT_FALSE(take_replay_request(prefix, &err).has_value());
    EXPECT_EQ(err, "");  // never reported
  }
  EXPECT_TRUE(std::filesystem::is_directory(prefix + "aaa.json"));
}

TEST(ReplayRequest, InvalidIdIsRefusedAtWrite) {
  TempDir dir;
  std::string err;
  EXPECT_FALSE(write_replay_request(replay_request_prefix(dir.path() + "/s.db"), {"a/b", {}, {}}, &err));
  EXPECT_EQ(err, "invalid request id 'a/b'");
}

}  // namespace
