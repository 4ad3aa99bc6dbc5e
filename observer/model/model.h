// The observer's live picture of a job: processes, communicators (joined across segments), and
// per operation key the record of every comm rank that has reported it. Source-agnostic: the
// node-local ingestion (observer/ingest) feeds it from shared memory; a cross-node layer can feed
// it the same way with records of remote ranks (members with node_rank != this node).
//
// Memory is bounded: an operation is dropped once it is judged (observer/detect keeps only
// windows of numbers), the per-process GPU timeline keeps kTimelineLen entries, and a
// communicator holds at most kMaxLiveOps operations (the one seen first is dropped first and
// counted; found through an index by age, so the bound costs O(log ops) per new operation).
// What a pass reads about a communicator's membership costs what it has here, not its size: the
// comm ranks whose process is known (known_ranks) and the finalized count are kept as members
// change. A communicator's per-rank state (RankTable) is stored only for the comm ranks something
// was recorded about, so a communicator of 131,072 ranks of which 8 are on this node costs 8
// entries plus a 4-byte index per rank, not 131,072 entries (docs/observer.md, "Memory").
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/link_reader.h"
#include "common/progress_reader.h"
#include "common/segment_reader.h"
#include "observer/model/job.h"

namespace scout::obs {

// A std::deque that allocates nothing until its first element (libstdc++'s deque allocates a map
// and a 512-byte block when constructed, which per comm rank and process is most of their cost).
// The subset of std::deque the model uses; iterators are the deque's (those of a shared empty
// deque while nothing was stored).
template <typename T>
class LazyDeque {
 public:
  using iterator = typename std::deque<T>::iterator;
  using const_iterator = typename std::deque<T>::const_iterator;
  LazyDeque() = default;
  LazyDeque(const LazyDeque& o) : d_(o.d_ && !o.d_->empty() ? std::make_unique<std::deque<T>>(*o.d_) : nullptr) {}
  LazyDeque& operator=(const LazyDeque& o) {
    if (this != &o) d_ = o.d_ && !o.d_->empty() ? std::make_unique<std::deque<T>>(*o.d_) : nullptr;
    return *this;
  }
  LazyDeque(LazyDeque&&) noexcept = default;
  LazyDeque& operator=(LazyDeque&&) noexcept = default;

  bool empty() const { return !d_ || d_->empty(); }
  size_t size() const { return d_ ? d_->size() : 0; }
  T& front() { return d_->front(); }
  const T& front() const { return d_->front(); }
  T& back() { return d_->back(); }
  const T& back() const { return d_->back(); }
  iterator begin() { return d_ ? d_->begin() : none().begin(); }
  iterator end() { return d_ ? d_->end() : none().end(); }
  const_iterator begin() const { return d_ ? d_->cbegin() : none().cbegin(); }
  const_iterator end() const { return d_ ? d_->cend() : none().cend(); }
  void push_back(const T& v) { get().push_back(v); }
  void pop_front() {
    d_->pop_front();
    if (d_->empty()) d_.reset();
  }
  // `pos` from begin()/end() of this deque (any position of an empty one).
  iterator insert(const_iterator pos, const T& v) {
    if (!d_) return get().insert(get().end(), v);
    return d_->insert(pos, v);
  }
  void clear() { d_.reset(); }

 private:
  std::deque<T>& get() {
    if (!d_) d_ = std::make_unique<std::deque<T>>();
    return *d_;
  }
  static std::deque<T>& none() {
    static std::deque<T> empty;  // never modified
    return empty;
  }
  std::unique_ptr<std::deque<T>> d_;
};

// Communicator identity (docs/nccl-notes.md §3.7: commHash is not guaranteed unique; nranks helps).
struct CommKey {
  uint64_t hash = 0;
  int nranks = 0;
  auto operator<=>(const CommKey&) const = default;
};

// Which operation: collectives by (func, NCCL seqNumber); point-to-point by the pair
// (src comm rank, dst comm rank) and scout's per-pair counter (docs/record-format.md).
enum class OpClass : uint8_t { kColl = 0, kP2p = 1 };
struct OpId {
  OpClass cls = OpClass::kColl;
  uint8_t func = 0;  // shm::Func; p2p ops use kFuncSend
  uint64_t seq = 0;
  int32_t src = -1;  // p2p: sending comm rank; coll: -1
  int32_t dst = -1;  // p2p: receiving comm rank; coll: -1
  auto operator<=>(const OpId&) const = default;
};
// "AllReduce #812" / "Send 2->3 #5".
std::string describe(const OpId& id);

// One operation call of a process: its communicator, the operation, and the call's time
// (CLOCK_REALTIME ns: the record's API call time, else its enqueue time).
struct IssuedCall {
  CommKey comm;
  OpId id;
  int64_t api_ns = 0;
};

// Liveness of a training process as the observer last saw it.
enum class ProcState {
  kRunning,  // owner process alive
  kExited,   // owner gone and its segment was closed (every communicator finalized)
  kDead,     // owner gone without closing its segment (crash, kill, or exit without finalize)
};
const char* to_string(ProcState s);  // "running", "exited", "dead"

// One training process (one segment, local or remote).
// One completed operation of a process on its GPU (ns, CLOCK_REALTIME of its host).
struct GpuInterval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // Point-to-point operations: end_ns minus the time the rank posted it (launch, else enqueue,
  // else start): how long the rank was held there, waiting for its peer included. -1: a collective.
  int64_t p2p_held_ns = -1;
};

struct Proc {
  int id = -1;           // index in Model::procs()
  int global_rank = -1;  // RANK / OMPI_COMM_WORLD_RANK / ...; -1 unknown
  int local_rank = -1;
  std::string host;
  int pid = 0;
  std::string gpu;  // GPU UUID or SCOUT_GPU; "" unknown
  int cuda_dev = -1;
  int node_rank = 0;    // observer node that reads its segment
  std::string segment;  // segment path on that node
  ProcState state = ProcState::kRunning;
  int64_t first_seen_ns = 0;  // observer clock
  int64_t last_event_ns = 0;  // CPU time of the latest plugin callback (segment header)
  int64_t gone_ns = 0;        // observer time the owner was first seen gone; 0 while alive
  // Recent GPU intervals of this process's completed operations on any communicator, ordered
  // by end (bounded by kTimelineLen, oldest ends dropped): the straggler detector uses them to
  // tell a rank's own delay from time it spent blocked elsewhere.
  LazyDeque<GpuInterval> timeline;
  // The process's latest calls of operations on any communicator, in program order (API call
  // time; bounded by kCallHistoryLen, oldest dropped): the hang detector predicts from them which
  // operation a rank that stopped would have called next (docs/observer.md, "Hangs").
  LazyDeque<IssuedCall> calls;
  // GEMM shape capture (segment table kTableGemmShapes), when the segment has one.
  bool has_gemm = false;
  GemmCaptureInfo gemm;
  std::vector<std::pair<shm::GemmKey, uint64_t>> gemm_shapes;  // class, count
  // Link table (segment table kTableLinks: net plugin connections, ProxyStep peers), as of the
  // latest pass, when the segment has one (docs/record-format.md, "Link table").
  bool has_links = false;
  shm::LinkTableInfo link_info;
  std::vector<shm::LinkSnapshot> links;
  // Progress table (segment table kTableProgress: where each communicator's network steps are, and
  // the answer to the observer's trace requests; docs/record-format.md, "Progress table").
  bool has_progress = false;
  shm::ProgressTableInfo progress_info;
  std::vector<shm::ProgressSnapshot> progress;
};
constexpr size_t kTimelineLen = 256;
constexpr size_t kCallHistoryLen = 256;  // Proc::calls

// One participant's part of an operation: participant index = comm rank for collectives; for
// p2p, 0 is the send side and 1 the recv side.
struct OpSlot {
  int index = -1;
  int64_t pos = -1;  // position of this record in its rank's collective sequence; -1 unknown

  bool final = false;  // no further update expected (complete, completion unobservable, or lost)
  bool lost = false;   // the record was overwritten in its ring before it was final
  shm::RecordSnapshot rec;
};

// Slots are sparse (only participants that reported), so a communicator of 100k ranks of which
// 8 are on this node costs 8 slots per operation, not 100k.
struct Op {
  OpId id;
  int n = 0;                   // participants: coll nranks, p2p 2
  std::vector<OpSlot> slots;   // reported participants, ascending index
  int64_t first_seen_ns = 0;   // observer clock
  int64_t last_change_ns = 0;  // observer clock
  bool meta_judged = false;    // metadata agreement decided (once every slot is present)
  std::string meta_verdict;    // OpSummary::meta_verdict once judged
  int present() const { return int(slots.size()); }
  int n_final() const;
  int n_complete() const;
  bool all_present() const { return present() == n; }
  bool all_final() const { return n_final() == n; }
  const OpSlot* slot(int index) const;
  OpSlot* slot(int index);
  OpSlot& add(int index);  // inserts (sorted) or returns the existing slot
  // Comm rank of participant `index` (coll: index; p2p: src for 0, dst for 1).
  int comm_rank(int index) const { return id.cls == OpClass::kColl ? index : (index == 0 ? id.src : id.dst); }
  // Participant index of comm rank `rank`, -1 if it does not take part.
  int index_of(int rank) const;
};

// An operation and when it reached a state on one rank.
struct OpMark {
  OpId id;
  int64_t ns = 0;
  bool valid = false;
};

// One collective of a comm rank at a known position of its collective sequence in the
// communicator (docs/observer.md, "Sequence"): what the sequence check compares.
struct SeqEntry {
  uint64_t pos = 0;  // 0-based: the rank's earlier collectives (numbered functions) in this communicator
  OpId id;
  uint8_t datatype = 0, api_datatype = 0;
  uint64_t count = 0, api_count = 0;
  int32_t root = -1;  // Broadcast and Reduce; -1 otherwise
  int64_t enqueue_ns = 0;
};
constexpr size_t kSeqWindow = 1024;  // positions kept per comm rank until the sequence check takes them
constexpr uint8_t kSeqAllKnown = (1u << shm::kNumNumberedFuncs) - 1;

// What one comm rank has done in its communicator (docs/observer.md#hangs).
struct RankProgress {
  int proc = -1;        // Model proc id; -1 while no segment names this rank
  int64_t init_ns = 0;  // communicator init on this rank
  bool finalized = false;
  std::map<uint64_t, OpId> inflight;  // ring index -> matched op enqueued or running, not complete
  OpMark last_enqueued, last_started, last_completed;
  // The rank's latest NCCL API call on the communicator (its segment's comm header, CLOCK_REALTIME
  // ns; 0: unknown) and the latest API call time of a record it enqueued: a call later than every
  // enqueued record was made and never enqueued (docs/observer.md, "Hangs": in-call).
  int64_t last_api_ns = 0, last_record_api_ns = 0;
  uint64_t issued[shm::kNumNumberedFuncs] = {};     // highest collective seqNumber enqueued + 1 per func
  uint64_t started[shm::kNumNumberedFuncs] = {};    // ... started on the GPU + 1
  uint64_t completed[shm::kNumNumberedFuncs] = {};  // ... complete + 1
  // Collective sequence (docs/observer.md, "Sequence"), from first sightings in ring order. The
  // position of a collective is the sum over the numbered functions of the rank's earlier calls
  // of each; a record's seqNumber gives its own function's count. A gap in the ring indices
  // (records lost) makes every count unknown until that function's next record: positions are
  // known again once all are (never guessed).
  bool seq_started = false;
  uint64_t seq_next_index = 0;                      // ring index expected next
  uint8_t seq_known = kSeqAllKnown;                 // bit f: seq_count[f] is known
  uint64_t seq_count[shm::kNumNumberedFuncs] = {};  // calls of each function so far
  uint64_t seq_gaps = 0;                            // index gaps seen
  uint64_t seq_evicted = 0;                         // entries dropped by the kSeqWindow bound
  LazyDeque<SeqEntry> seq_window;                   // positions not yet taken, ascending
  bool seq_synced() const { return seq_known == kSeqAllKnown; }
  // Next position (meaningful while seq_synced()).
  uint64_t seq_next_pos() const {
    uint64_t p = 0;
    for (uint64_t n : seq_count) p += n;
    return p;
  }
};

// The per-comm-rank state of one communicator, indexed by comm rank in [0, size()). An entry is
// stored only once something is written to it (the non-const operator[]): a rank no segment or
// message named reads as a default RankProgress (proc -1, nothing in flight) without taking
// memory. Memory: 4 bytes per comm rank for the index, plus one RankProgress per stored rank.
class RankTable {
 public:
  // Every comm rank in order, stored or not (const access only).
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = RankProgress;
    using difference_type = std::ptrdiff_t;
    using pointer = const RankProgress*;
    using reference = const RankProgress&;
    const_iterator(const RankTable* t, size_t i) : t_(t), i_(i) {}
    reference operator*() const { return (*t_)[int(i_)]; }
    pointer operator->() const { return &(*t_)[int(i_)]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator c = *this;
      ++i_;
      return c;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const RankTable* t_;
    size_t i_;
  };

  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  // Sets the number of comm ranks (the communicator's nranks, once; growing keeps what is stored).
  void resize(size_t n) { index_.resize(n, -1); }
  // Comm rank r's state (r in [0, size())); a shared default for a rank never written.
  const RankProgress& operator[](int r) const {
    const int32_t i = index_[size_t(r)];
    return i < 0 ? none() : store_[size_t(i)];
  }
  // Comm rank r's state for writing (r in [0, size())): stored from now on.
  RankProgress& operator[](int r) {
    int32_t& i = index_[size_t(r)];
    if (i < 0) {
      i = int32_t(store_.size());
      store_.emplace_back();
    }
    return store_[size_t(i)];
  }
  // Whether comm rank r has a stored entry.
  bool stored(int r) const { return r >= 0 && size_t(r) < index_.size() && index_[size_t(r)] >= 0; }
  size_t stored_count() const { return store_.size(); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, index_.size()); }

 private:
  static const RankProgress& none() {
    static const RankProgress empty;
    return empty;
  }
  std::vector<int32_t> index_;      // comm rank -> index into store_, -1: not stored
  std::deque<RankProgress> store_;  // stable addresses: a stored entry never moves
};

struct Comm {
  CommKey key;
  std::string name;
  int nnodes = 0;
  RankTable ranks;               // index = comm rank (size nranks)
  std::map<OpId, Op> ops;        // live (not yet judged) operations
  int64_t last_progress_ns = 0;  // latest evidence of progress (record times or observer time)
  uint64_t ops_complete = 0;     // operations complete on every rank (judged)
  uint64_t p2p_complete = 0;     // of which point-to-point
  // Point-to-point pairs (src, dst comm ranks), summed; `p2p_dirty`: changed since the observer
  // last handed them to its Sink.
  std::map<std::pair<int, int>, P2pPairInfo> p2p;
  std::set<std::pair<int, int>> p2p_dirty;
  uint64_t last_seq[shm::kNumNumberedFuncs] = {};  // highest completed seq + 1 per func
  // Longest time one of its operations was held on a rank of this model, from the record's
  // enqueue (else API call) to its completion (ns), over the operations completed so far, and how
  // many were measured: what a cold communicator's stall threshold rests on (docs/observer.md,
  // "Stalls").
  int64_t held_max_ns = 0;
  uint64_t held_ops = 0;
  uint64_t ops_dropped = 0;   // live ops dropped by the kMaxLiveOps bound
  uint64_t records_lost = 0;  // records overwritten before they were final
  // Kept by Model::set_member (the only writer of RankProgress::proc and ::finalized):
  std::vector<int> known_ranks;  // comm ranks whose process is known, ascending
  int n_finalized = 0;           // ranks finalized
  uint64_t members_version = 0;  // bumped whenever a rank's process or finalized state changes
  // Kept by Model::apply and Model::drop: the live operations by (first_seen_ns, id).
  std::set<std::pair<int64_t, OpId>> by_age;
  uint64_t seq_stamp = 0;  // bumped by Model::apply whenever a rank's sequence changes
  bool members_known() const {
    return !ranks.empty() && known_ranks.size() == ranks.size();
  }  // every comm rank maps to a process
  bool finalized() const { return !ranks.empty() && n_finalized == int(ranks.size()); }  // every rank finalized
};
constexpr size_t kMaxLiveOps = 16384;

// The whole picture. Not thread-safe: one observer thread owns it.
class Model {
 public:
  // Finds or adds the process (host, pid); fills identity fields from `p` when adding.
  int upsert_proc(const Proc& p, int64_t now_ns);
  Proc& proc(int id) { return procs_[id]; }
  const Proc& proc(int id) const { return procs_[id]; }
  const std::vector<Proc>& procs() const { return procs_; }
  std::vector<Proc>& procs() { return procs_; }

  // Finds or adds a communicator; name and nnodes are taken from the first caller that has one.
  Comm& upsert_comm(const CommKey& key, const std::string& name, int nnodes);
  // Says that comm rank `rank` of `c` is process `proc` (a later init of the same rank replaces
  // an earlier one: a restarted process).
  void set_member(Comm& c, int rank, int proc, int64_t init_ns, bool finalized);

  // Applies one record of comm rank `rank` of `c` (first sighting or an update of an earlier
  // snapshot). Returns the op it belongs to, or nullptr for records scout does not match across
  // ranks (unmatched kinds, out-of-range peers; counted in unmatched()). `now_ns` is the observer
  // clock; progress times come from the record's CPU times when it is new, else from `now_ns`.
  Op* apply(Comm& c, int rank, const shm::RecordSnapshot& r, int64_t now_ns);
  // The operation record `r` of comm rank `rank` belongs to and its participant index; false for
  // records scout does not match across ranks (unmatched kinds, out-of-range ranks or peers).
  static bool op_of(const Comm& c, int rank, const shm::RecordSnapshot& r, OpId* id, int* slot);
  // Files record `r` of comm rank `rank` under its operation as it is (the leader's job-wide wait
  // model, built from other observers' snapshots: observer/cluster/job_waits.h): its slot and, if
  // it is in flight, the rank's in-flight entry; none of apply()'s sequence, progress, mark and
  // timeline bookkeeping (the snapshot carries those), no live-operation bound. Returns the
  // operation, or nullptr for a record scout does not match.
  Op* place(Comm& c, int rank, const shm::RecordSnapshot& r, int64_t now_ns);
  // A record of `rank` with ring index `index` was overwritten before it was final: forget it
  // as in flight (it can no longer be followed).
  void lost(Comm& c, int rank, uint64_t index);
  // Drops a judged operation.
  void drop(Comm& c, const OpId& id);
  // Follows comm rank `rp`'s collective sequence with record `r` (called by apply for every
  // record of the rank). Returns the record's position when it is a collective seen for the first
  // time at a known position, else -1 (updates, other kinds, unknown positions).
  static int64_t follow_sequence(RankProgress& rp, const shm::RecordSnapshot& r);

  std::map<CommKey, Comm>& comms() { return comms_; }
  const std::map<CommKey, Comm>& comms() const { return comms_; }
  Comm* find_comm(const CommKey& k);
  uint64_t unmatched() const { return unmatched_; }

  // True when `r` is final: complete (or completion unobservable) with no pending fingerprint.
  static bool is_final(const shm::RecordSnapshot& r);
  // True when `r` can be in flight: enqueued or running with KernelCh timing available.
  static bool is_inflight(const shm::RecordSnapshot& r);

 private:
  std::vector<Proc> procs_;
  struct ProcKeyHash {
    size_t operator()(const std::pair<std::string, int>& k) const {
      return std::hash<std::string>()(k.first) * 31 + std::hash<int>()(k.second);
    }
  };
  std::unordered_map<std::pair<std::string, int>, int, ProcKeyHash> proc_index_;  // (host, pid) -> id
  std::map<CommKey, Comm> comms_;
  uint64_t unmatched_ = 0;
};

}  // namespace scout::obs
