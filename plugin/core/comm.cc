// Per-communicator state (comm.h).
#include "plugin/core/comm.h"

#include <new>

#include "plugin/core/proxy_steps.h"

namespace scout::core {

CommState* comm_create(shm::RingWriter* ring, uint64_t comm_hash, int nranks, int rank, int nnodes) {
  CommState* c = new (std::nothrow) CommState();
  if (c == nullptr) return nullptr;
  c->ring_index = ring->ring_index();
  c->ring = ring;
  c->rw = *ring;
  c->hdr = ring->header();
  c->comm_hash = comm_hash;
  c->nranks = nranks;
  c->rank = rank;
  c->nnodes = nnodes;
  size_t peers = nranks > 0 ? size_t(nranks) : 1;
  c->send_ctr = new (std::nothrow) std::atomic<uint64_t>[peers]();
  c->recv_ctr = new (std::nothrow) std::atomic<uint64_t>[peers]();
  c->channels = new (std::nothrow) SlotChannels[ring->capacity()]();
  c->slot_mask = ring->capacity() - 1;
  if (c->send_ctr == nullptr || c->recv_ctr == nullptr || c->channels == nullptr) {
    comm_free(c);
    return nullptr;
  }
  return c;
}

void comm_free(CommState* c) {
  if (c == nullptr) return;
  delete[] c->send_ctr;
  delete[] c->recv_ctr;
  delete[] c->channels;
  proxy_comm_free(c->proxy);
  delete c;
}

}  // namespace scout::core
