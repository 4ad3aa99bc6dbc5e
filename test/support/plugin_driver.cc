// Test helper: drives a loaded plugin like NCCL does (plugin_driver.h).
#include "test/support/plugin_driver.h"

#include <dirent.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "common/paths.h"
#include "test/sim/profiler_driver.h"

namespace scout::testing {

abi::DescrV5 d_group_api(bool captured, int depth) {
  abi::DescrV5 d{};
  d.type = abi::kEvGroupApi;
  d.groupApi.graphCaptured = captured;
  d.groupApi.groupDepth = depth;
  return d;
}

abi::DescrV5 d_coll_api(const char* func, size_t count, const char* dtype, int root, void* stream, bool captured,
                        void* group_api) {
  abi::DescrV5 d{};
  d.type = abi::kEvCollApi;
  d.parentObj = group_api;
  d.collApi.func = func;
  d.collApi.count = count;
  d.collApi.datatype = dtype;
  d.collApi.root = root;
  d.collApi.stream = stream;
  d.collApi.graphCaptured = captured;
  return d;
}

abi::DescrV5 d_p2p_api(const char* func, size_t count, const char* dtype, void* stream, bool captured,
                       void* group_api) {
  abi::DescrV5 d{};
  d.type = abi::kEvP2pApi;
  d.parentObj = group_api;
  d.p2pApi.func = func;
  d.p2pApi.count = count;
  d.p2pApi.datatype = dtype;
  d.p2pApi.stream = stream;
  d.p2pApi.graphCaptured = captured;
  return d;
}

abi::DescrV5 d_kernel_launch(void* stream, void* group_api) {
  abi::DescrV5 d{};
  d.type = abi::kEvKernelLaunch;
  d.parentObj = group_api;
  d.kernelLaunch.stream = stream;
  return d;
}

abi::DescrV5 d_group() {
  abi::DescrV5 d{};
  d.type = abi::kEvGroup;
  return d;
}

abi::DescrV5 d_coll(uint64_t seq, const char* func, const void* send, void* recv, size_t count, int root,
                    const char* dtype, uint8_t nch, const char* algo, const char* proto, void* coll_api, void* group,
                    int rank) {
  abi::DescrV5 d{};
  d.type = abi::kEvColl;
  d.parentObj = coll_api;
  d.rank = rank;
  d.coll.seqNumber = seq;
  d.coll.func = func;
  d.coll.sendBuff = send;
  d.coll.recvBuff = recv;
  d.coll.count = count;
  d.coll.root = root;
  d.coll.datatype = dtype;
  d.coll.nChannels = nch;
  d.coll.nWarps = 16;
  d.coll.algo = algo;
  d.coll.proto = proto;
  d.coll.parentGroup = group;
  return d;
}

abi::DescrV5 d_p2p(const char* func, void* buf, const char* dtype, size_t count, int peer, uint8_t nch, void* p2p_api,
                   void* group, int rank) {
  abi::DescrV5 d{};
  d.type = abi::kEvP2p;
  d.parentObj = p2p_api;
  d.rank = rank;
  d.p2p.func = func;
  d.p2p.buff = buf;
  d.p2p.datatype = dtype;
  d.p2p.count = count;
  d.p2p.peer = peer;
  d.p2p.nChannels = nch;
  d.p2p.parentGroup = group;
  return d;
}

abi::DescrV5 d_kernel_ch(uint8_t channel, uint64_t ptimer, void* op) {
  abi::DescrV5 d{};
  d.type = abi::kEvKernelCh;
  d.parentObj = op;
  d.kernelCh.channelId = channel;
  d.kernelCh.pTimer = ptimer;
  return d;
}

abi::DescrV5 d_proxy_op(pid_t pid, void* op, int peer, int channel) {
  abi::DescrV5 d{};
  d.type = abi::kEvProxyOp;
  d.parentObj = op;
  d.proxyOp.pid = pid;
  d.proxyOp.channelId = uint8_t(channel);
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 8;
  d.proxyOp.chunkSize = 1 << 20;
  d.proxyOp.isSend = 1;
  return d;
}

namespace {
std::mutex g_log_mu;
std::vector<std::string> g_logs;

void logger_fn(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lk(g_log_mu);
  g_logs.push_back(std::string(level == abi::kLogWarn ? "WARN " : "INFO ") +
                   (flags == abi::kSubsysProfile ? "PROFILE " : "OTHER ") + buf);
}
}  // namespace

abi::Logger capture_logger() { return &logger_fn; }

std::vector<std::string> captured_logs() {
  std::lock_guard<std::mutex> lk(g_log_mu);
  return g_logs;
}

void clear_captured_logs() {
  std::lock_guard<std::mutex> lk(g_log_mu);
  g_logs.clear();
}

void* Plugin::init(uint64_t comm_hash, int nranks, int rank, const char* name, int nnodes, int* mask, abi::Logger log) {
  void* ctx = reinterpret_cast<void*>(0xdeadbeef);  // NCCL does not pre-zero it
  int* m = mask ? mask : &mask_;
  int r = -1;
  if (p_.v4) r = p_.v4->init(&ctx, m, name, comm_hash, nnodes, nranks, rank, log);
  if (p_.v5) r = p_.v5->init(&ctx, comm_hash, m, name, nnodes, nranks, rank, log);
  if (p_.v6) r = p_.v6->init(&ctx, comm_hash, m, name, nnodes, nranks, rank, log);
  check(r);
  return ctx;
}

void* Plugin::start(void* ctx, const abi::DescrV5& d) {
  void* h = reinterpret_cast<void*>(0xbadbad);  // NCCL does not always pre-zero *eHandle
  if (p_.v5) {
    abi::DescrV5 copy = d;
    check(p_.v5->startEvent(ctx, &h, &copy));
  } else if (p_.v6) {
    abi::DescrV6 v6{};
    static_assert(sizeof(v6) == sizeof(d));
    std::memcpy(&v6, &d, sizeof(d));
    check(p_.v6->startEvent(ctx, &h, &v6));
  } else if (p_.v4) {
    if (d.type >= abi::kEvGroupApi) return nullptr;  // NCCL's v4 adapter drops these
    abi::DescrV4 v4 = sim::v4_descr(d);
    check(p_.v4->startEvent(ctx, &h, &v4));
  }
  return h;
}

void* Plugin::start_v6(void* ctx, const abi::DescrV6& d) {
  void* h = reinterpret_cast<void*>(0xbadbad);
  if (!p_.v6) {
    bad_results_++;
    return nullptr;
  }
  abi::DescrV6 copy = d;
  check(p_.v6->startEvent(ctx, &h, &copy));
  return h;
}

void Plugin::stop(void* h) {
  int r = p_.v4 ? p_.v4->stopEvent(h) : p_.v5 ? p_.v5->stopEvent(h) : p_.v6->stopEvent(h);
  check(r);
}

void Plugin::state(void* h, int st, abi::StateArgs* args) {
  if (p_.v4 && (st == abi::kStateGroupStartApiStop || st == abi::kStateGroupEndApiStart)) {
    return;  // not forwarded to v4 plugins
  }
  int r = p_.v4   ? p_.v4->recordEventState(h, st, args)
          : p_.v5 ? p_.v5->recordEventState(h, st, args)
                  : p_.v6->recordEventState(h, st, args);
  check(r);
}

void Plugin::kernel_ch_stop(void* h, uint64_t ptimer) {
  abi::StateArgs a{};
  a.kernelCh.pTimer = ptimer;
  state(h, abi::kStateKernelChStop, &a);
  stop(h);
}

void Plugin::finalize(void* ctx) {
  int r = p_.v4 ? p_.v4->finalize(ctx) : p_.v5 ? p_.v5->finalize(ctx) : p_.v6->finalize(ctx);
  check(r);
}

CollHandles nccl_single_coll(Plugin& pl, void* ctx, const OpSpec& op) {
  CollHandles h;
  bool p2p = std::strcmp(op.func, "Send") == 0 || std::strcmp(op.func, "Recv") == 0;
  h.group_api = pl.start(ctx, d_group_api(false, 1));
  pl.state(h.group_api, abi::kStateGroupStartApiStop, nullptr);
  h.coll_api = pl.start(ctx, p2p ? d_p2p_api(op.func, op.count, op.dtype, op.stream, false, h.group_api)
                                 : d_coll_api(op.func, op.count, op.dtype, op.root, op.stream, false, h.group_api));
  pl.stop(h.coll_api);
  pl.state(h.group_api, abi::kStateGroupEndApiStart, nullptr);
  h.launch = pl.start(ctx, d_kernel_launch(op.stream, h.group_api));
  pl.stop(h.launch);
  h.group = pl.start(ctx, d_group());
  size_t tc = op.task_count ? op.task_count : op.count;
  const char* tt = op.task_dtype ? op.task_dtype : op.dtype;
  if (p2p) {
    h.coll = pl.start(
        ctx, d_p2p(op.func, const_cast<void*>(op.send), tt, tc, op.root, op.nch, h.coll_api, h.group, op.rank));
  } else {
    h.coll = pl.start(ctx, d_coll(op.seq, op.func, op.send, op.recv, tc, op.root, tt, op.nch, op.algo, op.proto,
                                  h.coll_api, h.group, op.rank));
  }
  pl.stop(h.coll);
  pl.stop(h.group);
  pl.stop(h.group_api);
  return h;
}

void run_kernel_ch(Plugin& pl, void* ctx, void* op, int nch, uint64_t start_ns, uint64_t end_ns) {
  std::vector<void*> hs;
  for (int c = 0; c < nch; ++c) hs.push_back(pl.start(ctx, d_kernel_ch(uint8_t(c), start_ns + c, op)));
  for (int c = 0; c < nch; ++c) pl.kernel_ch_stop(hs[c], end_ns + c);
}

std::vector<std::string> segment_files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (shm::parse_segment_name(n, nullptr, nullptr, nullptr)) out.push_back(dir + "/" + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

SegmentView read_segment(const std::string& dir) {
  SegmentView v;
  auto files = segment_files(dir);
  if (files.size() != 1) {
    v.error = std::to_string(files.size()) + " segments in " + dir;
    return v;
  }
  auto r = shm::SegmentReader::open(files[0], &v.error);
  if (!r) return v;
  v.ok = true;
  v.info = r->info();
  for (uint32_t ring = 0; ring < r->n_rings(); ++ring) {
    shm::CommSnapshot c;
    if (!r->comm(ring, &c)) {
      v.ok = false;
      v.error = "ring " + std::to_string(ring) + " unreadable";
    }
    v.comms.push_back(c);
    std::vector<shm::RecordSnapshot> recs;
    uint64_t first = c.head > v.info.ring_capacity ? c.head - v.info.ring_capacity : 0;
    for (uint64_t i = first; i < c.head; ++i) {
      shm::RecordSnapshot s;
      if (r->read(ring, i, &s) == shm::ReadStatus::kOk) recs.push_back(s);
    }
    v.records.push_back(recs);
  }
  return v;
}

void ScopedEnv::save(const char* name) {
  for (auto& s : saved_) {
    if (s.first == name) return;
  }
  const char* old = std::getenv(name);
  saved_.push_back({name, {old != nullptr, old ? old : ""}});
}

void ScopedEnv::set(const char* name, const std::string& value) {
  save(name);
  ::setenv(name, value.c_str(), 1);
}

void ScopedEnv::unset(const char* name) {
  save(name);
  ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second.first) {
      ::setenv(it->first.c_str(), it->second.second.c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

}  // namespace scout::testing
