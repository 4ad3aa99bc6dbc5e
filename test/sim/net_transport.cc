// scout-sim's NET transport (net_transport.h).
#include "test/sim/net_transport.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "test/sim/futex.h"

namespace scout::sim {

NetComm::~NetComm() { close(); }

bool NetComm::init(const LoadedNet& net, uint64_t comm_hash, abi::Logger logger) {
  if (net.v11 == nullptr) return false;
  t_ = net.v11;
  abi::NetCommConfig cfg{-1};
  void* ctx = nullptr;
  // NCCL hands net plugins its profiler callback; scout-sim has none to give (ProxyStep-level
  // NetPlugin events are not emulated), so NULL.
  abi::Result r = t_->init(&ctx, comm_hash, &cfg, logger, nullptr);
  if (r != abi::kSuccess || ctx == nullptr) {
    if (logger)
      logger(abi::kLogInfo, 0x10, "scout-sim", __LINE__, "NET/Plugin: %s init failed (%d); using internal transports",
             t_->name, r);
    t_ = nullptr;
    return false;
  }
  int ndev = 0;
  t_->devices(&ndev);
  ctx_ = ctx;
  return true;
}

bool NetComm::connect(Fabric* fabric, const CommSpec& spec, int me, const Layout& layout, double timeout_s,
                      std::string* error) {
  if (!active() || fabric == nullptr) return true;
  const int n = spec.nranks();
  const int my_node = layout.coord(spec.members[size_t(me)]).node;
  // 1. Listen for every peer that sends to this rank across hosts; publish the handles.
  for (int p = 0; p < n; ++p) {
    if (p == me || layout.coord(spec.members[size_t(p)]).node == my_node) continue;
    MailboxHdr* m = fabric->mailbox(spec.id, p, me);
    if (m == nullptr) continue;
    auto l = std::make_unique<NetPeerLink>();
    l->peer = p;
    l->send = false;
    if (net_listen(t_, ctx_, &l->link) != abi::kSuccess) {
      *error = "listen failed";
      return false;
    }
    std::memcpy(m->handle, l->link.handle, sizeof(m->handle));
    m->handle_ready.store(1, std::memory_order_release);
    publish(&m->epoch);
    links_.push_back(std::move(l));
  }
  // 2. The handle of every peer this rank sends to across hosts.
  for (int p = 0; p < n; ++p) {
    if (p == me || layout.coord(spec.members[size_t(p)]).node == my_node) continue;
    MailboxHdr* m = fabric->mailbox(spec.id, me, p);
    if (m == nullptr) continue;
    wait_for(&m->epoch, [&] { return m->handle_ready.load(std::memory_order_acquire) != 0; });
    auto l = std::make_unique<NetPeerLink>();
    l->peer = p;
    l->send = true;
    std::memcpy(l->link.handle, m->handle, sizeof(m->handle));
    links_.push_back(std::move(l));
  }
  // 3. connect and accept, all links progressed together until every comm exists.
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(int64_t(timeout_s * 1e6));
  for (;;) {
    bool pending = false;
    for (auto& l : links_) {
      std::string e;
      if (l->send && l->link.send == nullptr) {
        abi::NetDeviceHandle* dev = nullptr;
        if (t_->connect(ctx_, 0, l->link.handle, &l->link.send, &dev) != abi::kSuccess) {
          *error = "connect failed";
          return false;
        }
        pending |= l->link.send == nullptr;
      }
      if (!l->send && l->link.recv == nullptr) {
        abi::NetDeviceHandle* dev = nullptr;
        if (t_->accept(l->link.listen, &l->link.recv, &dev) != abi::kSuccess) {
          *error = "accept failed";
          return false;
        }
        pending |= l->link.recv == nullptr;
      }
    }
    if (!pending) break;
    if (std::chrono::steady_clock::now() > end) {
      *error = "net connections not established in time";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // 4. Staging buffers, registered once per connection.
  for (auto& l : links_) {
    l->staging.assign(size_t(kNetSteps) * kNetChunk, 0);
    void* buf = l->staging.data();
    abi::Result r = l->send ? net_register(t_, &l->link, buf, l->staging.size(), nullptr, 0)
                            : net_register(t_, &l->link, nullptr, 0, buf, l->staging.size());
    if (r != abi::kSuccess) {
      *error = "regMr failed";
      return false;
    }
  }
  return true;
}

NetPeerLink* NetComm::send_link(int peer) const {
  for (const auto& l : links_) {
    if (l->send && l->peer == peer) return l.get();
  }
  return nullptr;
}

NetPeerLink* NetComm::recv_link(int peer) const {
  for (const auto& l : links_) {
    if (!l->send && l->peer == peer) return l.get();
  }
  return nullptr;
}

void NetComm::close() {
  if (t_ != nullptr) {
    for (auto& l : links_) net_close(t_, &l->link);
  }
  links_.clear();
  if (t_ != nullptr && ctx_ != nullptr) t_->finalize(ctx_);
  ctx_ = nullptr;
  t_ = nullptr;
}

}  // namespace scout::sim
