// Segment creation and ring writing: see segment_writer.h and include/scout/shm_format.h.
#include "common/segment_writer.h"

#include "common/write_guard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <new>

#include "common/clock.h"
#include "common/fence.h"
#include "common/liveness.h"
#include "common/paths.h"
#include "common/utf8.h"

namespace scout::shm {

namespace {

// Copies at most cap - 1 bytes, cut at a UTF-8 character boundary (common/utf8.h), and a NUL.
void copy_cstr(char* dst, size_t cap, std::string_view src) {
  size_t n = utf8_prefix_len(src, cap - 1);
  if (n > 0) std::memcpy(dst, src.data(), n);  // an empty view may have a null data()
  dst[n] = '\0';
}

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

void RingWriter::publish(OpRecord* rec, uint64_t index) { rec->seq.store(seq_valid(index), std::memory_order_release); }

OpRecord* RingWriter::at(uint64_t index) const {
  OpRecord* rec = &slots_[index & mask_];
  return rec->seq.load(std::memory_order_acquire) == seq_valid(index) ? rec : nullptr;
}

// ---------------------------------------------------------------- SegmentWriter

std::unique_ptr<SegmentWriter> SegmentWriter::create(const std::string& dir, const SegmentIdentity& id,
                                                     uint32_t max_comms, uint32_t ring_capacity, std::string* error,
                                                     const std::vector<TableRequest>& tables) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<SegmentWriter> {
    if (error) *error = msg;
    return nullptr;
  };
  if (max_comms < 1 || max_comms > kMaxCommsLimit) return fail("max_comms out of range");
  if (!valid_ring_capacity(ring_capacity)) { return fail("ring capacity must be a power of two in [16, 2^20]"); }
  if (tables.size() > kMaxTables) return fail("too many tables");
  uint64_t rings_end = segment_bytes(max_comms, ring_capacity);
  uint64_t tables_bytes = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].id == kTableNone || tables[i].bytes == 0) return fail("bad table request");
    for (size_t j = 0; j < i; ++j) {
      if (tables[j].id == tables[i].id) return fail("duplicate table id");
    }
    tables_bytes += (tables[i].bytes + 63) / 64 * 64;
  }
  int pid = static_cast<int>(::getpid());
  std::string path = dir + "/" + segment_name(id.job, id.host, pid);
  uint64_t bytes = rings_end + tables_bytes;

  // This pid's segment already exists: ours from an earlier load cycle (NCCL dlopens the plugin
  // again after the last communicator was destroyed, docs/nccl-notes.md §1.2) is reopened and
  // continues with fresh rings; a stale one of an earlier process with the same pid, or one whose
  // geometry differs, is replaced.
  struct stat existing;
  if (::lstat(path.c_str(), &existing) == 0) {
    if (auto w = reopen_own(path, max_comms, ring_capacity, bytes)) return w;
    ::unlink(path.c_str());
  }
  // A new segment is built under a hidden name (observers list only names that begin with the
  // segment prefix) and published under its real name by link() once its header and magic are
  // written, so an observer never opens a half-created file.
  const std::string tmp = dir + "/." + segment_name(id.job, id.host, pid) + ".new";
  ::unlink(tmp.c_str());  // a leftover of a process with this pid killed while creating
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail("cannot create " + path + ": " + std::strerror(errno));
  // Mode 0600 regardless of umask.
  (void)::fchmod(fd, 0600);
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail("cannot allocate " + std::to_string(bytes) + " bytes for " + path + ": " + std::strerror(rc) +
                (rc == ENOSPC ? " (the segment directory " + dir +
                                    ", SCOUT_SHM_DIR, is full: free space there, point SCOUT_SHM_DIR elsewhere or "
                                    "lower SCOUT_RING_SLOTS / SCOUT_MAX_COMMS)"
                              : std::string()));
  }
  // MAP_POPULATE: the writer's page tables are filled now (creation is at communicator init),
  // so the first pass through each ring takes no page fault on NCCL's threads.
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (mem == MAP_FAILED) {
    ::unlink(tmp.c_str());
    return fail("cannot map " + path + ": " + std::strerror(map_errno));
  }

  std::unique_ptr<SegmentWriter> w(new (std::nothrow) SegmentWriter());
  if (!w) {
    ::munmap(mem, bytes);
    ::unlink(tmp.c_str());
    return fail("out of memory");
  }
  guard_mapping(mem, bytes);  // a truncation of the file later must not kill this process (write_guard.h)
  try {
    w->rings_.reserve(max_comms);
  } catch (...) {
    ::munmap(mem, bytes);
    ::unlink(tmp.c_str());
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
  h->n_tables = uint32_t(tables.size());
  h->tables_bytes = tables_bytes;
  uint64_t at = rings_end;
  for (size_t i = 0; i < tables.size(); ++i) {
    h->tables[i].id = tables[i].id;
    h->tables[i].version = tables[i].version;
    h->tables[i].offset = at;
    h->tables[i].bytes = tables[i].bytes;
    at += (tables[i].bytes + 63) / 64 * 64;
  }
  char* base = static_cast<char*>(mem);
  for (uint32_t r = 0; r < max_comms; ++r) {
    char* ring = base + h->rings_offset + uint64_t(r) * h->ring_stride;
    auto* ch = reinterpret_cast<CommHeader*>(ring);
    ch->ring_capacity = ring_capacity;
    w->rings_.emplace_back(ch, reinterpret_cast<OpRecord*>(ring + kCommHeaderBytes), ring_capacity, r);
  }
  scout::release_fence();
  __atomic_store_n(&h->magic, kSegmentMagic, __ATOMIC_RELEASE);
  // Publish: link() fails rather than replace a file that appeared under the real name meanwhile.
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    const int link_errno = errno;
    ::munmap(mem, bytes);
    ::unlink(tmp.c_str());
    w->hdr_ = nullptr;
    return fail("cannot publish " + path + ": " + std::strerror(link_errno));
  }
  ::unlink(tmp.c_str());
  return w;
}

std::unique_ptr<SegmentWriter> SegmentWriter::reopen_own(const std::string& path, uint32_t max_comms,
                                                         uint32_t ring_capacity, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) != bytes || st.st_uid != ::geteuid()) {
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
  bool ours = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == kSegmentMagic && h->layout_version == kLayoutVersion &&
              h->header_bytes == kSegmentHeaderBytes && h->record_bytes == kRecordBytes && h->segment_bytes == bytes &&
              h->max_comms == max_comms && h->ring_capacity == ring_capacity &&
              h->rings_offset == kSegmentHeaderBytes &&
              h->ring_stride == kCommHeaderBytes + uint64_t(ring_capacity) * kRecordBytes && h->owner_pid == pid &&
              h->owner_start_ticks == process_start_ticks(pid);
  std::unique_ptr<SegmentWriter> w;
  if (ours) {
    w.reset(new (std::nothrow) SegmentWriter());
    if (w) {
      try {
        w->rings_.reserve(max_comms);
      } catch (...) { w.reset(); }
    }
  }
  if (!w) {
    ::munmap(mem, bytes);
    return nullptr;
  }
  w->hdr_ = h;
  w->bytes_ = bytes;
  w->path_ = path;
  guard_mapping(mem, bytes);
  char* base = static_cast<char*>(mem);
  for (uint32_t r = 0; r < max_comms; ++r) {
    char* ring = base + h->rings_offset + uint64_t(r) * h->ring_stride;
    w->rings_.emplace_back(reinterpret_cast<CommHeader*>(ring), reinterpret_cast<OpRecord*>(ring + kCommHeaderBytes),
                           ring_capacity, r);
  }
  w->next_ring_.store(std::min(h->n_comms.load(std::memory_order_acquire), max_comms), std::memory_order_relaxed);
  h->closed_ns.store(0, std::memory_order_release);
  return w;
}

void* SegmentWriter::table(uint32_t id, uint64_t* bytes) const {
  uint32_t n = std::min(hdr_->n_tables, kMaxTables);
  for (uint32_t i = 0; i < n; ++i) {
    const TableRef& t = hdr_->tables[i];
    if (t.id != id) continue;
    if (bytes) *bytes = t.bytes;
    return reinterpret_cast<char*>(hdr_) + t.offset;
  }
  return nullptr;
}

SegmentWriter::~SegmentWriter() {
  if (hdr_) {
    unguard_mapping(hdr_);
    ::munmap(hdr_, bytes_);
  }
}

bool SegmentWriter::detached() const { return hdr_ != nullptr && mapping_lost(hdr_); }

RingWriter* SegmentWriter::open_ring(uint64_t comm_hash, int nranks, int rank, int nnodes, const char* name,
                                     int cuda_dev) {
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
  while (!hdr_->n_comms.compare_exchange_weak(expect, r + 1, std::memory_order_release, std::memory_order_relaxed)) {
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

}  // namespace scout::shm
