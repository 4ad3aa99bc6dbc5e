// Process-wide state: creation at the first init, teardown at the last finalize (process.h).
#include "plugin/core/process.h"

#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "common/paths.h"
#include "common/safe_file.h"
#include "plugin/core/identity.h"
#include "plugin/core/log.h"
#include "plugin/fingerprint/engine.h"
#include "plugin/gemm/capture.h"
#include "scout/version.h"

namespace scout::core {
namespace {

pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
uint16_t g_last_salt = 0;
// The latest note_net_state() (guarded by g_init_mu).
struct NetMemo {
  uint32_t state = shm::kNetUnused;
  int net_abi = 0, delegate_abi = 0;
  char delegate[64] = {};
} g_net_memo;

void apply_net_memo(Process* p) {
  shm::LinkTableHeader* h = p->links.header();
  if (h == nullptr) return;
  h->net_state.store(g_net_memo.state, std::memory_order_relaxed);
  h->net_abi.store(uint32_t(g_net_memo.net_abi), std::memory_order_relaxed);
  h->delegate_abi.store(uint32_t(g_net_memo.delegate_abi), std::memory_order_relaxed);
  std::memcpy(h->delegate, g_net_memo.delegate, sizeof(h->delegate));
}
std::atomic<bool> g_gpu_set{false};

// Salt of a load cycle: random for the first cycle of the process, then the previous one + 1
// (never 0). A thread's cache (thread_cache.h) is trusted when its salt matches the current one,
// so a salt must not come back while a thread may still hold a cache from its cycle: consecutive
// salts repeat only after 65535 cycles, where random draws could repeat in any two.
uint16_t new_salt() {
  if (g_last_salt != 0) {
    g_last_salt = uint16_t(g_last_salt + 1 == 0 ? 1 : g_last_salt + 1);
    return g_last_salt;
  }
  uint16_t s = 0;
  if (::getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s)) {
    const uint64_t mix = uint64_t(now_ns()) ^ (uint64_t(::getpid()) << 17);
    s = uint16_t(mix ^ (mix >> 16) ^ (mix >> 32));
  }
  g_last_salt = s == 0 ? 1 : s;
  return g_last_salt;
}

uint32_t round_pow2(int64_t v) {
  uint32_t r = shm::kMinRingCapacity;
  while (r < uint64_t(v) && r < shm::kMaxRingCapacity) r <<= 1;
  return r;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// GEMM shape capture (plugin/gemm/capture.h) into the segment's table, when configured.
void start_gemm_capture(Process* p) {
  if (!p->cfg.gemm_capture) return;
  uint64_t bytes = 0;
  void* t = p->seg->table(shm::kTableGemmShapes, &bytes);
  auto table = gemm::ShapeTable::attach(static_cast<shm::GemmTableHeader*>(t), bytes);
  if (!table) {
    log::warn("GEMM capture: cannot set up the shape table; capture off");
    return;
  }
  gemm::CaptureOptions o;
  o.window_ns = int64_t(p->cfg.gemm_window_ms) * 1000000;
  o.period_ns = int64_t(p->cfg.gemm_period_s) * 1000000000;
  o.log = [](const std::string& m) { log::info("%s", m.c_str()); };
  auto cap = gemm::Capture::create(table.get(), std::move(o));
  if (!cap) {
    log::warn("GEMM capture: out of memory; capture off");
    return;
  }
  p->gemm_table = table.release();
  p->gemm = cap.release();
}

void stop_gemm_capture(Process* p) {
  if (p->gemm != nullptr) p->gemm->stop(now_ns());
  delete p->gemm;  // restores cuBLASLt's logger before the table goes
  p->gemm = nullptr;
  delete p->gemm_table;
  p->gemm_table = nullptr;
}

}  // namespace

std::atomic<Process*> g_process{nullptr};

namespace {
// Said once when the segment was truncated under this process: the job goes on, unobserved
// (common/write_guard.h; docs/plugin.md, "A segment truncated under the job").
void note_truncated(Process* p) {
  if (p->seg && p->seg->detached())
    log::warn_once(log::Problem::kSegmentTruncated,
                   "the segment %s was truncated under this process; what it records from now on reaches no "
                   "observer (the job continues)",
                   p->seg->path().c_str());
}
}  // namespace

void lock_init() { pthread_mutex_lock(&g_init_mu); }
void unlock_init() { pthread_mutex_unlock(&g_init_mu); }

Process* process_acquire(int abi_version) {
  Process* p = g_process.load(std::memory_order_relaxed);
  if (p != nullptr) {
    note_truncated(p);
    if (p->seg_hdr->abi_version == 0 && abi_version != 0) p->seg_hdr->abi_version = uint32_t(abi_version);
    return p;
  }

  wall_clock_init();
  config::Config cfg = config::load({}, [](const std::string& m) { log::warn("%s", m.c_str()); });
  if (!cfg.enable) {
    log::info("SCOUT_ENABLE=0: loaded but recording nothing in this process");
    return nullptr;
  }
  Identity id = identity_from_env(cfg, {}, [](const std::string& m) { log::warn("%s", m.c_str()); });
  shm::SegmentIdentity sid;
  sid.job = id.job;
  sid.host = id.host;
  sid.gpu = id.gpu;
  sid.global_rank = id.global_rank;
  sid.local_rank = id.local_rank;
  sid.world_size = id.world_size;
  sid.cuda_dev = -1;
  sid.plugin_version = kVersion;
  uint32_t max_comms = uint32_t(cfg.max_comms);
  uint32_t slots = round_pow2(cfg.ring_slots);
  std::string err;
  std::vector<shm::TableRequest> tables;
  if (cfg.gemm_capture) {
    tables.push_back(
        {shm::kTableGemmShapes, shm::kGemmTableVersion, shm::gemm_table_bytes(uint32_t(cfg.gemm_max_shapes))});
  }
  const bool want_links = cfg.proxy_timing || !cfg.net_delegate.empty();
  if (want_links) {
    tables.push_back({shm::kTableLinks, shm::kLinkTableVersion, shm::link_table_bytes(uint32_t(cfg.link_max))});
  }
  if (cfg.proxy_timing) {
    tables.push_back(
        {shm::kTableProgress, shm::kProgressTableVersion, shm::progress_table_bytes(shm::kProgressEntries)});
  }
  // The directory is checked without blocking first (a FIFO or file there, common/safe_file.h).
  std::unique_ptr<shm::SegmentWriter> seg;
  if (safe::check_directory(cfg.shm_dir, &err))
    seg = shm::SegmentWriter::create(cfg.shm_dir, sid, max_comms, slots, &err, tables);
  if (!seg) {
    log::warn_once(log::Problem::kSegmentCreate,
                   "cannot create the shared-memory segment (%s); recording nothing in this "
                   "process, the job continues",
                   err.c_str());
    return nullptr;
  }
  p = new (std::nothrow) Process();
  if (p == nullptr) {
    log::warn_once(log::Problem::kNoMemory, "out of memory at init; recording nothing");
    ::unlink(seg->path().c_str());
    return nullptr;
  }
  p->salt = new_salt();
  p->pid = ::getpid();
  p->cfg = cfg;
  p->p2p = cfg.p2p;
  p->seg_hdr = seg->header();
  p->seg_hdr->abi_version = uint32_t(abi_version);
  p->max_comms = max_comms;
  p->seg = std::move(seg);
  p->global_rank = id.global_rank;
  p->host_hash = shm::fnv1a64(id.host);
  if (want_links) {
    uint64_t lbytes = 0;
    void* lt = p->seg->table(shm::kTableLinks, &lbytes);
    if (!p->links.attach(static_cast<shm::LinkTableHeader*>(lt), lbytes)) {
      log::warn("cannot set up the link table; per-link network timing off");
    } else if (cfg.proxy_timing) {
      p->proxy.configure(p->links.header(), cfg.proxy_window_ms * 1000000, cfg.proxy_budget,
                         uint64_t(cfg.proxy_max_steps), cfg.proxy_progress);
      uint64_t pbytes = 0;
      void* pt = p->seg->table(shm::kTableProgress, &pbytes);
      if (!p->progress.attach(static_cast<shm::ProgressTableHeader*>(pt), pbytes))
        log::warn("cannot set up the progress table; stuck-collective tracing off");
    }
    apply_net_memo(p);
  }
  g_gpu_set.store(!id.gpu.empty(), std::memory_order_relaxed);
  p->engine = fp::Engine::create(cfg, log::logger());
  start_gemm_capture(p);
  log::info("recording to %s (ABI v%d, job %s, host %s, global rank %d); config: %s", p->seg->path().c_str(),
            abi_version, id.job.c_str(), id.host.c_str(), id.global_rank, one_line(config::describe(cfg)).c_str());
  g_process.store(p, std::memory_order_release);
  return p;
}

void process_release(Process* p) {
  if (p == nullptr) return;
  g_process.store(nullptr, std::memory_order_release);
  note_truncated(p);
  p->proxy.stop(now_ns());  // NCCL's mask without the window's bits
  if (p->engine != nullptr) fp::Engine::destroy(p->engine);
  stop_gemm_capture(p);
  p->seg_hdr->closed_ns.store(now_ns(), std::memory_order_release);
  for (auto& slot : p->comms) {
    comm_free(slot.load(std::memory_order_relaxed));
    slot.store(nullptr, std::memory_order_relaxed);
  }
  free_blocks(p);
  delete p;           // unmaps the segment; the file stays for the observer
  log::reset_once();  // the cycle is over: the next one reports its problems once again (log.h)
}

void note_net_state(uint32_t state, int net_abi, int delegate_abi, const char* delegate) {
  g_net_memo.state = state;
  g_net_memo.net_abi = net_abi;
  g_net_memo.delegate_abi = delegate_abi;
  size_t n = delegate != nullptr ? std::min(std::strlen(delegate), sizeof(g_net_memo.delegate) - 1) : 0;
  std::memset(g_net_memo.delegate, 0, sizeof(g_net_memo.delegate));
  if (n != 0) std::memcpy(g_net_memo.delegate, delegate, n);
  if (Process* p = g_process.load(std::memory_order_relaxed)) apply_net_memo(p);
}

CommState* comm_from_context_slow(Process* p, void* ctx) {
  if (ctx != nullptr) count_bad_handle(p, nullptr);  // NULL: a disabled communicator
  return nullptr;
}

void count_bad_handle(Process* p, CommState* c) {
  if (c != nullptr) {
    c->hdr->bad_handles.fetch_add(1, std::memory_order_relaxed);
  } else {
    p->seg_hdr->events_bad_handle.fetch_add(1, std::memory_order_relaxed);
  }
  log::warn_once(log::Problem::kBadHandle,
                 "ignored an invalid, stale or foreign handle from NCCL (counted in the segment; "
                 "further ones are counted silently)");
}

void count_unknown(Process* p, uint64_t what) {
  p->seg_hdr->events_unknown.fetch_add(1, std::memory_order_relaxed);
  log::info_once(log::Problem::kUnknownEvent,
                 "ignored an unknown event type or state (0x%llx); further ones are counted "
                 "silently",
                 static_cast<unsigned long long>(what));
}

void set_gpu_identity(const char* gpu, int cuda_dev) {
  Process* p = process();
  if (p == nullptr) return;
  if (gpu != nullptr && gpu[0] != '\0' && !g_gpu_set.exchange(true, std::memory_order_acq_rel)) {
    char* dst = p->seg_hdr->gpu;
    size_t n = std::min(std::strlen(gpu), sizeof(p->seg_hdr->gpu) - 1);
    std::memcpy(dst, gpu, n);
    dst[n] = '\0';
  }
  if (cuda_dev >= 0 && p->seg_hdr->cuda_dev < 0) p->seg_hdr->cuda_dev = cuda_dev;
}

}  // namespace scout::core
