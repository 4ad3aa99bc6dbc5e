// The sim-private shared-memory fabric between rank processes (not the plugin's segments):
// one memfd created by the launcher and inherited by every worker, holding
//   - per rank: a status block the launcher reads for its summary;
//   - per communicator: an init barrier, kSlotDepth collective slots (rendezvous + staging of
//     every rank's input + the reduced result), and one mailbox per ordered pair of ranks that
//     exchange point-to-point messages.
// All waits block on futexes (futex.h). The byte layout is a pure function of the options
// (FabricLayout), computed identically by the launcher and the workers.
//
// Collective protocol, op k of a communicator (k counts its collective tasks), slot k % D,
// round r = k / D, n ranks:
//   1. wait until departed >= r*n (every rank left the slot's previous use);
//   2. copy the input into staging[rank], store count[rank];
//   3. arrived += 1; the rank that makes it (r+1)*n is the last to arrive: it reduces (AllReduce)
//      into the result area in rank order 0..n-1, sets ready_ns (slowlink) and ready_round = r+1;
//      the others wait for ready_round >= r+1 -- an emulated kernel cannot complete before
//      every rank of the communicator has arrived;
//   4. build the output from staging/result, then departed += 1.
// Point-to-point protocol, message k from a to b: the sender waits until consumed >= k+1-D,
// fills slot k % D, sets posted = k+1; the receiver waits for posted >= k+1, copies, sets
// consumed = k+1; the send completes when consumed >= k+1. Between ranks on different emulated
// hosts a loaded net plugin carries the messages instead (net_transport.h); the mailbox then only
// passes the listen handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "test/sim/layout.h"
#include "test/sim/options.h"

namespace scout::sim {

constexpr int kSlotDepth = 2;                             // D: collective slots / mailbox slots per communicator / pair
constexpr uint64_t kFabricMagic = 0x4349524241464D53ull;  // "SMFABRIC"

// Per-rank status the workers publish and the launcher summarises.
enum RankState : uint32_t {
  kRankStarting = 0,
  kRankRunning = 1,
  kRankDone = 2,      // finished every step and finalized
  kRankHung = 3,      // stopped by a hang fault
  kRankCrashing = 4,  // about to SIGKILL itself (crash fault)
};

struct alignas(64) RankStatus {
  std::atomic<uint32_t> state;
  int32_t pid;
  std::atomic<uint64_t> ops;    // NCCL API operations issued so far
  std::atomic<uint64_t> steps;  // steps completed
};

struct alignas(64) Barrier {
  std::atomic<uint32_t> epoch;
  uint32_t pad;
  std::atomic<uint64_t> arrived;  // monotonic; round r is complete at (r+1)*n
};

struct alignas(64) CollSlotHdr {
  std::atomic<uint32_t> epoch;  // futex word for every field below
  uint32_t pad;
  std::atomic<uint64_t> arrived;      // monotonic arrivals
  std::atomic<uint64_t> departed;     // monotonic departures
  std::atomic<uint64_t> ready_round;  // rounds whose inputs are all staged (and reduced)
  std::atomic<int64_t> ready_ns;      // CLOCK_REALTIME before which no rank may complete
  std::atomic<uint64_t> hung_round;  // round + 1 in which a member's kernel hung (kernelstall)
  std::atomic<int32_t> hung_rank;    // that member's comm rank
};

struct alignas(64) MailboxHdr {
  std::atomic<uint32_t> epoch;
  uint32_t pad;
  std::atomic<uint64_t> posted;    // messages posted by the sender
  std::atomic<uint64_t> consumed;  // messages copied out by the receiver
  uint64_t count[kSlotDepth];      // elements in each slot
  int64_t post_ns[kSlotDepth];     // sender's arrival time of each slot's message
  // Net transport (net_transport.h): the receiver's listen handle for the sender, exchanged
  // here as NCCL exchanges it over its bootstrap network; handle_ready = 1 once it is written.
  std::atomic<uint32_t> handle_ready;
  unsigned char handle[128];
};

// Offsets and sizes of one communicator's region.
struct CommRegion {
  int nranks = 0;
  uint64_t barrier_off = 0;
  uint64_t coll_off = 0;  // kSlotDepth slots, coll_stride apart
  uint64_t coll_stride = 0;
  uint64_t stage_bytes = 0;   // per rank per slot (64-byte multiple)
  uint64_t result_bytes = 0;  // per slot
  uint64_t mbox_off = 0;
  uint64_t mbox_stride = 0;
  uint64_t mbox_slot_bytes = 0;  // data bytes per mailbox slot (64-byte multiple)
  std::vector<int> pair;         // [from * nranks + to] -> mailbox index, or -1
};

// The whole fabric's layout for a job.
struct FabricLayout {
  int nranks = 0;
  uint64_t status_off = 0;
  std::vector<CommRegion> comms;  // indexed by CommSpec::id
  uint64_t bytes = 0;

  // Sizes every region from the workload of every rank (workload.h).
  static FabricLayout plan(const Layout& layout, const SimOptions& o);
};

class Fabric {
 public:
  // Creates the memfd (inheritable: no close-on-exec), sizes and maps it, writes the header.
  static std::unique_ptr<Fabric> create(const FabricLayout& fl, std::string* error);
  // Maps an inherited fabric and checks its header against `fl`.
  static std::unique_ptr<Fabric> attach(int fd, const FabricLayout& fl, std::string* error);
  ~Fabric();  // unmaps and closes the fd
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int fd() const { return fd_; }
  const FabricLayout& layout() const { return fl_; }

  RankStatus* rank_status(int g);
  Barrier* barrier(int comm);
  CollSlotHdr* coll_slot(int comm, int slot);
  uint64_t* slot_counts(int comm, int slot);    // [nranks]
  char* staging(int comm, int slot, int rank);  // stage_bytes
  char* result(int comm, int slot);             // result_bytes
  // Mailbox for messages from comm rank `from` to comm rank `to`; nullptr if the workload never
  // sends between them.
  MailboxHdr* mailbox(int comm, int from, int to);
  char* mailbox_data(int comm, int from, int to, int slot);

 private:
  Fabric() = default;
  char* at(uint64_t off) const { return base_ + off; }
  FabricLayout fl_;
  int fd_ = -1;
  char* base_ = nullptr;
};

// Waits at barrier `b` of `n` ranks, for the round this rank last completed + 1; `*round`
// counts this rank's rounds at that barrier.
void barrier_wait(Barrier* b, int n, uint64_t* round);

}  // namespace scout::sim
