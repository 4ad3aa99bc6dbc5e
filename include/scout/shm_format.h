// scout: the shared-memory record stream between the plugin (writer) and the observer (reader).
//
// Public and versioned: anything that reads scout segments includes this header and checks
// SegmentHeader::magic and ::layout_version first. docs/record-format.md
// describes every field for people.
//
// One segment per training process, a regular file of SCOUT_SHM_DIR (default /dev/shm) named
//     scout.<job>.<host>.<pid>
// (job and host reduced to [A-Za-z0-9_-], see segment_name()), created O_EXCL with mode 0600 and
// sized with posix_fallocate. Layout:
//
//     [SegmentHeader: 4096 bytes]
//     [ring 0: CommHeader (1024 bytes) + ring_capacity x OpRecord (256 bytes each)]
//     [ring 1 ...] ... up to max_comms rings, ring_stride bytes apart
//     [tables listed in SegmentHeader::tables, if any (see "Tables")]
//
// Each communicator the process initialises owns one ring. A ring holds one OpRecord per
// operation (collective, send, recv, or unmatched API call). Records are claimed in order,
// written once, then updated in place as the operation progresses (GPU start, completion,
// fingerprints). A full ring overwrites its oldest record.
//
// Ring protocol (the correctness argument):
//  * A writer claims index i = head.fetch_add(1) (acq_rel). Slot = i & (capacity - 1).
//  * It stores slot.seq = 2*i + 1 (odd: being written; relaxed store followed by a release
//    fence), writes the identity fields, then stores slot.seq = 2*i + 2 with release.
//  * Later updates touch only the atomic progress fields and the fingerprint words, each of
//    which is individually atomic; every update writes its payload first and its status word
//    last with release, so a reader that sees the status (acquire) sees the payload.
//  * A reader wanting index i loads seq (acquire); it must equal 2*i + 2. It copies the record
//    with snapshot_record(), then loads seq again: if it changed, the slot was reused while
//    being read (torn) and the copy is discarded. If seq > 2*i + 2 the record was overwritten
//    before the reader got to it: a gap the reader counts. The writer never waits for readers.
//  * Records of index < head - capacity are gone; head tells the reader how many it missed.
//
// The header has no pointers, only offsets, and every struct is trivially copyable apart from
// its std::atomic members, which are lock-free and have the size of the plain type.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace scout::shm {

// The first 8 bytes of every segment read "SCOUTSH1" (this value stored little-endian).
constexpr uint64_t kSegmentMagic = 0x31485354554F4353ull;
constexpr uint32_t kLayoutVersion = 2;  // 2: OpRecord ch_started_mask / ch_stopped_mask
constexpr uint32_t kSegmentHeaderBytes = 4096;
constexpr uint32_t kCommHeaderBytes = 1024;
constexpr uint32_t kRecordBytes = 256;
constexpr uint32_t kMaxCommsLimit = 255;  // comm index must fit in 8 bits of a handle
constexpr uint32_t kMinRingCapacity = 16;
constexpr uint32_t kMaxRingCapacity = 1u << 20;
// True for a ring capacity writers may create and readers accept: a power of two in
// [kMinRingCapacity, kMaxRingCapacity].
constexpr bool valid_ring_capacity(uint64_t c) {
  return c >= kMinRingCapacity && c <= kMaxRingCapacity && (c & (c - 1)) == 0;
}
constexpr const char* kSegmentPrefix = "scout.";

// Operation kinds (OpRecord::kind).
enum OpKind : uint8_t {
  kKindNone = 0,
  kKindColl = 1,       // collective with NCCL's seqNumber as key
  kKindSend = 2,       // point-to-point send; key = our per-(comm, peer) send counter
  kKindRecv = 3,       // point-to-point recv; key = our per-(comm, peer) recv counter
  kKindUnmatched = 4,  // API call NCCL did not number (symmetric, CE, captured w/o KernelCh)
  kKindCeColl = 5,     // v6 copy-engine collective (unmatched; key = ceColl.seqNumber)
};

// Function ids. 0-4 follow NCCL's seqNumber index (docs/nccl-notes.md §3.6).
enum Func : uint8_t {
  kFuncBroadcast = 0,
  kFuncReduce = 1,
  kFuncAllGather = 2,
  kFuncReduceScatter = 3,
  kFuncAllReduce = 4,
  kFuncSend = 5,
  kFuncRecv = 6,
  kFuncAlltoAll = 7,
  kFuncGather = 8,
  kFuncScatter = 9,
  kFuncSendRecv = 10,
  kFuncUnknown = 255,
};
constexpr int kNumNumberedFuncs = 5;  // funcs with an NCCL seqNumber

// Datatype ids: the values of ncclDataType_t (nccl.h: ncclInt8 = 0 ... ncclFloat8e5m2 = 11).
enum Datatype : uint8_t {
  kTypeInt8 = 0,
  kTypeUint8 = 1,
  kTypeInt32 = 2,
  kTypeUint32 = 3,
  kTypeInt64 = 4,
  kTypeUint64 = 5,
  kTypeFloat16 = 6,
  kTypeFloat32 = 7,
  kTypeFloat64 = 8,
  kTypeBfloat16 = 9,
  kTypeFloat8e4m3 = 10,
  kTypeFloat8e5m2 = 11,
  kTypeUnknown = 255,
};

// Algorithm ids (descriptor coll.algo strings, docs/nccl-notes.md §2.5).
enum Algo : uint8_t {
  kAlgoRing = 0,
  kAlgoTree = 1,
  kAlgoCollnetDirect = 2,
  kAlgoCollnetChain = 3,
  kAlgoNvls = 4,
  kAlgoNvlsTree = 5,
  kAlgoPat = 6,
  kAlgoUnknown = 255,
};

// Protocol ids (descriptor coll.proto strings).
enum Proto : uint8_t {
  kProtoLL = 0,
  kProtoLL128 = 1,
  kProtoSimple = 2,
  kProtoUnknown = 255,
};

// OpRecord::flags bits.
enum OpFlags : uint32_t {
  kFlagGraphCaptured = 1u << 0,  // the API call was made during CUDA graph capture
  kFlagUserGroup = 1u << 1,      // issued inside a user ncclGroupStart/End (groupDepth > 1)
  kFlagFpSampled = 1u << 2,      // the sampling decision selected this op for fingerprints
  kFlagUnmatched = 1u << 3,      // key is not comparable across ranks (never guessed)
  kFlagNoApi = 1u << 4,          // no CollApi/P2pApi parent was seen (v4, or stale handle)
  kFlagInPlace = 1u << 5,        // sendBuff == recvBuff
  kFlagHostBuffers = 1u << 6,    // buffers are host memory (no driver, or host pointers)
  kFlagNoKernelCh = 1u << 7,     // nChannels == 0: completion cannot be observed
};

// OpRecord::state values (monotonic).
enum OpState : uint32_t {
  kStateEmpty = 0,
  kStateEnqueued = 1,  // Coll/P2p start seen: handed to NCCL's proxy, not yet on the GPU
  kStateRunning = 2,   // first KernelCh start seen: the kernel runs on this rank
  kStateComplete = 3,  // KernelCh stopped on all n_channels channels
  kStateApiOnly = 4,   // unmatched API call recorded at group end; no GPU progress known
};

// Fingerprint status, low 8 bits of OpRecord::fp_send_word / fp_recv_word.
// The upper 56 bits hold the record's seq >> 1 (= index + 1, truncated) as a tag, so a late
// writer can never make a reused slot look fingerprinted (see fp_word()).
enum FpStatus : uint8_t {
  kFpNone = 0,             // not sampled / not applicable
  kFpPending = 1,          // hash enqueued, result not yet written
  kFpDone = 2,             // value and NaN/Inf counts valid
  kFpSkippedDevice = 3,    // device buffer and no CUDA driver: nothing hashed
  kFpSkippedCaptured = 4,  // graph-captured operation: not hashed (recorded as such)
  kFpSkippedCallback = 5,  // buffers arrived on a CUDA host-callback thread: not hashed
  kFpSkippedError = 6,     // a CUDA call failed; the plugin disabled fingerprints
  kFpTimedOut = 7,         // send hash waited too long for the buffer address
};

// ----- Tables -----
// Optional fixed-size tables that follow the rings, listed in SegmentHeader::tables. Each has its
// own id and version, so a new table is added without touching the ring layout: a reader finds a
// table by id, checks its version and size, and ignores ids it does not know. Tables start on a
// 64-byte boundary inside [rings end, segment end); SegmentHeader::segment_bytes covers them
// (segment_bytes(max_comms, ring_capacity) + tables_bytes). docs/record-format.md, "Tables".
constexpr uint32_t kMaxTables = 8;
enum TableId : uint32_t {
  kTableNone = 0,
  kTableGemmShapes = 1,  // GemmTableHeader + GemmShapeEntry[capacity] (docs/record-format.md)
  kTableLinks = 2,       // LinkTableHeader + LinkEntry[capacity]: per-link network timing
  kTableProgress = 3,    // ProgressTableHeader + ProgressEntry[capacity]: stuck-collective tracing
};
struct TableRef {
  uint32_t id;       // 0   TableId
  uint32_t version;  // 4   layout version of that table
  uint64_t offset;   // 8   from the segment start, multiple of 64
  uint64_t bytes;    // 16  bytes of the table
};
static_assert(sizeof(TableRef) == 24);

// Segment header: 4096 bytes at offset 0.
struct SegmentHeader {
  uint64_t magic;                           // 0    kSegmentMagic
  uint32_t layout_version;                  // 8    kLayoutVersion
  uint32_t header_bytes;                    // 12   kSegmentHeaderBytes
  uint64_t segment_bytes;                   // 16   total file size
  int32_t owner_pid;                        // 24   process that created and writes the segment
  uint32_t max_comms;                       // 28   number of rings
  uint64_t owner_start_ticks;               // 32   /proc/<pid>/stat starttime (pid reuse check)
  int64_t created_ns;                       // 40   CLOCK_REALTIME at creation
  uint32_t ring_capacity;                   // 48   records per ring, power of two
  uint32_t record_bytes;                    // 52   kRecordBytes
  uint64_t rings_offset;                    // 56   offset of ring 0 (= kSegmentHeaderBytes)
  uint64_t ring_stride;                     // 64   kCommHeaderBytes + ring_capacity * record_bytes
  std::atomic<uint32_t> n_comms;            // 72   rings handed out so far (release on publish)
  uint32_t flags;                           // 76   reserved, 0
  int32_t global_rank;                      // 80   RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID ..., -1
  int32_t local_rank;                       // 84   LOCAL_RANK / ..., -1
  int32_t world_size;                       // 88   WORLD_SIZE / ..., -1
  int32_t cuda_dev;                         // 92   CUDA device ordinal of the first comm, -1
  char job[64];                             // 96   job id, NUL-terminated
  char host[64];                            // 160  host identity (SCOUT_HOST or hostname)
  char gpu[64];                             // 224  GPU identity: "GPU-<uuid>", SCOUT_GPU, or ""
  char plugin_version[32];                  // 288  scout version string
  uint32_t abi_version;                     // 320  profiler ABI NCCL picked: 4, 5 or 6 (0 = none yet)
  uint32_t reserved0;                       // 324
  std::atomic<uint64_t> comms_dropped;      // 328  comm inits beyond max_comms (not recorded)
  std::atomic<uint64_t> events_bad_handle;  // 336  stale/invalid/foreign parent handles ignored
  std::atomic<uint64_t> events_unknown;     // 344  unknown event types or states ignored
  std::atomic<int64_t> last_event_ns;       // 352  CPU time of the latest callback of any kind
  std::atomic<int64_t> closed_ns;           // 360  set when the last communicator is finalized
  // Table directory (additive tables after the rings; see "Tables" below). All zero: no tables.
  uint32_t n_tables;             // 368  entries of tables[] in use (<= kMaxTables)
  uint32_t reserved1;            // 372
  uint64_t tables_bytes;         // 376  bytes of all tables (segment end - rings end)
  TableRef tables[kMaxTables];   // 384  24 bytes each
  uint8_t reserved[4096 - 576];  // 576
};

// Per-ring (per-communicator) header: kCommHeaderBytes at the start of each ring.
struct CommHeader {
  std::atomic<uint32_t> state;             // 0    CommState
  uint32_t generation;                     // 4    incremented each time the ring is (re)assigned
  uint64_t comm_hash;                      // 8    NCCL commHash (same on every rank of the comm)
  int32_t nranks;                          // 16
  int32_t rank;                            // 20   this process's rank in the communicator
  int32_t nnodes;                          // 24
  int32_t cuda_dev;                        // 28   -1 if unknown
  char name[64];                           // 32   commName copied at init ("" if NULL)
  int64_t init_ns;                         // 96   CLOCK_REALTIME of init
  std::atomic<int64_t> finalize_ns;        // 104  0 while live
  uint32_t ring_capacity;                  // 112  copy of SegmentHeader::ring_capacity
  uint32_t reserved0;                      // 116
  uint8_t pad0[128 - 120];                 // 120
  alignas(64) std::atomic<uint64_t> head;  // 128  records ever claimed in this ring
  uint8_t pad1[192 - 136];                 // 136
  // Counters (relaxed; informative). Each says what was lost or skipped, never silently.
  std::atomic<uint64_t> n_coll;              // 192  Coll records
  std::atomic<uint64_t> n_p2p;               // 200  Send + Recv records
  std::atomic<uint64_t> n_unmatched;         // 208  Unmatched + CeColl records
  std::atomic<uint64_t> overwritten_live;    // 216  slots reused while their op was incomplete
                                             //      (not counted for kFlagNoKernelCh records)
  std::atomic<uint64_t> bad_handles;         // 224  stale or invalid parent/event handles
  std::atomic<uint64_t> foreign_proxy;       // 232  PXN events from other processes ignored
  std::atomic<uint64_t> kernelch_orphans;    // 240  KernelCh events whose op slot was reused
  std::atomic<uint64_t> api_calls;           // 248  CollApi + P2pApi starts on this comm
  std::atomic<int64_t> last_api_ns;          // 256  CPU time of the latest API call
  std::atomic<int64_t> gpu_clock_offset_ns;  // 264  wall_ns = gpu_ns + offset (current estimate)
  std::atomic<uint64_t> fp_sampled;          // 272  ops selected for fingerprints
  std::atomic<uint64_t> fp_skipped;          // 280  sampled ops whose hash was skipped
  std::atomic<uint32_t> fp_level;            // 288  sampling level in force (budget), see fp docs
  uint32_t reserved1;                        // 292
  std::atomic<uint64_t> fp_gpu_ns;           // 296  total fingerprint time (GPU or CPU) ns
  std::atomic<uint64_t> kernel_ns;           // 304  total NCCL kernel time seen ns
  std::atomic<uint64_t> disabled_reason;     // 312  nonzero: ring stopped recording (see docs)
  std::atomic<uint64_t> kernelch_extra;      // 320  KernelCh events repeating a channel or beyond
                                             //      nChannels: ignored (counters never pass it)
  std::atomic<uint64_t> ignored_events;      // 328  known events scout does not record (v6 CeSync,
                                             //      CeBatch; proxy/net events if ever enabled)
  std::atomic<uint64_t> late_matches;        // 336  Coll/P2p whose API call had already been
                                             //      recorded as unmatched (both records exist)
  uint8_t reserved[1024 - 344];              // 344
};

enum CommState : uint32_t {
  kCommFree = 0,
  kCommInit = 1,  // being set up; reader must skip
  kCommActive = 2,
  kCommFinalized = 3,  // finalize seen; records stay readable
};

// One operation: 256 bytes, four cache lines.
struct OpRecord {
  // -- line 0: identity (written once, before seq is published) --
  std::atomic<uint64_t> seq;  // 0    2*index+2 when valid; odd while being written
  uint64_t key;               // 8    matching key: NCCL seqNumber / p2p counter / ...
  uint8_t kind;               // 16   OpKind
  uint8_t func;               // 17   Func
  uint8_t datatype;           // 18   Datatype of the Coll/P2p task
  uint8_t api_datatype;       // 19   Datatype given to the API (CollApi), or unknown
  uint8_t algo;               // 20   Algo
  uint8_t proto;              // 21   Proto
  uint8_t n_channels;         // 22   channels the op runs on (KernelCh expected)
  uint8_t n_warps;            // 23
  uint32_t flags;             // 24   OpFlags
  int32_t peer;               // 28   root (Coll) or peer rank in comm (P2P); -1 none
  uint64_t count;             // 32   element count of the task (Coll/P2p descriptor)
  uint64_t api_count;         // 40   element count given to the API (0 if unknown)
  uint64_t bytes;             // 48   count * size(datatype): bytes of the message
  uint64_t group;             // 56   process-wide ordinal of the GroupApi (0 if none)
  // -- line 1: CPU-side times and addresses (written once) --
  int64_t api_ns;      // 64   CollApi/P2pApi start, CLOCK_REALTIME ns (0: none)
  int64_t launch_ns;   // 72   KernelLaunch start (0: none seen)
  int64_t enqueue_ns;  // 80   Coll/P2p start
  uint64_t send_buf;   // 88   address (for people; never dereferenced by readers)
  uint64_t recv_buf;   // 96
  uint64_t stream;     // 104  launch stream (KernelLaunch, else API stream)
  uint32_t thread;     // 112  Linux tid of the thread that issued the API call
  uint32_t reserved1;  // 116
  uint64_t reserved2;  // 120
  // -- line 2: GPU progress (updated in place by the proxy thread) --
  std::atomic<uint32_t> state;            // 128  OpState
  std::atomic<uint16_t> ch_started;       // 132  KernelCh starts seen
  std::atomic<uint16_t> ch_stopped;       // 134  KernelCh stops seen
  std::atomic<int64_t> gpu_start_ns;      // 136  earliest KernelCh start, wall-clock ns (0: none)
  std::atomic<int64_t> gpu_end_ns;        // 144  latest KernelCh stop, wall-clock ns (0: none)
  std::atomic<int64_t> complete_ns;       // 152  CPU time the last KernelCh stop arrived (0: none)
  std::atomic<uint64_t> gpu_start_raw;    // 160  raw pTimer of the earliest start (diagnostics)
  std::atomic<uint64_t> ch_started_mask;  // 168  bit c: KernelCh started on NCCL channel c
  std::atomic<uint64_t> ch_stopped_mask;  // 176  bit c: KernelCh stopped on channel c (written before ch_stopped)
  uint8_t pad2[192 - 184];                // 184
  // -- line 3: fingerprints (written by the fingerprint engine or the GPU) --
  std::atomic<uint64_t> fp_send_word;  // 192  (tag << 8) | FpStatus for the send buffer
  std::atomic<uint64_t> fp_recv_word;  // 200  (tag << 8) | FpStatus for the receive buffer
  uint64_t fp_send;                    // 208  fingerprint of the send buffer (docs/fingerprint.md)
  uint64_t fp_recv;                    // 216  fingerprint of the receive buffer
  uint32_t send_nan;                   // 224  NaN elements in the send buffer (float types)
  uint32_t send_inf;                   // 228  +-Inf elements in the send buffer
  uint32_t recv_nan;                   // 232
  uint32_t recv_inf;                   // 236
  uint64_t fp_bytes;                   // 240  bytes covered by the fingerprints (byte cap)
  uint32_t fp_level;                   // 248  sampling level when sampled
  uint32_t fp_version;                 // 252  fingerprint format version (0: none)
};

// ----- GEMM shape table (kTableGemmShapes, version 1) -----
// Written by the plugin's GEMM capture (docs/record-format.md, "GEMM shape table"): each distinct
// matmul shape class the cuBLASLt logger reported during a capture window, with its count. One
// writer at a time (a try-lock in the plugin); entries are appended, filled, then published by
// n_entries (release); after publication only `count` and `flop_units` change (relaxed atomics).
constexpr uint32_t kGemmTableVersion = 1;
constexpr uint32_t kGemmTableHeaderBytes = 256;
constexpr uint32_t kGemmEntryBytes = 64;

// Element and scale types of a logged matmul: cuBLASLt's cudaDataType names (R_16F, ...).
enum GemmType : uint8_t {
  kGemmTypeUnknown = 0,
  kGemmR16F = 1,
  kGemmR16BF = 2,
  kGemmR32F = 3,
  kGemmR64F = 4,
  kGemmR8I = 5,
  kGemmR8U = 6,
  kGemmR32I = 7,
  kGemmR8FE4M3 = 8,
  kGemmR8FE5M2 = 9,
  kGemmR4FE2M1 = 10,
  kGemmC32F = 11,
  kGemmC64F = 12,
  kGemmC16F = 13,
  kGemmTypeCount = 14,
};

// Compute types: cuBLAS's cublasComputeType_t names (COMPUTE_32F, ...).
enum GemmCompute : uint8_t {
  kGemmComputeUnknown = 0,
  kGemmCompute16F = 1,
  kGemmCompute16FPedantic = 2,
  kGemmCompute32F = 3,
  kGemmCompute32FPedantic = 4,
  kGemmCompute32FFast16F = 5,
  kGemmCompute32FFast16BF = 6,
  kGemmCompute32FFastTF32 = 7,
  kGemmCompute64F = 8,
  kGemmCompute64FPedantic = 9,
  kGemmCompute32I = 10,
  kGemmCompute32IPedantic = 11,
  kGemmComputeCount = 12,
};

// GemmShapeEntry::layout bits.
enum GemmLayoutBits : uint8_t {
  kGemmTransA = 1u << 0,  // op(A) = A^T (transa=OP_T)
  kGemmTransB = 1u << 1,  // op(B) = B^T
  kGemmConjA = 1u << 2,   // op(A) = A^H (OP_C)
  kGemmConjB = 1u << 3,
  kGemmRowA = 1u << 4,  // A stored row-major (order=ORDER_ROW)
  kGemmRowB = 1u << 5,
  kGemmRowD = 1u << 6,  // C/D row-major
};

// GemmTableHeader::state values.
enum GemmCaptureState : uint32_t {
  kGemmOff = 0,         // SCOUT_GEMM_CAPTURE=0 (the table exists but is never written)
  kGemmWaiting = 1,     // capture on, between windows
  kGemmCapturing = 2,   // a window is open: scout's logger callback is installed
  kGemmNoLibrary = 3,   // cuBLASLt is not loaded in this process (retried each window)
  kGemmUserLogger = 4,  // the user logs cuBLASLt/cuBLAS themselves: scout leaves it alone
  kGemmFailed = 5,      // the library refused the logger calls: capture stopped
};

struct GemmTableHeader {
  uint32_t capacity;                     // 0    entries the table holds
  uint32_t entry_bytes;                  // 4    kGemmEntryBytes
  std::atomic<uint32_t> state;           // 8    GemmCaptureState
  std::atomic<uint32_t> n_entries;       // 12   entries published (<= capacity)
  std::atomic<uint64_t> windows;         // 16   capture windows opened
  std::atomic<uint64_t> lines;           // 24   logger callbacks received in windows
  std::atomic<uint64_t> captured;        // 32   matmul lines parsed and counted
  std::atomic<uint64_t> ignored;         // 40   lines of other functions (not a matmul)
  std::atomic<uint64_t> malformed;       // 48   matmul lines the parser rejected (skipped)
  std::atomic<uint64_t> dropped_full;    // 56   matmuls of a new class with the table full
  std::atomic<uint64_t> dropped_busy;    // 64   lines while another thread held the table
  std::atomic<int64_t> window_start_ns;  // 72   CLOCK_REALTIME of the latest window open
  std::atomic<int64_t> window_end_ns;    // 80   ... and close (0 while open)
  std::atomic<uint64_t> window_ns;       // 88   total time windows were open
  uint8_t reserved[256 - 96];            // 96
};

// One shape class: identical dimensions, types, layouts, compute type and algorithm.
struct GemmShapeEntry {
  uint64_t m;                              // 0    rows of op(A) and D
  uint64_t n;                              // 8    columns of op(B) and D
  uint64_t k;                              // 16   inner dimension
  uint32_t batch;                          // 24   batchCount (1 if not logged)
  uint8_t a_type, b_type, c_type, d_type;  // 28   GemmType
  uint8_t compute;                         // 32   GemmCompute
  uint8_t scale_type;                      // 33   GemmType
  uint8_t layout;                          // 34   GemmLayoutBits
  uint8_t reserved0;                       // 35
  int32_t algo;                            // 36   algoId, -1 if not logged
  uint16_t tile_m, tile_n;                 // 40   MATMUL_TILE_<m>x<n>, 0 if not logged
  uint32_t reserved1;                      // 44
  std::atomic<uint64_t> count;             // 48   matmuls of this class seen in windows
  std::atomic<uint64_t> reserved2;         // 56
};

// ----- Link table (kTableLinks, version 1) -----
// Per-link network timing (docs/record-format.md, "Link table"). Two writers fill it: the net
// plugin half (one entry per connection it wraps, docs/net-plugin.md) and the profiler half's
// ProxyStep windows (one entry per communicator, peer and direction of NCCL's own IB/Socket
// transports). An entry is claimed with claimed.fetch_add (acq_rel), filled, then published by
// storing `state` (release); readers take entries [0, min(claimed, capacity)) whose state is
// nonzero (acquire). Each published entry has one writing thread (the proxy thread that drives
// its connection or communicator): its counters are relaxed atomics written by load + store,
// read by anyone at any time (each one exact, several read together need not agree).
constexpr uint32_t kLinkTableVersion = 1;
constexpr uint32_t kLinkTableHeaderBytes = 256;
constexpr uint32_t kLinkEntryBytes = 512;
// Duration histogram: quarter octaves from 2^8 ns (bucket 0 also takes anything shorter) to
// 2^32 ns (the last bucket also takes anything longer): bucket 4*(e-8) + m for a duration with
// highest set bit e and the next two bits m.
constexpr int kLinkHistBuckets = 96;
constexpr int kLinkHistMinLog2 = 8;

enum LinkSource : uint8_t {
  kLinkSourceNone = 0,
  kLinkSourceNet = 1,    // a connection of the net plugin half (isend/irecv through the delegate)
  kLinkSourceProxy = 2,  // NCCL's own transport, timed from ProxyStep events
};

enum LinkDir : uint8_t {
  kLinkDirNone = 0,
  kLinkSend = 1,  // net: isend post -> test done; proxy: SendWait -> step stop
  kLinkRecv = 2,  // net: irecv post -> test done; proxy: RecvWait -> RecvFlushWait
};

enum LinkEntryState : uint32_t {
  kLinkEmpty = 0,   // claimed, being filled (readers skip)
  kLinkOpen = 1,    // in use
  kLinkClosed = 2,  // net: closeSend/closeRecv seen; the counters are final
};

// LinkTableHeader::net_state: what the net plugin half did in this process.
enum NetHalfState : uint32_t {
  kNetUnused = 0,          // NCCL never called the net plugin's init
  kNetActive = 1,          // the delegate is loaded and forwarded to
  kNetNoDelegate = 2,      // SCOUT_NET_DELEGATE empty: init refused (NCCL uses its own transports)
  kNetDelegateFailed = 3,  // the delegate could not be opened, has no table, is scout itself, or
                           // its init failed: init refused
};

// LinkTableHeader::proxy_state: the ProxyStep windows of the profiler half.
enum ProxyWindowState : uint32_t {
  kProxyOff = 0,      // SCOUT_PROXY_TIMING=0 (or the table has no room for it)
  kProxyWaiting = 1,  // between windows
  kProxyOpen = 2,     // ProxyOp/ProxyStep are in the activation mask
};

struct LinkTableHeader {
  uint32_t capacity;                           // 0    entries the table holds
  uint32_t entry_bytes;                        // 4    kLinkEntryBytes
  std::atomic<uint32_t> claimed;               // 8    entries claimed (> capacity: the rest dropped)
  std::atomic<uint32_t> net_state;             // 12   NetHalfState
  std::atomic<uint32_t> net_abi;               // 16   net table NCCL called: 11, 12 (0: none)
  std::atomic<uint32_t> delegate_abi;          // 20   table version the delegate exports (0: none)
  char delegate[64];                           // 24   delegate library as opened ("" none)
  std::atomic<uint64_t> dropped_full;          // 88   links not recorded: the table was full
  std::atomic<uint64_t> net_inits;             // 96   net init calls that reached the delegate
  std::atomic<uint64_t> net_errors;            // 104  delegate calls that returned an error
  std::atomic<uint64_t> fault_delayed;         // 112  transfers SCOUT_NET_FAULT delayed
  std::atomic<uint64_t> fault_stalled;         // 120  transfers it stalled (never completed)
  std::atomic<uint64_t> fault_flipped;         // 128  transfers it sent with a flipped bit
  std::atomic<uint32_t> proxy_state;           // 136  ProxyWindowState
  uint32_t reserved0;                          // 140
  std::atomic<uint64_t> proxy_windows;         // 144  ProxyStep windows opened
  std::atomic<uint64_t> proxy_window_ns;       // 152  total time windows were open
  std::atomic<int64_t> proxy_window_start_ns;  // 160  latest window open
  std::atomic<int64_t> proxy_window_end_ns;    // 168  ... and close (0 while open)
  std::atomic<uint64_t> proxy_steps;           // 176  ProxyStep transfers timed
  std::atomic<uint64_t> proxy_untimed;         // 184  steps not timed: no step slot free, a stale
                                               //      or foreign parent, or a missing state
  std::atomic<uint64_t> handle_full;           // 192  net listens whose handle left no room for
                                               //      scout's identity (peer unknown at connect)
  uint8_t reserved[256 - 200];                 // 200
};

// One link: a net plugin connection, or one (communicator, peer, direction) of NCCL's transport.
struct LinkEntry {
  std::atomic<uint32_t> state;                   // 0    LinkEntryState (release when published)
  uint8_t source;                                // 4    LinkSource
  uint8_t dir;                                   // 5    LinkDir
  uint16_t dev;                                  // 6    net: device index; proxy: 0
  uint64_t comm_hash;                            // 8    commHash (net: the commId NCCL passed to init)
  int32_t comm_nranks;                           // 16   proxy: communicator size; net: 0 (not told)
  int32_t comm_rank;                             // 20   proxy: this process's rank in it; net: -1
  int32_t peer_rank;                             // 24   proxy: the peer's comm rank; net: -1
  int32_t peer_global_rank;                      // 28   net send: the listener's global rank (from its handle); -1
  int32_t peer_pid;                              // 32   net send: the listener's pid; 0 unknown
  uint32_t conn_id;                              // 36   net: this process's connection serial (1, 2, ...); proxy: 0
  uint64_t link_id;                              // 40   net: the listen handle's nonce, the same in the send entry
                                                 //      (connector) and the recv entry (listener); proxy: 0
  uint64_t peer_host_hash;                       // 48   net send: FNV-1a 64 of the listener's host name; 0 unknown
  int64_t open_ns;                               // 56   connection established / first step timed
  std::atomic<int64_t> close_ns;                 // 64   close seen (0 while open)
  std::atomic<int64_t> last_ns;                  // 72   latest completed transfer
  std::atomic<uint64_t> transfers;               // 80   completed transfers (net: requests; proxy: steps)
  std::atomic<uint64_t> bytes;                   // 88   bytes of them (net: sizes test() reported; proxy: transSize)
  std::atomic<uint64_t> busy_ns;                 // 96   sum of their durations
  std::atomic<uint64_t> max_ns;                  // 104  longest
  std::atomic<uint64_t> posted;                  // 112  net: requests posted; proxy: steps started
  std::atomic<uint64_t> faults;                  // 120  transfers of this link the drill delayed/stalled/flipped
  std::atomic<uint32_t> hist[kLinkHistBuckets];  // 128  durations, kLinkHistBuckets buckets
};

// Histogram bucket of a duration (ns): see kLinkHistBuckets.
constexpr int link_hist_bucket(uint64_t ns) {
  if (ns < (uint64_t(1) << kLinkHistMinLog2)) return 0;
  int e = 63 - __builtin_clzll(ns);
  int b = 4 * (e - kLinkHistMinLog2) + int((ns >> (e - 2)) & 3);
  return b < kLinkHistBuckets ? b : kLinkHistBuckets - 1;
}
// Smallest duration (ns) that falls in bucket `b`.
constexpr uint64_t link_hist_floor(int b) { return uint64_t(4 + (b & 3)) << (b / 4 + kLinkHistMinLog2 - 2); }
// Bytes of a link table with `capacity` entries.
constexpr uint64_t link_table_bytes(uint32_t capacity) {
  return kLinkTableHeaderBytes + uint64_t(capacity) * kLinkEntryBytes;
}

// ----- Progress table (kTableProgress, version 1) -----
// Where NCCL's network steps of a collective are, per (communicator, channel, peer, direction), and
// the observer's request to trace one communicator (docs/record-format.md, "Progress table";
// docs/plugin.md, "Tracing a stuck collective").
//
// The header's first cache line is the *request*, the only bytes of a segment a reader writes:
// the observer fills request_comm_hash, request_nranks and request_until_ns, then increments
// request_seq (release). The plugin polls request_seq (one relaxed load per NCCL API call); when it
// changed, it reads the fields (acquire), keeps ProxyOp | ProxyStep in NCCL's activation mask
// until request_until_ns, and answers in the plugin's half of the header (ack_seq last, release).
//
// Entries: one per (communicator, channel, peer comm rank, direction) whose ProxyOps the plugin
// received (in a ProxyStep window or while traced), claimed with claimed.fetch_add by the
// communicator's proxy thread, filled, published by storing `state` (release); afterwards only that
// thread writes it. Each entry describes the latest ProxyOp on its tuple: a new ProxyOp increments
// `op_gen`, sets op_func / op_key / n_steps / start_ns and zeroes the step counters. Counters are
// relaxed atomics, each exact on its own.
constexpr uint32_t kProgressTableVersion = 1;
constexpr uint32_t kProgressHeaderBytes = 256;
constexpr uint32_t kProgressEntryBytes = 128;
constexpr uint32_t kProgressEntries = 1024;  // entries of the table (128 KiB)

// ProgressTableHeader::trace_state.
enum TraceState : uint32_t {
  kTraceNone = 0,     // no request acted on yet
  kTraceActive = 1,   // ProxyOp | ProxyStep kept in the mask for the requested communicator
  kTraceExpired = 2,  // the request's time is over (bits the trace added are cleared)
  kTraceNoComm = 3,   // the request names no communicator of this process (nothing traced)
};

struct ProgressTableHeader {
  // -- the request: written by the observer only --
  std::atomic<uint64_t> request_seq;        // 0    incremented after the fields below are written (release)
  std::atomic<uint64_t> request_comm_hash;  // 8    commHash to trace
  std::atomic<int64_t> request_until_ns;    // 16   trace until this CLOCK_REALTIME ns
  std::atomic<int32_t> request_nranks;      // 24   its size (0: any communicator with that hash)
  uint8_t reserved0[64 - 28];               // 28
  // -- written by the plugin --
  uint32_t capacity;                      // 64   entries the table holds
  uint32_t entry_bytes;                   // 68   kProgressEntryBytes
  std::atomic<uint32_t> claimed;          // 72   entries claimed (> capacity: the rest dropped)
  std::atomic<uint32_t> trace_state;      // 76   TraceState
  std::atomic<uint64_t> ack_seq;          // 80   request_seq the plugin acted on (stored last)
  std::atomic<int64_t> ack_ns;            // 88   when
  std::atomic<uint64_t> trace_comm_hash;  // 96   communicator traced (0: none)
  std::atomic<int64_t> trace_until_ns;    // 104  until
  std::atomic<uint64_t> requests;         // 112  requests acted on
  std::atomic<uint64_t> traced_ops;       // 120  ProxyOps recorded in entries
  std::atomic<uint64_t> dropped_full;     // 128  ProxyOps not recorded: the table was full
  uint8_t reserved1[256 - 136];           // 136
};

// ProgressEntry::dir.
enum ProgressDir : uint8_t { kProgressNone = 0, kProgressSend = 1, kProgressRecv = 2 };

// One (communicator, channel, peer, direction): its latest ProxyOp's steps (docs/nccl-notes.md §3.4).
struct ProgressEntry {
  std::atomic<uint32_t> state;    // 0    0 being filled, 1 published
  uint8_t dir;                    // 4    ProgressDir
  uint8_t channel;                // 5    NCCL channel id
  uint16_t reserved0;             // 6
  uint64_t comm_hash;             // 8
  int32_t comm_nranks;            // 16
  int32_t comm_rank;              // 20   this process's rank in it
  int32_t peer;                   // 24   the peer's comm rank
  uint32_t reserved1;             // 28
  std::atomic<uint32_t> op_gen;   // 32   ProxyOps seen on this entry (the latest is op_gen's)
  std::atomic<uint32_t> n_steps;  // 36   the latest ProxyOp's nSteps
  std::atomic<uint64_t> op_key;   // 40   its collective's seqNumber (~0: its record is gone)
  std::atomic<uint32_t> op_func;  // 48   its Func (255 unknown)
  std::atomic<uint32_t> posted;   // 52   steps started (ProxyStep start)
  std::atomic<uint32_t>
      gpu_wait;  // 56   send: SendGPUWait (waiting for the GPU's data); recv: RecvGPUWait (handed to the GPU)
  std::atomic<uint32_t> peer_wait;  // 60   send: SendPeerWait (data ready, waiting for the peer's buffer); recv: 0
  std::atomic<uint32_t> in_net;     // 64   send: SendWait (isend accepted); recv: RecvWait (irecv posted)
  std::atomic<uint32_t>
      net_done;  // 68   send: stopped after SendWait (the network completed it); recv: RecvFlushWait (received)
  std::atomic<uint32_t> consumed;    // 72   recv: stopped after RecvGPUWait (the GPU consumed it); send: 0
  std::atomic<uint32_t> op_stopped;  // 76   1 once the latest ProxyOp stopped
  std::atomic<int64_t> start_ns;     // 80   the latest ProxyOp's start
  std::atomic<int64_t> last_ns;      // 88   latest state change of one of its steps
  uint8_t reserved2[128 - 96];       // 96
};

// Bytes of the progress table.
constexpr uint64_t progress_table_bytes(uint32_t capacity) {
  return kProgressHeaderBytes + uint64_t(capacity) * kProgressEntryBytes;
}

// ----- helpers shared by writer and reader -----

// Sequence value of a fully written record with ring index `index`.
constexpr uint64_t seq_valid(uint64_t index) { return 2 * index + 2; }
// Sequence value while the record with ring index `index` is being written.
constexpr uint64_t seq_writing(uint64_t index) { return 2 * index + 1; }
// Tag stored in the upper 56 bits of the fingerprint words for ring index `index`.
constexpr uint64_t fp_tag(uint64_t index) { return (index + 1) & ((1ull << 56) - 1); }
// A fingerprint word: status in the low 8 bits, tag above.
constexpr uint64_t fp_word(uint64_t index, FpStatus status) {
  return (fp_tag(index) << 8) | static_cast<uint64_t>(status);
}
// Status from a word if its tag matches `index`, else kFpNone (written for an older record).
constexpr FpStatus fp_status(uint64_t word, uint64_t index) {
  return (word >> 8) == fp_tag(index) ? static_cast<FpStatus>(word & 0xff) : kFpNone;
}
// Total bytes of a segment for the given ring count and capacity.
constexpr uint64_t segment_bytes(uint32_t max_comms, uint32_t ring_capacity) {
  return kSegmentHeaderBytes + uint64_t(max_comms) * (kCommHeaderBytes + uint64_t(ring_capacity) * kRecordBytes);
}

// Bytes of a GEMM shape table with `capacity` entries.
constexpr uint64_t gemm_table_bytes(uint32_t capacity) {
  return kGemmTableHeaderBytes + uint64_t(capacity) * kGemmEntryBytes;
}

// ----- layout checks -----
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free &&
              std::atomic<uint16_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == 8 && sizeof(std::atomic<uint16_t>) == 2);
static_assert(std::is_standard_layout_v<SegmentHeader> && std::is_standard_layout_v<CommHeader> &&
              std::is_standard_layout_v<OpRecord>);
static_assert(sizeof(SegmentHeader) == kSegmentHeaderBytes);
static_assert(offsetof(SegmentHeader, n_tables) == 368);
static_assert(offsetof(SegmentHeader, tables_bytes) == 376);
static_assert(offsetof(SegmentHeader, tables) == 384);
static_assert(sizeof(GemmTableHeader) == kGemmTableHeaderBytes);
static_assert(offsetof(GemmTableHeader, windows) == 16);
static_assert(offsetof(GemmTableHeader, window_ns) == 88);
static_assert(sizeof(GemmShapeEntry) == kGemmEntryBytes);
static_assert(offsetof(GemmShapeEntry, batch) == 24);
static_assert(offsetof(GemmShapeEntry, compute) == 32);
static_assert(offsetof(GemmShapeEntry, algo) == 36);
static_assert(offsetof(GemmShapeEntry, count) == 48);
static_assert(std::is_standard_layout_v<GemmTableHeader> && std::is_standard_layout_v<GemmShapeEntry>);
static_assert(sizeof(LinkTableHeader) == kLinkTableHeaderBytes && sizeof(LinkEntry) == kLinkEntryBytes);
static_assert(offsetof(LinkTableHeader, delegate) == 24 && offsetof(LinkTableHeader, dropped_full) == 88);
static_assert(offsetof(LinkTableHeader, proxy_state) == 136 && offsetof(LinkTableHeader, handle_full) == 192);
static_assert(offsetof(LinkEntry, comm_hash) == 8 && offsetof(LinkEntry, link_id) == 40);
static_assert(offsetof(LinkEntry, open_ns) == 56 && offsetof(LinkEntry, transfers) == 80);
static_assert(offsetof(LinkEntry, faults) == 120 && offsetof(LinkEntry, hist) == 128);
static_assert(std::is_standard_layout_v<LinkTableHeader> && std::is_standard_layout_v<LinkEntry>);
static_assert(sizeof(ProgressTableHeader) == kProgressHeaderBytes && sizeof(ProgressEntry) == kProgressEntryBytes);
static_assert(offsetof(ProgressTableHeader, request_nranks) == 24 && offsetof(ProgressTableHeader, capacity) == 64);
static_assert(offsetof(ProgressTableHeader, ack_seq) == 80 && offsetof(ProgressTableHeader, dropped_full) == 128);
static_assert(offsetof(ProgressEntry, comm_hash) == 8 && offsetof(ProgressEntry, op_gen) == 32);
static_assert(offsetof(ProgressEntry, op_key) == 40 && offsetof(ProgressEntry, posted) == 52);
static_assert(offsetof(ProgressEntry, consumed) == 72 && offsetof(ProgressEntry, last_ns) == 88);
static_assert(std::is_standard_layout_v<ProgressTableHeader> && std::is_standard_layout_v<ProgressEntry>);
static_assert(link_hist_bucket(255) == 0 && link_hist_bucket(256) == 0 && link_hist_bucket(320) == 1);
static_assert(link_hist_bucket(1024) == 8 && link_hist_floor(8) == 1024 && link_hist_floor(9) == 1280);
static_assert(link_hist_bucket(~0ull) == kLinkHistBuckets - 1 && link_hist_floor(95) == (7ull << 29));
static_assert(offsetof(SegmentHeader, layout_version) == 8);
static_assert(offsetof(SegmentHeader, owner_pid) == 24);
static_assert(offsetof(SegmentHeader, ring_capacity) == 48);
static_assert(offsetof(SegmentHeader, rings_offset) == 56);
static_assert(offsetof(SegmentHeader, n_comms) == 72);
static_assert(offsetof(SegmentHeader, global_rank) == 80);
static_assert(offsetof(SegmentHeader, job) == 96);
static_assert(offsetof(SegmentHeader, host) == 160);
static_assert(offsetof(SegmentHeader, gpu) == 224);
static_assert(offsetof(SegmentHeader, plugin_version) == 288);
static_assert(offsetof(SegmentHeader, abi_version) == 320);
static_assert(offsetof(SegmentHeader, comms_dropped) == 328);
static_assert(offsetof(SegmentHeader, closed_ns) == 360);
static_assert(sizeof(CommHeader) == kCommHeaderBytes);
static_assert(offsetof(CommHeader, comm_hash) == 8);
static_assert(offsetof(CommHeader, name) == 32);
static_assert(offsetof(CommHeader, init_ns) == 96);
static_assert(offsetof(CommHeader, ring_capacity) == 112);
static_assert(offsetof(CommHeader, head) == 128);
static_assert(offsetof(CommHeader, n_coll) == 192);
static_assert(offsetof(CommHeader, gpu_clock_offset_ns) == 264);
static_assert(offsetof(CommHeader, fp_level) == 288);
static_assert(offsetof(CommHeader, disabled_reason) == 312);
static_assert(offsetof(CommHeader, kernelch_extra) == 320);
static_assert(offsetof(CommHeader, ignored_events) == 328);
static_assert(offsetof(CommHeader, late_matches) == 336);
static_assert(sizeof(OpRecord) == kRecordBytes && alignof(OpRecord) == 8);
static_assert(offsetof(OpRecord, key) == 8);
static_assert(offsetof(OpRecord, kind) == 16);
static_assert(offsetof(OpRecord, flags) == 24);
static_assert(offsetof(OpRecord, peer) == 28);
static_assert(offsetof(OpRecord, count) == 32);
static_assert(offsetof(OpRecord, group) == 56);
static_assert(offsetof(OpRecord, api_ns) == 64);
static_assert(offsetof(OpRecord, thread) == 112);
static_assert(offsetof(OpRecord, state) == 128);
static_assert(offsetof(OpRecord, ch_started) == 132);
static_assert(offsetof(OpRecord, gpu_start_ns) == 136);
static_assert(offsetof(OpRecord, ch_started_mask) == 168 && offsetof(OpRecord, ch_stopped_mask) == 176);
static_assert(offsetof(OpRecord, complete_ns) == 152);
static_assert(offsetof(OpRecord, fp_send_word) == 192);
static_assert(offsetof(OpRecord, fp_send) == 208);
static_assert(offsetof(OpRecord, send_nan) == 224);
static_assert(offsetof(OpRecord, fp_bytes) == 240);
static_assert(offsetof(OpRecord, fp_version) == 252);

}  // namespace scout::shm
