// Validated reading of segments: see segment_reader.h and include/scout/shm_format.h.
#include "common/segment_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/fence.h"
#include "common/liveness.h"
#include "common/utf8.h"
#include "scout/config.h"

namespace scout::shm {

namespace {

// Relaxed atomic load of a plain field another process (or the GPU) may be writing.
template <typename T>
T load_relaxed(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}

const char* file_type(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

bool trusted_segment_file(const struct stat& st, const TrustPolicy& trust, std::string* why) {
  if (!S_ISREG(st.st_mode)) {
    *why = std::string(file_type(st.st_mode)) + ", not a regular file: refused";
    return false;
  }
  uint32_t uid = static_cast<uint32_t>(st.st_uid);
  bool owner_ok = uid == static_cast<uint32_t>(::geteuid()) ||
                  std::find(trust.uids.begin(), trust.uids.end(), uid) != trust.uids.end();
  if (!owner_ok) {
    *why = "owned by uid " + std::to_string(uid) + ", not by this user (uid " + std::to_string(::geteuid()) +
           ") or SCOUT_SHM_TRUSTED_UIDS: refused";
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    *why = std::string("mode ") + mode + " lets other users write or read it (segments are 0600): refused";
    return false;
  }
  // A sparse file: reading its holes through a shared mapping allocates tmpfs pages (the plugin
  // creates segments with posix_fallocate, fully allocated).
  uint64_t allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  if (allocated < static_cast<uint64_t>(st.st_size)) {
    *why = "sparse: " + std::to_string(allocated) + " of " + std::to_string(st.st_size) +
           " bytes allocated (segments are fully allocated): refused";
    return false;
  }
  return true;
}

TrustPolicy TrustPolicy::from_config() {
  TrustPolicy p;
  std::string list = config::load().shm_trusted_uids;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    std::string item = list.substr(i, j - i);
    char* end = nullptr;
    errno = 0;
    unsigned long v = item.empty() ? 0 : std::strtoul(item.c_str(), &end, 10);
    if (!item.empty() && errno == 0 && end && *end == '\0' && item[0] != '-' && v <= 0xfffffffful) {
      p.uids.push_back(static_cast<uint32_t>(v));
    }
    i = j + 1;
  }
  return p;
}
// ---------------------------------------------------------------- SegmentReader

std::unique_ptr<SegmentReader> SegmentReader::open(const std::string& path, std::string* error,
                                                   const TrustPolicy& trust) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<SegmentReader> {
    if (error) *error = path + ": " + msg;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) return fail("a symbolic link: refused (segments are regular files)");
    return fail(std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(std::string("cannot stat: ") + std::strerror(e));
  }
  std::string why;
  if (!trusted_segment_file(st, trust, &why)) {
    ::close(fd);
    return fail(why);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kSegmentHeaderBytes) {
    ::close(fd);
    return fail("truncated: " + std::to_string(size) + " bytes, smaller than the header");
  }
  if (size > kMaxSegmentBytes) {
    ::close(fd);
    return fail("size " + std::to_string(size) + " bytes is beyond any segment's (" + std::to_string(kMaxSegmentBytes) +
                ")");
  }
  void* mem = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (mem == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(map_errno));
  const auto* h = static_cast<const SegmentHeader*>(mem);
  auto bad = [&](const std::string& msg) {
    ::munmap(mem, size);
    return fail(msg);
  };
  uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
  if (magic != kSegmentMagic) return bad("not a scout segment (bad magic)");
  if (h->layout_version != kLayoutVersion) {
    return bad("layout version " + std::to_string(h->layout_version) + " (this build reads " +
               std::to_string(kLayoutVersion) + ")");
  }
  if (h->header_bytes != kSegmentHeaderBytes || h->record_bytes != kRecordBytes) {
    return bad("header or record size mismatch");
  }
  if (h->max_comms < 1 || h->max_comms > kMaxCommsLimit) return bad("bad max_comms");
  if (!valid_ring_capacity(h->ring_capacity)) { return bad("bad ring capacity"); }
  if (h->rings_offset != kSegmentHeaderBytes ||
      h->ring_stride != kCommHeaderBytes + uint64_t(h->ring_capacity) * kRecordBytes) {
    return bad("bad ring geometry");
  }
  uint64_t rings_end = segment_bytes(h->max_comms, h->ring_capacity);
  if (h->n_tables > kMaxTables || h->tables_bytes > (uint64_t(1) << 40)) return bad("bad table directory");
  uint64_t expect = rings_end + h->tables_bytes;
  for (uint32_t i = 0; i < h->n_tables; ++i) {
    const TableRef& t = h->tables[i];
    if (t.id == kTableNone || t.offset % 64 != 0 || t.offset < rings_end || t.bytes > expect ||
        t.offset > expect - t.bytes) {
      return bad("table " + std::to_string(i) + " out of bounds");
    }
  }
  if (h->segment_bytes != expect || size != expect) {
    return bad("size " + std::to_string(size) + " bytes, header says " + std::to_string(h->segment_bytes) +
               ", geometry needs " + std::to_string(expect));
  }
  std::unique_ptr<SegmentReader> r(new SegmentReader());
  r->hdr_ = h;
  r->bytes_ = size;
  r->max_comms_ = h->max_comms;
  r->capacity_ = h->ring_capacity;
  r->stride_ = h->ring_stride;
  r->path_ = path;
  return r;
}

const void* SegmentReader::table(uint32_t id, uint32_t* version, uint64_t* bytes) const {
  for (uint32_t i = 0; i < hdr_->n_tables && i < kMaxTables; ++i) {
    const TableRef& t = hdr_->tables[i];
    if (t.id != id) continue;
    if (version) *version = t.version;
    if (bytes) *bytes = t.bytes;
    return reinterpret_cast<const char*>(hdr_) + t.offset;
  }
  return nullptr;
}

SegmentReader::~SegmentReader() {
  if (hdr_) ::munmap(const_cast<SegmentHeader*>(hdr_), bytes_);
}

namespace {
// The NUL-terminated text of a fixed-size field, made valid UTF-8 without control characters
// (the writer may be hostile: no ESC sequence or line break reaches an output).
std::string bounded_str(const char* p, size_t cap) {
  size_t n = 0;
  while (n < cap && p[n] != '\0') ++n;
  return text_clean(std::string_view(p, n));
}
}  // namespace

SegmentInfo SegmentReader::info() const {
  SegmentInfo i;
  i.path = path_;
  i.layout_version = hdr_->layout_version;
  i.owner_pid = hdr_->owner_pid;
  i.owner_start_ticks = hdr_->owner_start_ticks;
  i.created_ns = hdr_->created_ns;
  i.max_comms = max_comms_;
  i.ring_capacity = capacity_;
  i.n_comms = n_rings();
  i.abi_version = hdr_->abi_version;
  i.global_rank = hdr_->global_rank;
  i.local_rank = hdr_->local_rank;
  i.world_size = hdr_->world_size;
  i.cuda_dev = hdr_->cuda_dev;
  i.job = bounded_str(hdr_->job, sizeof(hdr_->job));
  i.host = bounded_str(hdr_->host, sizeof(hdr_->host));
  i.gpu = bounded_str(hdr_->gpu, sizeof(hdr_->gpu));
  i.plugin_version = bounded_str(hdr_->plugin_version, sizeof(hdr_->plugin_version));
  i.comms_dropped = hdr_->comms_dropped.load(std::memory_order_relaxed);
  i.events_bad_handle = hdr_->events_bad_handle.load(std::memory_order_relaxed);
  i.events_unknown = hdr_->events_unknown.load(std::memory_order_relaxed);
  i.last_event_ns = hdr_->last_event_ns.load(std::memory_order_relaxed);
  i.closed_ns = hdr_->closed_ns.load(std::memory_order_relaxed);
  return i;
}

uint32_t SegmentReader::n_rings() const {
  uint32_t n = hdr_->n_comms.load(std::memory_order_acquire);
  return std::min(n, max_comms_);
}

bool SegmentReader::comm(uint32_t ring, CommSnapshot* out) const {
  if (ring >= max_comms_) return false;
  const char* base = reinterpret_cast<const char*>(hdr_) + kSegmentHeaderBytes + ring * stride_;
  const auto* ch = reinterpret_cast<const CommHeader*>(base);
  uint32_t state = ch->state.load(std::memory_order_acquire);
  if (state != kCommActive && state != kCommFinalized) return false;
  CommSnapshot& c = *out;
  c.ring = ring;
  c.state = state;
  c.generation = ch->generation;
  c.comm_hash = ch->comm_hash;
  c.nranks = ch->nranks;
  c.rank = ch->rank;
  c.nnodes = ch->nnodes;
  c.cuda_dev = ch->cuda_dev;
  c.name = bounded_str(ch->name, sizeof(ch->name));
  c.init_ns = ch->init_ns;
  c.finalize_ns = ch->finalize_ns.load(std::memory_order_relaxed);
  c.head = ch->head.load(std::memory_order_acquire);
  c.n_coll = ch->n_coll.load(std::memory_order_relaxed);
  c.n_p2p = ch->n_p2p.load(std::memory_order_relaxed);
  c.n_unmatched = ch->n_unmatched.load(std::memory_order_relaxed);
  c.overwritten_live = ch->overwritten_live.load(std::memory_order_relaxed);
  c.bad_handles = ch->bad_handles.load(std::memory_order_relaxed);
  c.foreign_proxy = ch->foreign_proxy.load(std::memory_order_relaxed);
  c.kernelch_orphans = ch->kernelch_orphans.load(std::memory_order_relaxed);
  c.api_calls = ch->api_calls.load(std::memory_order_relaxed);
  c.last_api_ns = ch->last_api_ns.load(std::memory_order_relaxed);
  c.gpu_clock_offset_ns = ch->gpu_clock_offset_ns.load(std::memory_order_relaxed);
  c.fp_sampled = ch->fp_sampled.load(std::memory_order_relaxed);
  c.fp_skipped = ch->fp_skipped.load(std::memory_order_relaxed);
  c.fp_level = ch->fp_level.load(std::memory_order_relaxed);
  c.fp_gpu_ns = ch->fp_gpu_ns.load(std::memory_order_relaxed);
  c.kernel_ns = ch->kernel_ns.load(std::memory_order_relaxed);
  c.disabled_reason = ch->disabled_reason.load(std::memory_order_relaxed);
  c.kernelch_extra = ch->kernelch_extra.load(std::memory_order_relaxed);
  c.ignored_events = ch->ignored_events.load(std::memory_order_relaxed);
  c.late_matches = ch->late_matches.load(std::memory_order_relaxed);
  if (c.nranks < 0 || c.rank < 0 || (c.nranks > 0 && c.rank >= c.nranks)) return false;
  return true;
}

ReadStatus SegmentReader::read(uint32_t ring, uint64_t index, RecordSnapshot* out) const {
  if (ring >= max_comms_) return ReadStatus::kInvalid;
  const char* base = reinterpret_cast<const char*>(hdr_) + kSegmentHeaderBytes + ring * stride_;
  const auto* ch = reinterpret_cast<const CommHeader*>(base);
  const auto* slots = reinterpret_cast<const OpRecord*>(base + kCommHeaderBytes);
  uint64_t head = ch->head.load(std::memory_order_acquire);
  if (index >= head) return ReadStatus::kNotYet;
  if (head - index > capacity_) return ReadStatus::kOverwritten;
  const OpRecord* rec = &slots[index & (capacity_ - 1)];
  uint64_t s1 = rec->seq.load(std::memory_order_acquire);
  if (s1 == seq_writing(index)) return ReadStatus::kNotYet;  // claimed, being written
  if (s1 < seq_valid(index)) return ReadStatus::kNotYet;     // an older record still there
  if (s1 != seq_valid(index)) return ReadStatus::kOverwritten;

  RecordSnapshot& r = *out;
  r.index = index;
  r.key = rec->key;
  r.kind = rec->kind;
  r.func = rec->func;
  r.datatype = rec->datatype;
  r.api_datatype = rec->api_datatype;
  r.algo = rec->algo;
  r.proto = rec->proto;
  r.n_channels = rec->n_channels;
  r.n_warps = rec->n_warps;
  r.flags = rec->flags;
  r.peer = rec->peer;
  r.count = rec->count;
  r.api_count = rec->api_count;
  r.bytes = rec->bytes;
  r.group = rec->group;
  r.api_ns = rec->api_ns;
  r.launch_ns = rec->launch_ns;
  r.enqueue_ns = rec->enqueue_ns;
  r.send_buf = rec->send_buf;
  r.recv_buf = rec->recv_buf;
  r.stream = rec->stream;
  r.thread = rec->thread;
  // Progress: state first (acquire), then the values it vouches for.
  r.state = rec->state.load(std::memory_order_acquire);
  r.ch_started = rec->ch_started.load(std::memory_order_relaxed);
  r.ch_stopped = rec->ch_stopped.load(std::memory_order_relaxed);
  r.gpu_start_ns = rec->gpu_start_ns.load(std::memory_order_relaxed);
  r.gpu_end_ns = rec->gpu_end_ns.load(std::memory_order_relaxed);
  r.complete_ns = rec->complete_ns.load(std::memory_order_relaxed);
  r.gpu_start_raw = rec->gpu_start_raw.load(std::memory_order_relaxed);
  // Stops before starts: a channel's start bit is written before its stop bit, so every stop bit
  // read here has its start bit in the later load.
  r.ch_stopped_mask = rec->ch_stopped_mask.load(std::memory_order_acquire);
  r.ch_started_mask = rec->ch_started_mask.load(std::memory_order_acquire);
  // Fingerprints: status words first (acquire), then the payload they vouch for.
  uint64_t sw = rec->fp_send_word.load(std::memory_order_acquire);
  uint64_t rw = rec->fp_recv_word.load(std::memory_order_acquire);
  r.fp_send_status = fp_status(sw, index);
  r.fp_recv_status = fp_status(rw, index);
  r.fp_send = load_relaxed(rec->fp_send);
  r.fp_recv = load_relaxed(rec->fp_recv);
  r.send_nan = load_relaxed(rec->send_nan);
  r.send_inf = load_relaxed(rec->send_inf);
  r.recv_nan = load_relaxed(rec->recv_nan);
  r.recv_inf = load_relaxed(rec->recv_inf);
  r.fp_bytes = load_relaxed(rec->fp_bytes);
  r.fp_level = load_relaxed(rec->fp_level);
  r.fp_version = load_relaxed(rec->fp_version);
  scout::acquire_fence();
  uint64_t s2 = rec->seq.load(std::memory_order_relaxed);
  if (s2 != s1) return ReadStatus::kTorn;
  std::string why;
  if (!validate_record(r, &why)) return ReadStatus::kInvalid;
  return ReadStatus::kOk;
}

bool SegmentReader::owner_alive() const { return process_alive(hdr_->owner_pid, hdr_->owner_start_ticks); }

bool validate_record(const RecordSnapshot& r, std::string* why) {
  auto no = [&](const char* m) {
    if (why) *why = m;
    return false;
  };
  if (r.kind < kKindColl || r.kind > kKindCeColl) return no("bad kind");
  if (r.func > kFuncSendRecv && r.func != kFuncUnknown) return no("bad func");
  if (r.datatype > kTypeFloat8e5m2 && r.datatype != kTypeUnknown) return no("bad datatype");
  if (r.api_datatype > kTypeFloat8e5m2 && r.api_datatype != kTypeUnknown && r.api_datatype != 0) {
    return no("bad api datatype");
  }
  if (r.algo > kAlgoPat && r.algo != kAlgoUnknown) return no("bad algo");
  if (r.proto > kProtoSimple && r.proto != kProtoUnknown) return no("bad proto");
  if (r.n_channels > 64) return no("more than 64 channels");
  if (r.state > kStateApiOnly) return no("bad state");
  if (r.ch_started > 64 || r.ch_stopped > 64) return no("channel counts out of range");
  // A channel stops only after it started (its bits are written before the counts).
  if ((r.ch_stopped_mask & ~r.ch_started_mask) != 0) return no("channel stopped without starting");
  if (r.fp_send_status > kFpTimedOut || r.fp_recv_status > kFpTimedOut) return no("bad fp status");
  if (r.kind == kKindColl && r.func > kFuncAllReduce) return no("collective with a p2p func");
  return true;
}

}  // namespace scout::shm
