#include "plugin/record/recorder.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/clock.h"
#include "common/safe_file.h"
#include "plugin/record/call_log_format.h"
#include "scout/version.h"

namespace scout::rec {
namespace {

uint64_t raw(const void* p) { return reinterpret_cast<uintptr_t>(p); }

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace

Recorder* Recorder::open(const std::string& prefix, std::string* error) {
  std::string path = prefix + "." + std::to_string(::getpid()) + ".bin";
  // A FIFO, device or symlink there is refused without blocking (common/safe_file.h).
  std::string err;
  int fd = safe::open_append(path, 0600, &err);
  if (fd < 0) {
    if (error) *error = err;
    return nullptr;
  }
  Recorder* r = new (std::nothrow) Recorder();
  char* buf = static_cast<char*>(std::malloc(kBufBytes));
  if (!r || !buf) {
    ::close(fd);
    delete r;
    std::free(buf);
    if (error) *error = "out of memory";
    return nullptr;
  }
  r->fd_ = fd;
  r->path_ = path;
  r->buf_ = buf;
  r->start_ns_ = shm::wall_ns();
  // Every opening (also an append after a re-dlopen in the same process) starts with a header
  // that carries its own start time; a reader treats a header in mid-file as a new section.
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(h.magic));
  h.version = kFileVersion;
  h.header_bytes = sizeof(FileHeader);
  h.pid = ::getpid();
  h.start_ns = r->start_ns_;
  ::gethostname(h.host, sizeof(h.host) - 1);
  std::strncpy(h.plugin_version, scout::kVersion, sizeof(h.plugin_version) - 1);
  if (!write_all(fd, reinterpret_cast<const char*>(&h), sizeof(h))) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(errno);
    delete r;
    return nullptr;
  }
  return r;
}

Recorder::~Recorder() {
  flush();
  if (fd_ >= 0) ::close(fd_);
  std::free(buf_);
}

void Recorder::flush() {
  if (fd_ < 0 || used_ == 0) return;
  if (!write_all(fd_, buf_, used_)) {
    ::close(fd_);
    fd_ = -1;
  }
  used_ = 0;
}

void Recorder::append(const void* p, size_t n) {
  if (fd_ < 0) return;
  if (used_ + n > kBufBytes) flush();
  if (fd_ < 0 || n > kBufBytes) return;
  std::memcpy(buf_ + used_, p, n);
  used_ += n;
}

uint32_t Recorder::thread_index() {
  uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  for (uint32_t i = 0; i < n_tids_; ++i) {
    if (tids_[i] == tid) return i + 1;
  }
  if (n_tids_ < kMaxThreads) {
    tids_[n_tids_++] = tid;
    return n_tids_;
  }
  return kMaxThreads;  // shared id beyond the table (order still preserved in the file)
}

uint32_t Recorder::string_id(const char* s) {
  if (!s) return 0;
  for (uint32_t i = 0; i < n_strings_; ++i) {
    if (str_ptr_[i] == s) return i + 1;
  }
  // NCCL's strings are static literals (docs/nccl-notes.md §2.5); commName may not be: a new pointer with
  // the same text gets a new id, which is harmless.
  if (n_strings_ >= kMaxStrings) return 0;
  uint32_t id = ++n_strings_;
  str_ptr_[id - 1] = s;
  size_t len = std::min<size_t>(std::strlen(s), 4096);
  StringEntry e{};
  header(&e.h, kEntryString, 0, sizeof(e) + len);
  e.id = id;
  e.len = static_cast<uint16_t>(len);
  append(&e, sizeof(e));
  append(s, len);
  return id;
}

void Recorder::header(void* entry_header, uint8_t kind, int abi, size_t size) {
  EntryHeader h{};
  h.kind = kind;
  h.abi = static_cast<uint8_t>(abi);
  h.size = static_cast<uint16_t>(size);
  h.thread = thread_index();
  h.t_ns = shm::wall_ns() - start_ns_;
  std::memcpy(entry_header, &h, sizeof(h));
}

void Recorder::init(int abi, void* context_out, uint64_t comm_hash, const char* name, int nnodes, int nranks, int rank,
                    int mask_in, int mask_out, int result) {
  uint32_t name_id = string_id(name);
  InitEntry e{};
  header(&e.h, kEntryInit, abi, sizeof(e));
  e.context_out = raw(context_out);
  e.comm_hash = comm_hash;
  e.name = name_id;
  e.nnodes = nnodes;
  e.nranks = nranks;
  e.rank = rank;
  e.mask_in = mask_in;
  e.mask_out = mask_out;
  e.result = result;
  append(&e, sizeof(e));
}

namespace {

// Fills the type-specific fields shared by v5 and v6 (identical offsets, docs/nccl-notes.md §2.5).
template <typename Descr, typename StrFn>
void fill_v5(StartEntry* e, const Descr* d, StrFn&& str) {
  switch (d->type) {
    case abi::kEvGroupApi:
      e->i32[1] = d->groupApi.groupDepth;
      e->u8[2] = d->groupApi.graphCaptured;
      break;
    case abi::kEvCollApi:
      e->str[0] = str(d->collApi.func);
      e->u64[1] = d->collApi.count;
      e->str[1] = str(d->collApi.datatype);
      e->i32[0] = d->collApi.root;
      e->u64[3] = raw(d->collApi.stream);
      e->u8[2] = d->collApi.graphCaptured;
      break;
    case abi::kEvP2pApi:
      e->str[0] = str(d->p2pApi.func);
      e->u64[1] = d->p2pApi.count;
      e->str[1] = str(d->p2pApi.datatype);
      e->u64[3] = raw(d->p2pApi.stream);
      e->u8[2] = d->p2pApi.graphCaptured;
      break;
    case abi::kEvKernelLaunch: e->u64[3] = raw(d->kernelLaunch.stream); break;
    case abi::kEvColl:
      e->u64[0] = d->coll.seqNumber;
      e->str[0] = str(d->coll.func);
      e->ptr[0] = raw(d->coll.sendBuff);
      e->ptr[1] = raw(d->coll.recvBuff);
      e->u64[1] = d->coll.count;
      e->i32[0] = d->coll.root;
      e->str[1] = str(d->coll.datatype);
      e->u8[0] = d->coll.nChannels;
      e->u8[1] = d->coll.nWarps;
      e->str[2] = str(d->coll.algo);
      e->str[3] = str(d->coll.proto);
      e->ptr[2] = raw(d->coll.parentGroup);
      break;
    case abi::kEvP2p:
      e->str[0] = str(d->p2p.func);
      e->ptr[0] = raw(d->p2p.buff);
      e->str[1] = str(d->p2p.datatype);
      e->u64[1] = d->p2p.count;
      e->i32[0] = d->p2p.peer;
      e->u8[0] = d->p2p.nChannels;
      e->ptr[2] = raw(d->p2p.parentGroup);
      break;
    case abi::kEvProxyOp:
      e->i32[0] = d->proxyOp.peer;
      e->i32[1] = d->proxyOp.isSend;
      e->i32[2] = d->proxyOp.pid;
      e->i32[3] = d->proxyOp.channelId;
      e->i32[4] = d->proxyOp.nSteps;
      e->i32[5] = d->proxyOp.chunkSize;
      break;
    case abi::kEvProxyStep: e->i32[0] = d->proxyStep.step; break;
    case abi::kEvKernelCh:
      e->i32[3] = d->kernelCh.channelId;
      e->u64[2] = d->kernelCh.pTimer;
      break;
    case abi::kEvNetPlugin:
      e->u64[0] = static_cast<uint64_t>(d->netPlugin.id);
      e->ptr[0] = raw(d->netPlugin.data);
      break;
    default: break;
  }
}

// A start entry's NCCL arguments (context, the handle the plugin returned, its result) and the
// members every descriptor version has (type, parent, rank).
template <class Descr>
void start_args(StartEntry* e, void* context, void* handle_out, const Descr* d, int result) {
  e->context = raw(context);
  e->handle_out = raw(handle_out);
  e->type = d->type;
  e->parent = raw(d->parentObj);
  e->rank = d->rank;
  e->result = result;
}

}  // namespace

void Recorder::start_v5(int abi, void* context, void* handle_out, const abi::DescrV5* d, int result) {
  StartEntry e{};
  auto str = [this](const char* s) { return string_id(s); };
  fill_v5(&e, d, str);
  header(&e.h, kEntryStart, abi, sizeof(e));
  start_args(&e, context, handle_out, d, result);
  append(&e, sizeof(e));
}

void Recorder::start_v6(void* context, void* handle_out, const abi::DescrV6* d, int result) {
  StartEntry e{};
  auto str = [this](const char* s) { return string_id(s); };
  fill_v5(&e, d, str);
  switch (d->type) {
    case abi::kEvCeColl:
      e.u64[0] = d->ceColl.seqNumber;
      e.str[0] = str(d->ceColl.func);
      e.ptr[0] = raw(d->ceColl.sendBuff);
      e.ptr[1] = raw(d->ceColl.recvBuff);
      e.u64[1] = d->ceColl.count;
      e.i32[0] = d->ceColl.root;
      e.str[1] = str(d->ceColl.datatype);
      e.str[2] = str(d->ceColl.syncStrategy);
      e.u8[2] = d->ceColl.intraBatchSync;
      e.i32[4] = static_cast<int32_t>(d->ceColl.batchSize);
      e.i32[5] = static_cast<int32_t>(d->ceColl.numBatches);
      e.i32[1] = static_cast<int32_t>(d->ceColl.ceSeqNum);
      e.u64[3] = raw(d->ceColl.stream);
      break;
    case abi::kEvCeSync:
      e.u8[2] = d->ceCollSync.isComplete;
      e.i32[0] = d->ceCollSync.nRanks;
      break;
    case abi::kEvCeBatch:
      e.i32[0] = d->ceCollBatch.numOps;
      e.u64[1] = d->ceCollBatch.totalBytes;
      e.u8[2] = d->ceCollBatch.useIntraSync;
      break;
    default: break;
  }
  header(&e.h, kEntryStart, 6, sizeof(e));
  start_args(&e, context, handle_out, d, result);
  append(&e, sizeof(e));
}

void Recorder::start_v4(void* context, void* handle_out, const abi::DescrV4* d, int result) {
  // v4's union members (coll, p2p, proxyOp, proxyStep, kernelCh, netPlugin) have the same
  // offsets as v5's (docs/nccl-notes.md §2.5), and v4 never carries the v5-only types: view it as v5.
  abi::DescrV5 v5{};
  v5.type = d->type;
  v5.parentObj = d->parentObj;
  v5.rank = d->rank;
  std::memcpy(reinterpret_cast<char*>(&v5) + offsetof(abi::DescrV5, coll),
              reinterpret_cast<const char*>(d) + offsetof(abi::DescrV4, coll),
              sizeof(abi::DescrV4) - offsetof(abi::DescrV4, coll));
  start_v5(4, context, handle_out, &v5, result);
}

void Recorder::stop(int abi, void* handle, int result) {
  StopEntry e{};
  header(&e.h, kEntryStop, abi, sizeof(e));
  e.handle = raw(handle);
  e.result = result;
  append(&e, sizeof(e));
}

void Recorder::state(int abi, void* handle, int st, const abi::StateArgs* args, int result) {
  StateEntry e{};
  header(&e.h, kEntryState, abi, sizeof(e));
  e.handle = raw(handle);
  e.state = st;
  e.has_args = args != nullptr;
  if (args) std::memcpy(&e.arg, args, sizeof(e.arg));
  e.result = result;
  append(&e, sizeof(e));
}

void Recorder::finalize(int abi, void* context, int result) {
  FinalizeEntry e{};
  header(&e.h, kEntryFinalize, abi, sizeof(e));
  e.context = raw(context);
  e.result = result;
  append(&e, sizeof(e));
}

}  // namespace scout::rec
