// GlooChannel with real observer processes on loopback: FileStore and RedisStore rendezvous,
// results and traffic identical to the in-process channel, wire bytes checked against the
// kernel's TCP counters, and the failure cases (missing, dead, slow observer).
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define HIREDIS_NESTED_INCLUDE 1
#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "observer/net/gloo_channel.h"
#include "observer/net/inproc_channel.h"
#include "test/net/net_test_util.h"
#include "test/net/proc_util.h"
#include "test/support/tmpdir.h"

namespace scout::net {
namespace {

using scout::testing::TempDir;
using testing::ChildResult;
using testing::file_barrier;
using testing::run_processes;

GlooOptions options(const std::string& rdzv, int rank, int size) {
  GlooOptions o;
  o.rdzv = rdzv;
  o.job = "job-1";
  o.rank = rank;
  o.size = size;
  o.hostname = "127.0.0.1";
  o.join_timeout = std::chrono::milliseconds(20000);
  o.timeout = std::chrono::milliseconds(20000);
  return o;
}

// The same sequence of collectives everywhere; returns a text line of everything it got, so
// two transports can be compared byte for byte.
std::string scenario(Channel& ch) {
  std::ostringstream out;
  const int r = ch.rank();
  std::vector<uint64_t> a(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = (i * 2654435761u + r * 97) % 100003;
  ch.allreduce(a, ReduceOp::kMin);
  std::vector<uint64_t> b = {uint64_t(r), uint64_t(r * r), 7};
  ch.allreduce(b, ReduceOp::kSum);
  std::vector<uint64_t> c(5, uint64_t(r) << 40);
  ch.allreduce(c, ReduceOp::kMax);
  ch.barrier();
  std::vector<uint8_t> d = ch.is_leader() ? std::vector<uint8_t>(3000, 0x5a) : std::vector<uint8_t>{};
  ch.broadcast(&d);
  std::vector<uint8_t> mine(r == 2 ? 700 : 0, uint8_t(r));
  auto g = ch.gather_to_leader(mine);
  auto all = ch.allgather(std::vector<uint8_t>(size_t(r + 1), uint8_t(10 + r)));
  uint64_t h = 0;
  for (auto x : a) h = h * 31 + x;
  out << "a=" << h << " b=" << b[0] << "," << b[1] << "," << b[2] << " c=" << c[0] << " d=" << d.size() << ":"
      << int(d.empty() ? 0 : d.back()) << " g=";
  for (auto& x : g) out << x.rank << ":" << x.bytes.size() << ";";
  out << " all=";
  for (auto& x : all) out << x.size() << ";";
  return out.str();
}

std::string traffic_text(const Traffic& t) {
  return std::to_string(t.messages_sent) + "/" + std::to_string(t.messages_received) + "/" +
         std::to_string(t.payload_sent) + "/" + std::to_string(t.payload_received);
}

// Bytes the kernel counted on every TCP socket of this process: inode -> (acked, received).
std::map<ino_t, std::pair<uint64_t, uint64_t>> tcp_bytes() {
  std::map<ino_t, std::pair<uint64_t, uint64_t>> m;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return m;
  while (dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st;
    if (fd <= 2 || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    tcp_info ti{};
    socklen_t len = sizeof(ti);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) continue;
    m[st.st_ino] = {ti.tcpi_bytes_acked, ti.tcpi_bytes_received};
  }
  ::closedir(d);
  return m;
}

std::pair<uint64_t, uint64_t> tcp_delta(const std::map<ino_t, std::pair<uint64_t, uint64_t>>& a,
                                        const std::map<ino_t, std::pair<uint64_t, uint64_t>>& b) {
  uint64_t sent = 0, recv = 0;
  for (const auto& [ino, v] : b) {
    auto it = a.find(ino);
    sent += v.first - (it == a.end() ? 0 : it->second.first);
    recv += v.second - (it == a.end() ? 0 : it->second.second);
  }
  return {sent, recv};
}

// What the in-process channel produces for the same scenario: per rank, results and traffic.
std::vector<std::string> inproc_reference(int n) {
  InprocNetwork net(n);
  std::vector<std::string> lines(n);
  testing::run_endpoints(net, [&](Channel& ch) {
    const std::string got = scenario(ch);
    lines[ch.rank()] = got + " traffic=" + traffic_text(ch.traffic());
  });
  return lines;
}

TEST(GlooChannel, FileStoreFourObserversMatchInprocAndTcpCounters) {
  TempDir tmp;
  const std::string rdzv = "file:" + tmp.path() + "/rdzv";
  const std::string sync = tmp.path();
  const int n = 4;
  auto res = run_processes(n, [&](int r) {
    auto ch = GlooChannel::connect(options(rdzv, r, n));
    // Counters first, then wait until every observer has taken its own: no byte of the
    // scenario can reach a socket before its receiver took the starting snapshot.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ACKs of connect() settle
    const auto t0 = ch->traffic();
    const auto s0 = tcp_bytes();
    file_barrier(sync, "counted", r, n);
    std::string line = scenario(*ch);
    const Traffic t = ch->traffic() - t0;
    file_barrier(sync, "done", r, n);                             // every message of every observer has arrived
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // loopback ACKs
    const auto [sent, recv] = tcp_delta(s0, tcp_bytes());
    file_barrier(sync, "measured", r, n);  // nobody closes a socket before all have counted
    return line + " traffic=" + traffic_text(t) + "\n" + std::to_string(t.wire_sent()) + " " +
           std::to_string(t.wire_received()) + " " + std::to_string(sent) + " " + std::to_string(recv);
  });
  const auto want = inproc_reference(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r].status, 0) << "observer " << r << ": " << res[r].report;
    std::istringstream in(res[r].report);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, want[r]) << "observer " << r;
    uint64_t wire_sent, wire_recv, tcp_sent, tcp_recv;
    in >> wire_sent >> wire_recv >> tcp_sent >> tcp_recv;
    EXPECT_EQ(tcp_recv, wire_recv) << "observer " << r << ": kernel vs Traffic::wire_received()\n" << res[r].report;
    EXPECT_EQ(tcp_sent, wire_sent) << "observer " << r << ": kernel vs Traffic::wire_sent()";
  }
  // The rendezvous left only its epoch marker behind.
  int files = 0;
  if (DIR* d = ::opendir((tmp.path() + "/rdzv").c_str())) {
    while (dirent* e = ::readdir(d)) files += e->d_name[0] != '.';
    ::closedir(d);
  }
  EXPECT_EQ(files, 1);
}

TEST(GlooChannel, RedisStoreFourObservers) {
  TempDir tmp;
  testing::RedisServer redis(tmp.path());
  if (!redis.ok()) GTEST_SKIP() << "RedisStore test skipped: " << redis.why();
  const std::string rdzv = "redis:127.0.0.1:" + std::to_string(redis.port());
  const int n = 4;
  auto res = run_processes(n, [&](int r) {
    auto ch = GlooChannel::connect(options(rdzv, r, n));
    const std::string got = scenario(*ch);
    return got + " traffic=" + traffic_text(ch->traffic());
  });
  auto want = inproc_reference(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r].status, 0) << "observer " << r << ": " << res[r].report;
    // The connect() barrier is the first call on the Gloo side: compare results only.
    EXPECT_EQ(res[r].report.substr(0, res[r].report.find(" traffic=")), want[r].substr(0, want[r].find(" traffic=")));
  }
  // Keys left in redis: only the epoch marker.
  redisContext* c = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(c && !c->err);
  auto* reply = static_cast<redisReply*>(redisCommand(c, "KEYS *"));
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(reply->elements, 1u);
  EXPECT_EQ(std::string(reply->element[0]->str), "scout/job-1/epoch/0");
  freeReplyObject(reply);
  redisFree(c);
  EXPECT_EQ(GlooChannel::latest_epoch(rdzv, "job-1"), 0u);
  EXPECT_EQ(GlooChannel::latest_epoch(rdzv, "other-job"), 0u);
}

TEST(GlooChannel, MissingObserverFailsNamingItInsteadOfHanging) {
  TempDir tmp;
  const std::string rdzv = "file:" + tmp.path();
  auto res = run_processes(3, [&](int r) -> std::string {
    auto o = options(rdzv, r, 4);  // node-rank 3 never starts
    o.join_timeout = std::chrono::milliseconds(1500);
    try {
      GlooChannel::connect(o);
    } catch (const ChannelError& e) { return e.what(); }
    return "connected without node-rank 3";
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(res[r].status, 0) << res[r].report;
    EXPECT_NE(res[r].report.find("node-rank 3 (of 4) did not join within 1500 ms"), std::string::npos) << res[r].report;
    EXPECT_NE(res[r].report.find("rendezvous file:"), std::string::npos) << res[r].report;
  }
}

TEST(GlooChannel, DeadObserverFailsThePeersWithoutWaitingForTheTimeout) {
  TempDir tmp;
  const std::string rdzv = "file:" + tmp.path() + "/rdzv";
  auto res = run_processes(
      4,
      [&](int r) -> std::string {
        auto o = options(rdzv, r, 4);
        o.timeout = std::chrono::milliseconds(60000);
        auto ch = GlooChannel::connect(o);
        if (r == 3) ::_exit(0);  // the observer on node 3 dies; the kernel closes its sockets
        std::vector<uint64_t> v(64, 1);
        const auto t0 = std::chrono::steady_clock::now();
        try {
          for (int i = 0; i < 3; ++i) ch->allreduce(v, ReduceOp::kSum);
        } catch (const ChannelError& e) {
          const auto waited = std::chrono::steady_clock::now() - t0;
          return std::string(e.what()) + (waited < std::chrono::seconds(30) ? " [before timeout]" : "");
        }
        return "allreduce succeeded without node-rank 3";
      },
      std::chrono::seconds(50));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(res[r].status, 0);
    EXPECT_NE(res[r].report.find("observer network: allreduce"), std::string::npos) << res[r].report;
    EXPECT_NE(res[r].report.find("[before timeout]"), std::string::npos) << res[r].report;
  }
}

TEST(GlooChannel, SlowObserverMakesThePeersTimeOut) {
  TempDir tmp;
  const std::string rdzv = "file:" + tmp.path() + "/rdzv";
  auto res = run_processes(3, [&](int r) -> std::string {
    auto o = options(rdzv, r, 3);
    o.timeout = std::chrono::milliseconds(300);
    auto ch = GlooChannel::connect(o);
    if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    try {
      ch->barrier();
    } catch (const ChannelError& e) { return e.what(); }
    return "barrier passed";
  });
  // Node 0 waits for node 2 in the first dissemination round (rank - 1 = 2 mod 3).
  EXPECT_NE(res[0].report.find("Timed out"), std::string::npos) << res[0].report;
  EXPECT_NE(res[0].report.find("node-rank 2"), std::string::npos) << res[0].report;
  EXPECT_EQ(res[2].report.find("barrier passed"), std::string::npos) << res[2].report;
}

TEST(GlooChannel, EpochsAdvanceAndAreFoundByLatestEpoch) {
  TempDir tmp;
  const std::string rdzv = "file:" + tmp.path() + "/rdzv";
  EXPECT_EQ(GlooChannel::latest_epoch(rdzv, "job-1"), 0u);
  auto res = run_processes(2, [&](int r) -> std::string {
    for (uint64_t e : {0, 1, 2}) {
      auto o = options(rdzv, r, 2);
      o.epoch = e;
      auto ch = GlooChannel::connect(o);
      std::vector<uint64_t> v = {e + 1};
      ch->allreduce(v, ReduceOp::kSum);
      if (v[0] != 2 * (e + 1)) return "wrong sum in epoch " + std::to_string(e);
    }
    return "";
  });
  for (auto& c : res) EXPECT_EQ(c.status, 0) << c.report;
  for (auto& c : res) EXPECT_EQ(c.report, "");
  EXPECT_EQ(GlooChannel::latest_epoch(rdzv, "job-1"), 2u);
  EXPECT_EQ(GlooChannel::latest_epoch(rdzv, "job-2"), 0u);
}

TEST(GlooChannel, BadRendezvousSpecsAreRejectedClearly) {
  for (const char* spec :
       {"", "file:", "tcp:1.2.3.4", "redis:host", "redis:host:0", "redis::80", "redis:host:99999", "redis:host:12ab"}) {
    GlooOptions o = options(spec, 0, 1);
    try {
      GlooChannel::connect(o);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const ChannelError& e) {
      EXPECT_NE(std::string(e.what()).find("expected file:DIR or redis:HOST:PORT"), std::string::npos)
          << spec << ": " << e.what();
    }
  }
}

TEST(GlooChannel, UnreachableRedisIsAClearError) {
  const int port = testing::free_port();
  GlooOptions o = options("redis:127.0.0.1:" + std::to_string(port), 0, 1);
  try {
    GlooChannel::connect(o);
    ADD_FAILURE() << "connected to nothing";
  } catch (const ChannelError& e) {
    EXPECT_NE(std::string(e.what()).find("unreachable"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scout::net
