// The net plugin half of libnccl-profiler-scout.so, loaded and driven as NCCL 2.28.9 drives a
// v11 net plugin (test/sim/net_driver.h: non-blocking connect/accept, regMr, isend/irecv/test,
// close, finalize), wrapping the test delegate (test/netdelegate/: TCP between processes, an
// in-memory channel inside one). What a user relies on (docs/net-plugin.md):
//   - init is refused with one WARN line without a usable delegate, and the profiler half keeps
//     working;
//   - properties come back field by field as the delegate gives them (converted across v11/v12);
//   - the delegate's NULL optional slots are NULL in scout's tables, its others are not;
//   - payload bytes and sizes pass through unchanged, every transfer lands in the link table with
//     the peer's identity from the listen handle;
//   - the drills delay, stall and flip exactly what SCOUT_NET_FAULT says and write ground truth.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/link_reader.h"
#include "common/paths.h"
#include "common/segment_reader.h"
#include "plugin/net/net.h"
#include "test/plugin/plugin_fixture.h"
#include "test/sim/net_driver.h"

namespace scout::testing {
namespace {

using sim::NetLink;

std::string delegate_path(bool min) {
  return build_path(min ? "lib/libnccl-net-scouttest-min.so" : "lib/libnccl-net-scouttest.so");
}

// The delegate's own call counters (scouttest_net_counters): init, isend, irecv, test, regMr,
// closeSend, closeRecv, finalize.
std::vector<uint64_t> delegate_counters(bool min) {
  void* h = ::dlopen(delegate_path(min).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  std::vector<uint64_t> out(8, 0);
  if (h == nullptr) return out;
  auto fn = reinterpret_cast<void (*)(uint64_t*)>(::dlsym(h, "scouttest_net_counters"));
  if (fn != nullptr) fn(out.data());
  ::dlclose(h);
  return out;
}

class NetPluginTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    load();  // the profiler table of the same library (one dlopen handle for both halves)
    for (const char* v : {"SCOUT_NET_DELEGATE", "SCOUT_NET_FAULT", "SCOUT_TRUTH", "NCCL_NET_PLUGIN"}) env_.unset(v);
    net_ = sim::load_net_plugin(plugin_path().c_str());
    ASSERT_TRUE(net_.ok()) << net_.error;
    t_ = net_.v11;
  }
  void TearDown() override {
    sim::unload_net_plugin(&net_);
    PluginTest::TearDown();
  }
  void* init_ok(uint64_t comm = 0xc0ffee) {
    void* ctx = reinterpret_cast<void*>(0x1);
    abi::NetCommConfig cfg{-1};
    abi::Result r = t_->init(&ctx, comm, &cfg, capture_logger(), nullptr);
    EXPECT_EQ(r, abi::kSuccess);
    EXPECT_NE(ctx, nullptr);
    return r == abi::kSuccess ? ctx : nullptr;
  }
  // The link table of the only segment in the directory.
  std::vector<shm::LinkSnapshot> links(shm::LinkTableInfo* info = nullptr) {
    std::vector<shm::LinkSnapshot> out;
    std::vector<std::string> files = segment_files(dir_.path());
    EXPECT_EQ(files.size(), 1u);
    if (files.size() != 1) return out;
    std::string err;
    auto rd = shm::SegmentReader::open(files[0], &err);
    EXPECT_TRUE(rd) << err;
    if (!rd) return out;
    uint32_t cap = 0;
    const shm::LinkTableHeader* t = shm::link_table(*rd, &cap);
    EXPECT_NE(t, nullptr);
    if (t == nullptr) return out;
    if (info != nullptr) *info = shm::read_link_info(t, cap);
    shm::read_links(t, cap, &out);
    return out;
  }
  sim::LoadedNet net_;
  const abi::NetV11* t_ = nullptr;
};

// Runs `fn` in a forked child (own environment, the plugin already mapped) and returns what it
// printed to the pipe and its exit status.
struct ChildResult {
  int status = -1;
  std::string out;
};
ChildResult in_child(const std::function<int(int fd)>& fn) {
  int p[2];
  if (::pipe(p) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    int rc = fn(p[1]);
    ::close(p[1]);
    ::_exit(rc);
  }
  ::close(p[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof(buf))) > 0) r.out.append(buf, size_t(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}
void say(int fd, const std::string& s) { (void)!::write(fd, s.data(), s.size()); }

TEST_F(NetPluginTest, BothTablesAreNamedScout) {
  ASSERT_NE(net_.v11, nullptr);
  ASSERT_NE(net_.v12, nullptr);
  EXPECT_STREQ(net_.v11->name, "scout");
  EXPECT_STREQ(net_.v12->name, "scout");
}

// Unset, missing file, a library without a table, scout itself: init refused, one WARN line
// naming the reason, and the profiler half of the same library still records.
TEST_F(NetPluginTest, InitRefusedWithoutAUsableDelegateAndTheProfilerKeepsWorking) {
  struct Case {
    const char* delegate;  // nullptr: unset
    const char* says;
  };
  std::string self = plugin_path();
  const Case cases[] = {
      {nullptr, "SCOUT_NET_DELEGATE is not set"},
      {"/nonexistent/libnccl-net-x.so", "cannot open the delegate"},
      {"libm.so.6", "exports neither ncclNetPlugin_v12 nor ncclNetPlugin_v11"},
      {self.c_str(), "is scout itself"},
  };
  for (const Case& c : cases) {
    ChildResult r = in_child([&](int fd) {
      if (c.delegate != nullptr) ::setenv("SCOUT_NET_DELEGATE", c.delegate, 1);
      clear_captured_logs();
      void* ctx = reinterpret_cast<void*>(0x1);
      abi::NetCommConfig cfg{-1};
      int r1 = t_->init(&ctx, 7, &cfg, capture_logger(), nullptr);
      int r2 = t_->init(&ctx, 8, &cfg, capture_logger(), nullptr);
      int warn_lines = 0;
      std::string text;
      for (const std::string& l : captured_logs()) {
        if (l.find("scout net:") != std::string::npos) {
          warn_lines++;
          text = l;
        }
      }
      // The profiler half of the same library: a communicator still records.
      Plugin pl(lp_);
      void* pctx = pl.init(0xabc, 2, 0);
      say(fd, std::to_string(r1) + " " + std::to_string(r2) + " " + std::to_string(ctx == nullptr) + " " +
                  std::to_string(warn_lines) + " " + std::to_string(pctx != nullptr) + "\n" + text);
      pl.finalize(pctx);
      return 0;
    });
    SCOPED_TRACE(c.delegate != nullptr ? c.delegate : "(unset)");
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
              std::to_string(abi::kInternalError) + " " + std::to_string(abi::kInternalError) + " 1 1 1")
        << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
  }
}

TEST_F(NetPluginTest, PropertiesPassThroughFieldByField) {
  for (bool min : {false, true}) {
    SCOPED_TRACE(min ? "v11-only delegate" : "v12 delegate");
    env_.set("SCOUT_NET_DELEGATE", delegate_path(min));
    void* ctx = init_ok();
    ASSERT_NE(ctx, nullptr);
    sim::LoadedNet d = sim::load_net_plugin(delegate_path(min).c_str());
    ASSERT_TRUE(d.ok());
    int n_scout = -1, n_del = -1;
    ASSERT_EQ(t_->devices(&n_scout), abi::kSuccess);
    ASSERT_EQ(d.v11->devices(&n_del), abi::kSuccess);
    EXPECT_EQ(n_scout, 1);
    EXPECT_EQ(n_scout, n_del);
    // v11 through scout vs the delegate's v11 table.
    abi::NetPropertiesV11 a, b;
    std::memset(&a, 0x55, sizeof(a));
    std::memset(&b, 0x55, sizeof(b));
    ASSERT_EQ(t_->getProperties(0, &a), abi::kSuccess);
    ASSERT_EQ(d.v11->getProperties(0, &b), abi::kSuccess);
    EXPECT_STREQ(a.name, b.name);
    EXPECT_EQ(a.pciPath, b.pciPath);
    EXPECT_EQ(a.guid, b.guid);
    EXPECT_EQ(a.guid, 0x5c0e7e570000ull);
    EXPECT_EQ(a.ptrSupport, b.ptrSupport);
    EXPECT_EQ(a.regIsGlobal, b.regIsGlobal);
    EXPECT_EQ(a.forceFlush, b.forceFlush);
    EXPECT_EQ(a.speed, 12345);
    EXPECT_EQ(a.speed, b.speed);
    EXPECT_EQ(a.port, b.port);
    EXPECT_EQ(a.latency, 1.5f);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.maxComms, b.maxComms);
    EXPECT_EQ(a.maxRecvs, b.maxRecvs);
    EXPECT_EQ(a.netDeviceType, b.netDeviceType);
    EXPECT_EQ(a.netDeviceVersion, b.netDeviceVersion);
    EXPECT_EQ(a.vProps.ndevs, b.vProps.ndevs);
    EXPECT_EQ(a.vProps.devs[0], b.vProps.devs[0]);
    EXPECT_EQ(a.maxP2pBytes, b.maxP2pBytes);
    EXPECT_EQ(a.maxCollBytes, b.maxCollBytes);
    EXPECT_EQ(a.maxMultiRequestSize, b.maxMultiRequestSize);
    // v12 through scout: the delegate's own v12, or its v11 with railId/planeId undefined (-1).
    abi::NetPropertiesV12 c;
    std::memset(&c, 0x55, sizeof(c));
    ASSERT_EQ(net_.v12->getProperties(0, &c), abi::kSuccess);
    EXPECT_STREQ(c.name, b.name);
    EXPECT_EQ(c.guid, b.guid);
    EXPECT_EQ(c.speed, b.speed);
    EXPECT_EQ(c.latency, b.latency);
    EXPECT_EQ(c.maxP2pBytes, b.maxP2pBytes);
    EXPECT_EQ(c.maxMultiRequestSize, b.maxMultiRequestSize);
    EXPECT_EQ(c.vProps.ndevs, 1);
    if (min) {
      EXPECT_EQ(d.v12, nullptr);
      EXPECT_EQ(c.railId, -1);
      EXPECT_EQ(c.planeId, -1);
    } else {
      ASSERT_NE(d.v12, nullptr);
      abi::NetPropertiesV12 e;
      std::memset(&e, 0, sizeof(e));
      ASSERT_EQ(d.v12->getProperties(0, &e), abi::kSuccess);
      EXPECT_EQ(c.railId, 3);
      EXPECT_EQ(c.planeId, 1);
      EXPECT_EQ(std::memcmp(&c.vProps, &e.vProps, sizeof(e.vProps)), 0);
    }
    EXPECT_EQ(t_->getProperties(1, &a), abi::kInvalidArgument);  // the delegate's error, unchanged
    sim::unload_net_plugin(&d);
    EXPECT_EQ(t_->finalize(ctx), abi::kSuccess);
  }
}

TEST_F(NetPluginTest, NullSlotsOfTheDelegateAreNullInScoutsTables) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(true));
  void* ctx = init_ok();
  for (const auto* t : {net_.v11}) {
    EXPECT_EQ(t->iflush, nullptr);  // a host-only delegate without iflush is accepted (NCCL runs it)
    EXPECT_EQ(t->regMrDmaBuf, nullptr);
    EXPECT_EQ(t->getDeviceMr, nullptr);
    EXPECT_EQ(t->irecvConsumed, nullptr);
    EXPECT_EQ(t->makeVDevice, nullptr);
    EXPECT_EQ(t->setNetAttr, nullptr);
  }
  EXPECT_EQ(net_.v12->getDeviceMr, nullptr);
  EXPECT_EQ(net_.v12->makeVDevice, nullptr);
  EXPECT_NE(t_->isend, nullptr);
  EXPECT_EQ(t_->finalize(ctx), abi::kSuccess);

  env_.set("SCOUT_NET_DELEGATE", delegate_path(false));
  ctx = init_ok();
  EXPECT_NE(t_->iflush, nullptr);
  EXPECT_NE(t_->regMrDmaBuf, nullptr);
  EXPECT_NE(t_->getDeviceMr, nullptr);
  EXPECT_NE(t_->irecvConsumed, nullptr);
  EXPECT_NE(t_->makeVDevice, nullptr);
  EXPECT_NE(t_->setNetAttr, nullptr);
  EXPECT_NE(net_.v12->makeVDevice, nullptr);
  // Forwarded: makeVDevice of device 0 alone is device 0; setNetAttr reaches the delegate.
  abi::NetVDevicePropsV11 vp{1, {0, 0, 0, 0}};
  int d = -1;
  EXPECT_EQ(t_->makeVDevice(&d, &vp), abi::kSuccess);
  EXPECT_EQ(d, 0);
  vp.devs[0] = 5;
  EXPECT_EQ(t_->makeVDevice(&d, &vp), abi::kInvalidArgument);
  abi::NetAttr attr{};
  EXPECT_EQ(t_->setNetAttr(ctx, &attr), abi::kSuccess);
  EXPECT_EQ(t_->finalize(ctx), abi::kSuccess);
}

// Two contexts of one process (an in-memory channel of the delegate): every payload arrives
// byte for byte with its size, and the link table holds both ends with their counts.
TEST_F(NetPluginTest, BytesPassThroughAndEveryTransferIsInTheLinkTable) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(false));
  std::vector<uint64_t> before = delegate_counters(false);
  void* ca = init_ok(0x1111);
  void* cb = init_ok(0x1111);
  NetLink l;
  ASSERT_EQ(sim::net_listen(t_, cb, &l), abi::kSuccess);
  net::HandleId id;
  std::memcpy(&id, l.handle + net::kHandleIdOffset, sizeof(id));
  EXPECT_EQ(id.magic, net::kHandleIdMagic);
  EXPECT_EQ(id.global_rank, 3);  // RANK of the fixture
  EXPECT_EQ(id.pid, ::getpid());
  std::string err;
  ASSERT_TRUE(sim::net_establish(t_, ca, &l, true, true, 10, &err)) << err;
  std::vector<unsigned char> sbuf(1 << 16), rbuf(1 << 16);
  ASSERT_EQ(sim::net_register(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size()), abi::kSuccess);
  const size_t sizes[] = {1, 64, 4096, 65536, 3};
  uint64_t total = 0;
  for (size_t k = 0; k < 5; ++k) {
    for (size_t i = 0; i < sizes[k]; ++i) sbuf[i] = static_cast<unsigned char>(i * 31 + k);
    std::fill(rbuf.begin(), rbuf.end(), 0);
    int got = -1;
    ASSERT_TRUE(sim::net_transfer(t_, &l, sbuf.data(), sizes[k], rbuf.data(), rbuf.size(), int(k), 10, &got, &err))
        << err;
    EXPECT_EQ(got, int(sizes[k]));
    EXPECT_EQ(std::memcmp(sbuf.data(), rbuf.data(), sizes[k]), 0) << "message " << k;
    total += sizes[k];
  }
  std::vector<uint64_t> after = delegate_counters(false);
  EXPECT_EQ(after[1] - before[1], 5u);  // isend
  EXPECT_EQ(after[2] - before[2], 5u);  // irecv

  shm::LinkTableInfo info;
  std::vector<shm::LinkSnapshot> ls = links(&info);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(info.net_state, shm::kNetActive);
  EXPECT_EQ(info.net_abi, 11u);
  EXPECT_EQ(info.delegate_abi, 12u);
  EXPECT_EQ(info.delegate, delegate_path(false));
  EXPECT_EQ(info.net_inits, 2u);
  const shm::LinkSnapshot* s = ls[0].dir == shm::kLinkSend ? &ls[0] : &ls[1];
  const shm::LinkSnapshot* r = ls[0].dir == shm::kLinkSend ? &ls[1] : &ls[0];
  ASSERT_EQ(s->dir, shm::kLinkSend);
  ASSERT_EQ(r->dir, shm::kLinkRecv);
  for (const shm::LinkSnapshot* e : {s, r}) {
    EXPECT_EQ(e->source, shm::kLinkSourceNet);
    EXPECT_EQ(e->state, shm::kLinkOpen);
    EXPECT_EQ(e->comm_hash, 0x1111u);
    EXPECT_EQ(e->transfers, 5u);
    EXPECT_EQ(e->posted, 5u);
    EXPECT_EQ(e->bytes, total);
    EXPECT_EQ(e->link_id, id.nonce);
    uint64_t in_hist = 0;
    for (uint32_t h : e->hist) in_hist += h;
    EXPECT_EQ(in_hist, 5u);
    EXPECT_GE(e->busy_ns, e->max_ns);
  }
  EXPECT_EQ(s->peer_global_rank, 3);
  EXPECT_EQ(s->peer_pid, ::getpid());
  EXPECT_EQ(s->peer_host_hash, shm::fnv1a64("node-a"));
  EXPECT_EQ(r->peer_global_rank, -1);  // a receiver is not told who connected
  sim::net_close(t_, &l);
  ls = links();
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].state, shm::kLinkClosed);
  EXPECT_EQ(ls[1].state, shm::kLinkClosed);
  EXPECT_GT(ls[0].close_ns, 0);
  EXPECT_EQ(t_->finalize(ca), abi::kSuccess);
  EXPECT_EQ(t_->finalize(cb), abi::kSuccess);
}

// A host-only delegate without iflush (the -min build: v11, ptrSupport NCCL_PTR_HOST, every
// optional slot NULL) is accepted, as NCCL itself would run it (it flushes only receives into GPU
// memory, src/transport/net.cc): scout's table has no iflush either, and transfers go through.
TEST_F(NetPluginTest, HostOnlyDelegateWithoutIflushCarriesTransfers) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(true));
  void* ca = init_ok(0x2222);
  void* cb = init_ok(0x2222);
  EXPECT_EQ(t_->iflush, nullptr);
  abi::NetPropertiesV11 props;
  ASSERT_EQ(t_->getProperties(0, &props), abi::kSuccess);
  EXPECT_EQ(props.ptrSupport, abi::kPtrHost);
  NetLink l;
  ASSERT_EQ(sim::net_listen(t_, cb, &l), abi::kSuccess);
  std::string err;
  ASSERT_TRUE(sim::net_establish(t_, ca, &l, true, true, 10, &err)) << err;
  std::vector<unsigned char> sbuf(1 << 12), rbuf(1 << 12);
  ASSERT_EQ(sim::net_register(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size()), abi::kSuccess);
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = static_cast<unsigned char>(i * 7 + k);
    std::fill(rbuf.begin(), rbuf.end(), 0);
    int got = -1;
    ASSERT_TRUE(sim::net_transfer(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size(), k, 10, &got, &err))
        << err;
    EXPECT_EQ(got, int(sbuf.size()));
    EXPECT_EQ(std::memcmp(sbuf.data(), rbuf.data(), sbuf.size()), 0) << "message " << k;
  }
  shm::LinkTableInfo info;
  std::vector<shm::LinkSnapshot> ls = links(&info);
  EXPECT_EQ(info.net_state, shm::kNetActive);
  EXPECT_EQ(info.delegate_abi, 11u);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].transfers, 3u);
  EXPECT_EQ(ls[1].transfers, 3u);
  sim::net_close(t_, &l);
  EXPECT_EQ(t_->finalize(ca), abi::kSuccess);
  EXPECT_EQ(t_->finalize(cb), abi::kSuccess);
}

// NCCL keeps up to 32 requests in flight per comm: all are forwarded; beyond scout's 64 slots a
// post answers "try again" (NULL request) without reaching the delegate.
TEST_F(NetPluginTest, ManyRequestsInFlightAndAFullTableSaysTryAgain) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(false));
  void* ca = init_ok();
  void* cb = init_ok();
  NetLink l;
  ASSERT_EQ(sim::net_listen(t_, cb, &l), abi::kSuccess);
  std::string err;
  ASSERT_TRUE(sim::net_establish(t_, ca, &l, true, true, 10, &err)) << err;
  std::vector<unsigned char> sbuf(64 * 8, 7), rbuf(64 * 8, 0);
  ASSERT_EQ(sim::net_register(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size()), abi::kSuccess);
  std::vector<sim::NetReq> sends(64);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(sim::net_post_send(t_, &l, &sbuf[size_t(i) * 8], 8, i, &sends[i], 1));
  uint64_t isends = delegate_counters(false)[1];
  void* extra = reinterpret_cast<void*>(0x1);
  static void* ph = nullptr;
  ASSERT_EQ(t_->isend(l.send, sbuf.data(), 8, 99, l.smr, &ph, &extra), abi::kSuccess);
  EXPECT_EQ(extra, nullptr);
  EXPECT_EQ(delegate_counters(false)[1], isends);  // not forwarded
  for (int i = 0; i < 64; ++i) {
    sim::NetReq rr;
    ASSERT_TRUE(sim::net_post_recv(t_, &l, &rbuf[size_t(i) * 8], 8, i, &rr, 1));
    while (!rr.done) ASSERT_TRUE(sim::net_poll(t_, &rr));
    while (!sends[i].done) ASSERT_TRUE(sim::net_poll(t_, &sends[i]));
    EXPECT_EQ(rr.size, 8);
  }
  EXPECT_EQ(std::vector<unsigned char>(rbuf.begin(), rbuf.end()), std::vector<unsigned char>(64 * 8, 7));
  sim::net_close(t_, &l);
  t_->finalize(ca);
  t_->finalize(cb);
}

// Two processes, ranks 0 and 1 (TCP through the delegate): rank 1 listens, rank 0 connects and
// sends. With delay:peer=1,ms=40 every transfer of the link takes at least 40 ms on rank 0's
// send side and the link is written to the ground truth once, by rank 0 (the end that is not R).
TEST_F(NetPluginTest, DelayDrillHoldsEveryTransferAndWritesTruthOnce) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(false));
  env_.set("SCOUT_NET_FAULT", "delay:peer=1,ms=40");
  std::string truth = dir_.path() + "/truth.jsonl";
  env_.set("SCOUT_TRUTH", truth);
  int hp[2], dp[2];
  ASSERT_EQ(::pipe(hp), 0);
  ASSERT_EQ(::pipe(dp), 0);
  constexpr int kN = 4;
  ChildResult recv_side;
  std::thread receiver([&] {
    recv_side = in_child([&](int fd) {
      ::setenv("RANK", "1", 1);
      void* ctx = nullptr;
      abi::NetCommConfig cfg{-1};
      if (t_->init(&ctx, 0x42, &cfg, nullptr, nullptr) != abi::kSuccess) return 1;
      NetLink l;
      if (sim::net_listen(t_, ctx, &l) != abi::kSuccess) return 2;
      (void)!::write(hp[1], l.handle, sizeof(l.handle));
      std::string err;
      if (!sim::net_establish(t_, nullptr, &l, false, true, 20, &err)) return 3;
      std::vector<unsigned char> buf(4096);
      if (sim::net_register(t_, &l, nullptr, 0, buf.data(), buf.size()) != abi::kSuccess) return 4;
      for (int k = 0; k < kN; ++k) {
        sim::NetReq r;
        if (!sim::net_post_recv(t_, &l, buf.data(), buf.size(), k, &r, 20)) return 5;
        while (!r.done) {
          if (!sim::net_poll(t_, &r)) return 6;
          std::this_thread::yield();
        }
        say(fd, std::to_string(r.size) + ":" + std::to_string(buf[100]) + " ");
      }
      char x;
      (void)!::read(dp[0], &x, 1);  // the sender is done
      sim::net_close(t_, &l);
      t_->finalize(ctx);
      return 0;
    });
  });
  ChildResult send_side = in_child([&](int fd) {
    ::setenv("RANK", "0", 1);
    void* ctx = nullptr;
    abi::NetCommConfig cfg{-1};
    if (t_->init(&ctx, 0x42, &cfg, nullptr, nullptr) != abi::kSuccess) return 1;
    NetLink l;
    if (::read(hp[0], l.handle, sizeof(l.handle)) != ssize_t(sizeof(l.handle))) return 2;
    std::string err;
    if (!sim::net_establish(t_, ctx, &l, true, false, 20, &err)) return 3;
    std::vector<unsigned char> buf(4096, 9);
    if (sim::net_register(t_, &l, buf.data(), buf.size(), nullptr, 0) != abi::kSuccess) return 4;
    for (int k = 0; k < kN; ++k) {
      sim::NetReq r;
      auto t0 = std::chrono::steady_clock::now();
      if (!sim::net_post_send(t_, &l, buf.data(), 1000, k, &r, 20)) return 5;
      while (!r.done) {
        if (!sim::net_poll(t_, &r)) return 6;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      say(fd, std::to_string(ms >= 40) + " ");
    }
    (void)!::write(dp[1], "x", 1);
    sim::net_close(t_, &l);
    t_->finalize(ctx);
    return 0;
  });
  receiver.join();
  EXPECT_EQ(send_side.status, 0);
  EXPECT_EQ(recv_side.status, 0);
  EXPECT_EQ(send_side.out, "1 1 1 1 ");
  EXPECT_EQ(recv_side.out, "1000:9 1000:9 1000:9 1000:9 ");
  // Both processes wrote their own segments: rank 0's send entry counts 4 delayed transfers,
  // each of at least 40 ms; the peer is rank 1.
  int sends_seen = 0;
  for (const std::string& f : segment_files(dir_.path())) {
    std::string e;
    auto rd = shm::SegmentReader::open(f, &e);
    ASSERT_TRUE(rd) << e;
    uint32_t cap = 0;
    const shm::LinkTableHeader* t = shm::link_table(*rd, &cap);
    ASSERT_NE(t, nullptr);
    std::vector<shm::LinkSnapshot> ls;
    shm::read_links(t, cap, &ls);
    for (const shm::LinkSnapshot& s : ls) {
      if (s.dir != shm::kLinkSend) continue;
      sends_seen++;
      EXPECT_EQ(rd->info().global_rank, 0);
      EXPECT_EQ(s.peer_global_rank, 1);
      EXPECT_EQ(s.transfers, uint64_t(kN));
      EXPECT_EQ(s.faults, uint64_t(kN));
      EXPECT_GE(s.busy_ns, uint64_t(kN) * 40000000);
      EXPECT_EQ(s.state, shm::kLinkClosed);
      EXPECT_EQ(shm::read_link_info(t, cap).fault_delayed, uint64_t(kN));
    }
  }
  EXPECT_EQ(sends_seen, 1);
  std::ifstream in(truth);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("\"kind\":\"slowlink\",\"global_rank\":0,\"peer\":1,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"ms\":40,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"drill\":\"delay:peer=1,ms=40\""), std::string::npos) << lines[0];
}

// flip:peer=3,every=2 (this process is rank 3 and sends to itself): every second message arrives
// with exactly one flipped bit in its middle byte; stall:peer=3,after=2: the third transfer never
// completes. Each writes one ground-truth line.
TEST_F(NetPluginTest, FlipAndStallDrills) {
  env_.set("SCOUT_NET_DELEGATE", delegate_path(false));
  std::string truth = dir_.path() + "/truth.jsonl";
  env_.set("SCOUT_TRUTH", truth);
  env_.set("SCOUT_NET_FAULT", "flip:peer=3,every=2");
  {
    void* ca = init_ok();
    void* cb = init_ok();
    NetLink l;
    ASSERT_EQ(sim::net_listen(t_, cb, &l), abi::kSuccess);
    std::string err;
    ASSERT_TRUE(sim::net_establish(t_, ca, &l, true, true, 10, &err)) << err;
    std::vector<unsigned char> sbuf(256), rbuf(256);
    ASSERT_EQ(sim::net_register(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size()), abi::kSuccess);
    std::vector<int> flipped_bits;
    for (int k = 0; k < 6; ++k) {
      std::fill(sbuf.begin(), sbuf.end(), 0);
      int got = 0;
      ASSERT_TRUE(sim::net_transfer(t_, &l, sbuf.data(), 100, rbuf.data(), rbuf.size(), k, 10, &got, &err)) << err;
      int bits = 0;
      for (int i = 0; i < 100; ++i) bits += __builtin_popcount(rbuf[size_t(i)]);
      flipped_bits.push_back(bits == 1 && rbuf[50] != 0 ? 1 : bits);
    }
    EXPECT_EQ(flipped_bits, std::vector<int>({0, 1, 0, 1, 0, 1}));
    sim::net_close(t_, &l);
    t_->finalize(ca);
    t_->finalize(cb);
  }
  env_.set("SCOUT_NET_FAULT", "stall:peer=3,after=2");
  {
    void* ca = init_ok();
    void* cb = init_ok();
    NetLink l;
    ASSERT_EQ(sim::net_listen(t_, cb, &l), abi::kSuccess);
    std::string err;
    ASSERT_TRUE(sim::net_establish(t_, ca, &l, true, true, 10, &err)) << err;
    std::vector<unsigned char> sbuf(64, 1), rbuf(64);
    ASSERT_EQ(sim::net_register(t_, &l, sbuf.data(), sbuf.size(), rbuf.data(), rbuf.size()), abi::kSuccess);
    int got = 0;
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(sim::net_transfer(t_, &l, sbuf.data(), 64, rbuf.data(), rbuf.size(), k, 10, &got, &err)) << err;
    }
    EXPECT_FALSE(sim::net_transfer(t_, &l, sbuf.data(), 64, rbuf.data(), rbuf.size(), 2, 0.3, &got, &err));
    EXPECT_EQ(err, "transfer not done in time");
    shm::LinkTableInfo info;
    links(&info);
    EXPECT_EQ(info.fault_stalled, 2u);  // the third send and the third receive
    t_->finalize(ca);
    t_->finalize(cb);
  }
  std::ifstream in(truth);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);  // flip: one (the send connection); stall: both ends
  EXPECT_NE(lines[0].find("\"kind\":\"linksdc\",\"global_rank\":3,\"peer\":3,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"kind\":\"stall\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"kind\":\"stall\""), std::string::npos) << lines[2];
}

}  // namespace
}  // namespace scout::testing
