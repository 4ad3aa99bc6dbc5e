// Shared-memory segments: see segment.h and include/scout/shm_format.h.
#include "plugin/shm/segment.h"

#include "plugin/shm/fence.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <new>

namespace scout::shm {

std::string sanitize_component(std::string_view s) {
  std::string out;
  out.reserve(std::min<size_t>(s.size(), 48));
  for (char c : s) {
    if (out.size() >= 48) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty()) out = "_";
  return out;
}

std::string segment_name(std::string_view job, std::string_view host, int pid) {
  return std::string(kSegmentPrefix) + sanitize_component(job) + "." + sanitize_component(host) +
         "." + std::to_string(pid);
}

bool parse_segment_name(std::string_view name, std::string* job, std::string* host, int* pid) {
  std::string_view prefix = kSegmentPrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  size_t a = name.find('.');
  if (a == std::string_view::npos) return false;
  size_t b = name.find('.', a + 1);
  if (b == std::string_view::npos || name.find('.', b + 1) != std::string_view::npos) return false;
  std::string_view pid_text = name.substr(b + 1);
  if (pid_text.empty() || pid_text.size() > 10) return false;
  long v = 0;
  for (char c : pid_text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v <= 0 || v > 0x7fffffff) return false;
  if (job) *job = std::string(name.substr(0, a));
  if (host) *host = std::string(name.substr(a + 1, b - a - 1));
  if (pid) *pid = static_cast<int>(v);
  return true;
}

namespace {
// Fields of /proc/<pid>/stat: the state letter (field 3) and the start time in clock ticks
// (field 22). False when the file cannot be read or parsed.
bool read_proc_stat(int pid, char* state, uint64_t* start_ticks) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may contain spaces: start after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return false;
  *state = p[2];
  p++;
  // Fields after ')' start at field 3; starttime is field 22.
  int field = 2;
  while (*p && field < 22) {
    while (*p == ' ') p++;
    field++;
    if (field == 22) break;
    while (*p && *p != ' ') p++;
  }
  if (field != 22) return false;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + uint64_t(*p++ - '0');
  *start_ticks = v;
  return true;
}
}  // namespace

uint64_t process_start_ticks(int pid) {
  char state = 0;
  uint64_t ticks = 0;
  return read_proc_stat(pid, &state, &ticks) ? ticks : 0;
}

bool process_alive(int pid, uint64_t start_ticks, char* state) {
  if (state) *state = 0;
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_ticks == 0 && state == nullptr) return true;
  char s = 0;
  uint64_t now = 0;
  if (!read_proc_stat(pid, &s, &now)) return true;  // unreadable /proc (other pid namespace): trust kill()
  if (state) *state = s;
  return start_ticks == 0 || now == start_ticks;
}

int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {

void copy_cstr(char* dst, size_t cap, std::string_view src) {
  size_t n = std::min(cap - 1, src.size());
  if (n > 0) std::memcpy(dst, src.data(), n);  // an empty view may have a null data()
  dst[n] = '\0';
}

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Zeroes bytes 8..255 of a record (records are 256-byte aligned in the segment). Plain vector
// stores: for 248 bytes they beat `rep stos`, which the compiler picks for a memset.
inline void zero_after_seq(OpRecord* rec) {
  char* p = reinterpret_cast<char*>(rec);
#if defined(__SSE2__)
  __atomic_store_n(reinterpret_cast<uint64_t*>(p + 8), uint64_t(0), __ATOMIC_RELAXED);
  const __m128i z = _mm_setzero_si128();
  for (int off = 16; off < int(sizeof(OpRecord)); off += 16) {
    _mm_store_si128(reinterpret_cast<__m128i*>(p + off), z);
  }
#else
  std::memset(p + 8, 0, sizeof(OpRecord) - 8);
#endif
}

// Relaxed atomic load of a plain field another process (or the GPU) may be writing.
template <typename T>
T load_relaxed(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}

}  // namespace

// ---------------------------------------------------------------- RingWriter

OpRecord* RingWriter::begin(uint64_t* index) {
  uint64_t i = hdr_->head.fetch_add(1, std::memory_order_acq_rel);
  OpRecord* rec = &slots_[i & mask_];
  // The next record's four cache lines, for writing: fetched while this one is filled, so a
  // ring larger than the caches does not stall the next operation.
  const char* next = reinterpret_cast<const char*>(&slots_[(i + 1) & mask_]);
  for (uint32_t off = 0; off < sizeof(OpRecord); off += 64) __builtin_prefetch(next + off, 1, 3);
  uint64_t old = rec->seq.load(std::memory_order_relaxed);
  if (old != 0 && (old & 1) == 0) {
    uint32_t st = rec->state.load(std::memory_order_relaxed);
    // Records flagged kFlagNoKernelCh can never complete: their reuse loses nothing pending.
    uint32_t flags = __atomic_load_n(&rec->flags, __ATOMIC_RELAXED);
    if ((st == kStateEnqueued || st == kStateRunning) && !(flags & kFlagNoKernelCh)) {
      hdr_->overwritten_live.fetch_add(1, std::memory_order_relaxed);
    }
  }
  rec->seq.store(seq_writing(i), std::memory_order_relaxed);
  scout::release_fence();
  // Zero everything after seq. The atomics among them are reset by the same plain writes (the
  // odd seq tells readers the slot is in flux; the release in publish() orders them).
  zero_after_seq(rec);
  rec->peer = -1;
  *index = i;
  return rec;
}

void RingWriter::publish(OpRecord* rec, uint64_t index) {
  rec->seq.store(seq_valid(index), std::memory_order_release);
}

OpRecord* RingWriter::at(uint64_t index) const {
  OpRecord* rec = &slots_[index & mask_];
  return rec->seq.load(std::memory_order_acquire) == seq_valid(index) ? rec : nullptr;
}

// ---------------------------------------------------------------- SegmentWriter

std::unique_ptr<SegmentWriter> SegmentWriter::create(const std::string& dir,
                                                     const SegmentIdentity& id, uint32_t max_comms,
                                                     uint32_t ring_capacity, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<SegmentWriter> {
    if (error) *error = msg;
    return nullptr;
  };
  if (max_comms < 1 || max_comms > kMaxCommsLimit) return fail("max_comms out of range");
  if (!is_pow2(ring_capacity) || ring_capacity < kMinRingCapacity ||
      ring_capacity > kMaxRingCapacity) {
    return fail("ring capacity must be a power of two in [16, 2^20]");
  }
  int pid = static_cast<int>(::getpid());
  std::string path = dir + "/" + segment_name(id.job, id.host, pid);
  uint64_t bytes = segment_bytes(max_comms, ring_capacity);

  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // This pid's segment already exists: ours from an earlier load cycle (NCCL dlopens the
    // plugin again after the last communicator was destroyed, digest 1.2) is reopened and
    // continues with fresh rings; a stale one of an earlier process with the same pid, or one
    // whose geometry differs, is replaced.
    if (auto w = reopen_own(path, max_comms, ring_capacity)) return w;
    ::unlink(path.c_str());
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) return fail("cannot create " + path + ": " + std::strerror(errno));
  // Mode 0600 regardless of umask.
  (void)::fchmod(fd, 0600);
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return fail("cannot allocate " + std::to_string(bytes) + " bytes for " + path + ": " +
                std::strerror(rc));
  }
  // MAP_POPULATE: the writer's page tables are filled now (creation is at communicator init),
  // so the first pass through each ring takes no page fault on NCCL's threads.
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (mem == MAP_FAILED) {
    ::unlink(path.c_str());
    return fail("cannot map " + path + ": " + std::strerror(map_errno));
  }

  std::unique_ptr<SegmentWriter> w(new (std::nothrow) SegmentWriter());
  if (!w) {
    ::munmap(mem, bytes);
    ::unlink(path.c_str());
    return fail("out of memory");
  }
  try {
    w->rings_.reserve(max_comms);
  } catch (...) {
    ::munmap(mem, bytes);
    ::unlink(path.c_str());
    return fail("out of memory");
  }
  w->hdr_ = static_cast<SegmentHeader*>(mem);
  w->bytes_ = bytes;
  w->path_ = path;

  // The file is zero-filled by posix_fallocate; write the header, magic last.
  SegmentHeader* h = w->hdr_;
  h->layout_version = kLayoutVersion;
  h->header_bytes = kSegmentHeaderBytes;
  h->segment_bytes = bytes;
  h->owner_pid = pid;
  h->max_comms = max_comms;
  h->owner_start_ticks = process_start_ticks(pid);
  h->created_ns = wall_ns();
  h->ring_capacity = ring_capacity;
  h->record_bytes = kRecordBytes;
  h->rings_offset = kSegmentHeaderBytes;
  h->ring_stride = kCommHeaderBytes + uint64_t(ring_capacity) * kRecordBytes;
  h->global_rank = id.global_rank;
  h->local_rank = id.local_rank;
  h->world_size = id.world_size;
  h->cuda_dev = id.cuda_dev;
  copy_cstr(h->job, sizeof(h->job), id.job);
  copy_cstr(h->host, sizeof(h->host), id.host);
  copy_cstr(h->gpu, sizeof(h->gpu), id.gpu);
  copy_cstr(h->plugin_version, sizeof(h->plugin_version), id.plugin_version);
  char* base = static_cast<char*>(mem);
  for (uint32_t r = 0; r < max_comms; ++r) {
    char* ring = base + h->rings_offset + uint64_t(r) * h->ring_stride;
    auto* ch = reinterpret_cast<CommHeader*>(ring);
    ch->ring_capacity = ring_capacity;
    w->rings_.emplace_back(ch, reinterpret_cast<OpRecord*>(ring + kCommHeaderBytes),
                           ring_capacity, r);
  }
  scout::release_fence();
  __atomic_store_n(&h->magic, kSegmentMagic, __ATOMIC_RELEASE);
  return w;
}

std::unique_ptr<SegmentWriter> SegmentWriter::reopen_own(const std::string& path,
                                                         uint32_t max_comms,
                                                         uint32_t ring_capacity) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat st;
  uint64_t bytes = segment_bytes(max_comms, ring_capacity);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) != bytes ||
      st.st_uid != ::geteuid()) {
    ::close(fd);
    return nullptr;
  }
  // MAP_POPULATE: the writer's page tables are filled now (creation is at communicator init),
  // so the first pass through each ring takes no page fault on NCCL's threads.
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (mem == MAP_FAILED) return nullptr;
  auto* h = static_cast<SegmentHeader*>(mem);
  int pid = static_cast<int>(::getpid());
  bool ours = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == kSegmentMagic &&
              h->layout_version == kLayoutVersion && h->header_bytes == kSegmentHeaderBytes &&
              h->record_bytes == kRecordBytes && h->segment_bytes == bytes &&
              h->max_comms == max_comms && h->ring_capacity == ring_capacity &&
              h->rings_offset == kSegmentHeaderBytes &&
              h->ring_stride == kCommHeaderBytes + uint64_t(ring_capacity) * kRecordBytes &&
              h->owner_pid == pid && h->owner_start_ticks == process_start_ticks(pid);
  std::unique_ptr<SegmentWriter> w;
  if (ours) {
    w.reset(new (std::nothrow) SegmentWriter());
    if (w) {
      try {
        w->rings_.reserve(max_comms);
      } catch (...) {
        w.reset();
      }
    }
  }
  if (!w) {
    ::munmap(mem, bytes);
    return nullptr;
  }
  w->hdr_ = h;
  w->bytes_ = bytes;
  w->path_ = path;
  char* base = static_cast<char*>(mem);
  for (uint32_t r = 0; r < max_comms; ++r) {
    char* ring = base + h->rings_offset + uint64_t(r) * h->ring_stride;
    w->rings_.emplace_back(reinterpret_cast<CommHeader*>(ring),
                           reinterpret_cast<OpRecord*>(ring + kCommHeaderBytes), ring_capacity, r);
  }
  w->next_ring_.store(std::min(h->n_comms.load(std::memory_order_acquire), max_comms),
                      std::memory_order_relaxed);
  h->closed_ns.store(0, std::memory_order_release);
  return w;
}

SegmentWriter::~SegmentWriter() {
  if (hdr_) ::munmap(hdr_, bytes_);
}

RingWriter* SegmentWriter::open_ring(uint64_t comm_hash, int nranks, int rank, int nnodes,
                                     const char* name, int cuda_dev) {
  uint32_t r = next_ring_.fetch_add(1, std::memory_order_relaxed);
  if (r >= hdr_->max_comms) {
    next_ring_.store(hdr_->max_comms, std::memory_order_relaxed);
    hdr_->comms_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  RingWriter* ring = &rings_[r];
  CommHeader* ch = ring->header();
  ch->state.store(kCommInit, std::memory_order_relaxed);
  ch->generation += 1;
  ch->comm_hash = comm_hash;
  ch->nranks = nranks;
  ch->rank = rank;
  ch->nnodes = nnodes;
  ch->cuda_dev = cuda_dev;
  copy_cstr(ch->name, sizeof(ch->name), name ? std::string_view(name) : std::string_view());
  ch->init_ns = wall_ns();
  ch->state.store(kCommActive, std::memory_order_release);
  // Publish the ring count in order: n_comms only grows past a ring once it is active.
  uint32_t expect = r;
  while (!hdr_->n_comms.compare_exchange_weak(expect, r + 1, std::memory_order_release,
                                              std::memory_order_relaxed)) {
    if (expect > r) break;  // a later ring already published past us
    expect = r;             // an earlier ring is still publishing: retry (rare, short)
  }
  return ring;
}

void SegmentWriter::close_ring(RingWriter* ring) {
  if (!ring) return;
  CommHeader* ch = ring->header();
  ch->finalize_ns.store(wall_ns(), std::memory_order_relaxed);
  ch->state.store(kCommFinalized, std::memory_order_release);
}

// ---------------------------------------------------------------- SegmentReader

std::unique_ptr<SegmentReader> SegmentReader::open(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<SegmentReader> {
    if (error) *error = path + ": " + msg;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(std::string("cannot stat: ") + std::strerror(e));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kSegmentHeaderBytes) {
    ::close(fd);
    return fail("truncated: " + std::to_string(size) + " bytes, smaller than the header");
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
  if (!is_pow2(h->ring_capacity) || h->ring_capacity < kMinRingCapacity ||
      h->ring_capacity > kMaxRingCapacity) {
    return bad("bad ring capacity");
  }
  if (h->rings_offset != kSegmentHeaderBytes ||
      h->ring_stride != kCommHeaderBytes + uint64_t(h->ring_capacity) * kRecordBytes) {
    return bad("bad ring geometry");
  }
  uint64_t expect = segment_bytes(h->max_comms, h->ring_capacity);
  if (h->segment_bytes != expect || size != expect) {
    return bad("size " + std::to_string(size) + " bytes, header says " +
               std::to_string(h->segment_bytes) + ", geometry needs " + std::to_string(expect));
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

SegmentReader::~SegmentReader() {
  if (hdr_) ::munmap(const_cast<SegmentHeader*>(hdr_), bytes_);
}

namespace {
std::string bounded_str(const char* p, size_t cap) {
  size_t n = 0;
  while (n < cap && p[n] != '\0') ++n;
  return std::string(p, n);
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
  if (s1 < seq_valid(index)) return ReadStatus::kNotYet;  // an older record still there
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

bool SegmentReader::owner_alive() const {
  return process_alive(hdr_->owner_pid, hdr_->owner_start_ticks);
}

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
  if (r.fp_send_status > kFpTimedOut || r.fp_recv_status > kFpTimedOut) return no("bad fp status");
  if (r.kind == kKindColl && r.func > kFuncAllReduce) return no("collective with a p2p func");
  return true;
}

std::vector<std::string> list_segments(const std::string& dir, std::string_view job,
                                       std::string_view host) {
  std::vector<std::string> out;
  std::string prefix = std::string(kSegmentPrefix) + sanitize_component(job) + ".";
  if (!host.empty()) prefix += sanitize_component(host) + ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!parse_segment_name(name, nullptr, nullptr, nullptr)) continue;
    out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace scout::shm
