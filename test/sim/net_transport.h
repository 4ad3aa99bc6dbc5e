// scout-sim's NET transport (docs/scout-sim.md, "Network"): point-to-point messages between
// ranks on different emulated hosts go through the net plugin named by NCCL_NET_PLUGIN when one
// loads, as NCCL's net transport carries them between nodes (docs/nccl-notes.md §6.7). Per
// communicator: the plugin's init before the profiler's (NCCL's commAlloc), then, after the init
// barrier, one connection per ordered pair of ranks that exchange messages across hosts: the
// receiver listens and publishes its handle in the pair's fabric mailbox, the sender connects,
// both retry connect/accept until they exist; each side registers a staging buffer of
// kNetSteps chunks of kNetChunk bytes (host memory), which messages go through step by step.
// Without a plugin, or when its init fails, the communicator uses the fabric's mailboxes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "test/sim/fabric.h"
#include "test/sim/layout.h"
#include "test/sim/net_driver.h"

namespace scout::sim {

constexpr int kNetSteps = 8;             // NCCL_STEPS: chunks of a connection in flight
constexpr size_t kNetChunk = 64 * 1024;  // bytes of one step

// One direction of a connection to one peer.
struct NetPeerLink {
  int peer = -1;      // comm rank of the other end
  bool send = false;  // this rank sends on it
  NetLink link;
  std::vector<unsigned char> staging;  // kNetSteps * kNetChunk, registered with regMr
  unsigned char* slot(int step) { return staging.data() + size_t(step % kNetSteps) * kNetChunk; }
};

class NetComm {
 public:
  NetComm() = default;
  ~NetComm();
  NetComm(const NetComm&) = delete;
  NetComm& operator=(const NetComm&) = delete;

  // The plugin's init for this communicator (commId = commHash). False when `net` is not loaded
  // or its init failed (logged through `logger` as NCCL logs it); the communicator then uses the
  // fabric.
  bool init(const LoadedNet& net, uint64_t comm_hash, abi::Logger logger);
  bool active() const { return ctx_ != nullptr; }
  const abi::NetV11* table() const { return t_; }

  // Connects this rank (comm rank `me` of `spec`) with every peer on another host it exchanges
  // messages with (the pairs that have a fabric mailbox). Collective among those peers. False
  // with *error on a plugin error or after `timeout_s`.
  bool connect(Fabric* fabric, const CommSpec& spec, int me, const Layout& layout, double timeout_s,
               std::string* error);
  // The link this rank sends to / receives from comm rank `peer` on, or nullptr (fabric).
  NetPeerLink* send_link(int peer) const;
  NetPeerLink* recv_link(int peer) const;

  // deregMr and close every connection (the proxy thread is gone), then the plugin's finalize.
  void close();

 private:
  const abi::NetV11* t_ = nullptr;
  void* ctx_ = nullptr;
  std::vector<std::unique_ptr<NetPeerLink>> links_;
};

}  // namespace scout::sim
