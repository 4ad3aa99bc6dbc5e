#include "test/support/call_replay.h"

#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "plugin/record/call_log_format.h"
#include "scout/shm_format.h"

namespace scout::testing {
namespace {

using namespace scout::rec;

struct Entry {
  uint8_t kind = 0;
  uint8_t abi = 0;
  uint32_t thread = 0;
  int32_t pid = 0;          // the recorded process (its section's FileHeader::pid)
  std::vector<char> bytes;  // the whole entry
};

bool read_file(const std::string& path, std::vector<char>* data, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot open " + path;
    return false;
  }
  data->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// Splits the file into entries; string entries are resolved into `strings` (per section: a
// mid-file header starts a new section, whose string ids start over).
bool parse(const std::vector<char>& d, std::vector<Entry>* out, std::string* error) {
  size_t pos = 0;
  bool have_header = false;
  int32_t pid = 0;
  while (pos < d.size()) {
    if (d.size() - pos >= sizeof(FileHeader) && std::memcmp(&d[pos], kFileMagic, 8) == 0) {
      FileHeader h;
      std::memcpy(&h, &d[pos], sizeof(h));
      if (h.version != kFileVersion || h.header_bytes != sizeof(FileHeader)) {
        *error = "unsupported recording version " + std::to_string(h.version);
        return false;
      }
      Entry marker;
      marker.kind = 0;  // section start
      pid = h.pid;
      marker.pid = pid;
      out->push_back(marker);
      pos += sizeof(FileHeader);
      have_header = true;
      continue;
    }
    if (!have_header) {
      *error = "not a scout call recording (bad magic)";
      return false;
    }
    if (d.size() - pos < sizeof(EntryHeader)) {
      *error = "truncated entry at byte " + std::to_string(pos);
      return false;
    }
    EntryHeader h;
    std::memcpy(&h, &d[pos], sizeof(h));
    if (h.size < sizeof(EntryHeader) || h.size > d.size() - pos) {
      *error = "bad entry size at byte " + std::to_string(pos);
      return false;
    }
    Entry e;
    e.kind = h.kind;
    e.abi = h.abi;
    e.thread = h.thread;
    e.pid = pid;
    e.bytes.assign(d.begin() + pos, d.begin() + pos + h.size);
    out->push_back(std::move(e));
    pos += h.size;
  }
  return true;
}

template <typename T>
bool as(const Entry& e, T* out) {
  if (e.bytes.size() < sizeof(T)) return false;
  std::memcpy(out, e.bytes.data(), sizeof(T));
  return true;
}

// State of one replay.
class Replayer {
 public:
  Replayer(const sim::LoadedPlugin& p, ReplayStats* s) : plugin_(p), stats_(s) {}

  bool run(const std::vector<Entry>& entries, std::string* error) {
    // First pass: strings and buffer sizes; second: execute.
    prepare_buffers(entries);
    std::vector<size_t> order;
    std::map<uint32_t, std::vector<size_t>> per_thread;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.kind == 0 || e.kind == kEntryString) continue;
      order.push_back(i);
      per_thread[e.thread];
    }
    stats_->threads = static_cast<uint32_t>(per_thread.size());
    // Strings must be resolved in file order before any call that uses them; resolve all up
    // front per section (ids restart at each section header).
    resolve_strings(entries);
    size_t n = order.size();
    std::vector<std::thread> threads;
    std::mutex mu;
    std::condition_variable cv;
    size_t turn = 0;
    for (auto& [tid, unused] : per_thread) {
      uint32_t my = tid;
      threads.emplace_back([&, my] {
        for (;;) {
          std::unique_lock<std::mutex> lk(mu);
          cv.wait(lk, [&] { return turn >= n || entries[order[turn]].thread == my; });
          if (turn >= n) return;
          size_t idx = order[turn];
          lk.unlock();
          execute(entries[idx], idx);
          lk.lock();
          ++turn;
          cv.notify_all();
        }
      });
    }
    for (auto& t : threads) t.join();
    (void)error;
    return true;
  }

 private:
  // Host buffer substituted for a recorded device/host address.
  void* buffer(uint64_t recorded) {
    if (recorded == 0) return nullptr;
    auto it = buffers_.find(recorded);
    return it == buffers_.end() ? nullptr : it->second.get();
  }

  static uint64_t type_size(const char* dt) {
    if (!dt) return 1;
    std::string s = dt;
    if (s.find("64") != std::string::npos) return 8;
    if (s.find("32") != std::string::npos || s == "ncclFloat" || s == "ncclInt") return 4;
    if (s.find("16") != std::string::npos || s == "ncclHalf") return 2;
    return 1;
  }

  void prepare_buffers(const std::vector<Entry>& entries) {
    // Sizes: the largest count * element size * (nranks for gathers/scatters) seen per address.
    // The communicator size is not in the descriptor, so be generous: multiply by the largest
    // nranks of any init in the recording.
    uint64_t max_nranks = 1;
    std::unordered_map<uint64_t, uint64_t> need;
    resolve_strings(entries);
    for (const Entry& e : entries) {
      if (e.kind == kEntryInit) {
        InitEntry ie;
        if (as(e, &ie) && ie.nranks > 0) max_nranks = std::max<uint64_t>(max_nranks, ie.nranks);
      }
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.kind != kEntryStart) continue;
      StartEntry s;
      if (!as(e, &s)) continue;
      if (s.type != abi::kEvColl && s.type != abi::kEvP2p && s.type != abi::kEvCeColl) continue;
      uint64_t bytes = s.u64[1] * type_size(str(i, s.str[1])) * max_nranks;
      for (int k = 0; k < 2; ++k) {
        if (s.ptr[k] != 0) need[s.ptr[k]] = std::max(need[s.ptr[k]], bytes);
      }
    }
    for (auto& [addr, bytes] : need) { buffers_[addr].reset(new char[std::max<uint64_t>(bytes, 1)]()); }
  }

  void resolve_strings(const std::vector<Entry>& entries) {
    if (!section_of_.empty()) return;
    section_of_.resize(entries.size());
    pid_of_.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) pid_of_[i] = entries[i].pid;
    size_t section = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.kind == 0) {
        ++section;
        strings_.emplace_back();
      }
      section_of_[i] = section;
      if (e.kind == kEntryString) {
        StringEntry se;
        if (!as(e, &se) || e.bytes.size() < sizeof(se) + se.len) continue;
        if (strings_.empty()) strings_.emplace_back();
        strings_.back()[se.id] = std::make_unique<std::string>(e.bytes.data() + sizeof(se), se.len);
      }
    }
  }

  const char* str(size_t entry_index, uint32_t id) {
    if (id == 0) return nullptr;
    size_t sec = section_of_.empty() ? 1 : section_of_[entry_index];
    if (sec == 0 || sec > strings_.size()) return nullptr;
    auto& table = strings_[sec - 1];
    auto it = table.find(id);
    return it == table.end() ? nullptr : it->second->c_str();
  }

  // A ProxyStep's parent is a ProxyOp. The plugin's handles are values, not allocations (two
  // ops of one peer and direction, or an op and its step, can return the same value), so the
  // recorded value is looked up among ProxyOp results first.
  void* map_step_parent(uint64_t recorded) {
    auto it = proxy_op_handles_.find(recorded);
    return it != proxy_op_handles_.end() ? it->second : map_handle(recorded);
  }

  void* map_handle(uint64_t recorded) {
    if (recorded == 0) return nullptr;
    auto it = handles_.find(recorded);
    if (it != handles_.end()) return it->second;
    stats_->unmapped++;
    return reinterpret_cast<void*>(recorded);  // foreign (PXN) or never produced: pass raw
  }

  void* map_context(uint64_t recorded) {
    auto it = contexts_.find(recorded);
    return it == contexts_.end() ? reinterpret_cast<void*>(recorded) : it->second;
  }

  template <typename Descr>
  void fill_common(Descr* d, const StartEntry& s, size_t i) {
    switch (s.type) {
      case abi::kEvGroupApi:
        d->groupApi.groupDepth = s.i32[1];
        d->groupApi.graphCaptured = s.u8[2];
        break;
      case abi::kEvCollApi:
        d->collApi.func = str(i, s.str[0]);
        d->collApi.count = s.u64[1];
        d->collApi.datatype = str(i, s.str[1]);
        d->collApi.root = s.i32[0];
        d->collApi.stream = reinterpret_cast<void*>(s.u64[3]);
        d->collApi.graphCaptured = s.u8[2];
        break;
      case abi::kEvP2pApi:
        d->p2pApi.func = str(i, s.str[0]);
        d->p2pApi.count = s.u64[1];
        d->p2pApi.datatype = str(i, s.str[1]);
        d->p2pApi.stream = reinterpret_cast<void*>(s.u64[3]);
        d->p2pApi.graphCaptured = s.u8[2];
        break;
      case abi::kEvKernelLaunch: d->kernelLaunch.stream = reinterpret_cast<void*>(s.u64[3]); break;
      case abi::kEvColl:
        d->coll.seqNumber = s.u64[0];
        d->coll.func = str(i, s.str[0]);
        d->coll.sendBuff = buffer(s.ptr[0]);
        d->coll.recvBuff = buffer(s.ptr[1]);
        d->coll.count = s.u64[1];
        d->coll.root = s.i32[0];
        d->coll.datatype = str(i, s.str[1]);
        d->coll.nChannels = s.u8[0];
        d->coll.nWarps = s.u8[1];
        d->coll.algo = str(i, s.str[2]);
        d->coll.proto = str(i, s.str[3]);
        d->coll.parentGroup = map_handle(s.ptr[2]);
        break;
      case abi::kEvP2p:
        d->p2p.func = str(i, s.str[0]);
        d->p2p.buff = buffer(s.ptr[0]);
        d->p2p.datatype = str(i, s.str[1]);
        d->p2p.count = s.u64[1];
        d->p2p.peer = s.i32[0];
        d->p2p.nChannels = s.u8[0];
        d->p2p.parentGroup = map_handle(s.ptr[2]);
        break;
      case abi::kEvProxyOp:
        d->proxyOp.peer = s.i32[0];
        d->proxyOp.isSend = s.i32[1];
        // The recorded process is this one now; another pid (a PXN op) stays foreign.
        d->proxyOp.pid = i < pid_of_.size() && s.i32[2] == pid_of_[i] ? int32_t(::getpid()) : s.i32[2];
        d->proxyOp.channelId = static_cast<uint8_t>(s.i32[3]);
        d->proxyOp.nSteps = s.i32[4];
        d->proxyOp.chunkSize = s.i32[5];
        break;
      case abi::kEvProxyStep: d->proxyStep.step = s.i32[0]; break;
      case abi::kEvKernelCh:
        d->kernelCh.channelId = static_cast<uint8_t>(s.i32[3]);
        d->kernelCh.pTimer = s.u64[2];
        break;
      case abi::kEvNetPlugin:
        d->netPlugin.id = static_cast<int64_t>(s.u64[0]);
        d->netPlugin.data = reinterpret_cast<void*>(s.ptr[0]);
        break;
      default: break;
    }
  }

  void execute(const Entry& e, size_t i) {
    stats_->entries++;
    switch (e.kind) {
      case kEntryInit: {
        InitEntry ie;
        if (!as(e, &ie)) return;
        stats_->inits++;
        void* ctx = nullptr;
        mask_ = ie.mask_in;
        const char* name = str(i, ie.name);
        if (plugin_.v5) {
          plugin_.v5->init(&ctx, ie.comm_hash, &mask_, name, ie.nnodes, ie.nranks, ie.rank, nullptr);
        } else if (plugin_.v6) {
          plugin_.v6->init(&ctx, ie.comm_hash, &mask_, name, ie.nnodes, ie.nranks, ie.rank, nullptr);
        } else if (plugin_.v4) {
          plugin_.v4->init(&ctx, &mask_, name, ie.comm_hash, ie.nnodes, ie.nranks, ie.rank, nullptr);
        }
        contexts_[ie.context_out] = ctx;
        return;
      }
      case kEntryStart: {
        StartEntry s;
        if (!as(e, &s)) return;
        stats_->starts++;
        void* ctx = map_context(s.context);
        void* handle = nullptr;
        // PXN proxy ops carry a foreign context: pass the recorded value through unchanged.
        if (s.type == abi::kEvProxyOp || s.type == abi::kEvProxyStep || s.type == abi::kEvNetPlugin) {
          if (contexts_.find(s.context) == contexts_.end()) ctx = reinterpret_cast<void*>(s.context);
        }
        if (plugin_.v4) {
          abi::DescrV4 d{};
          d.type = static_cast<uint8_t>(s.type);
          d.parentObj = map_handle(s.parent);
          d.rank = s.rank;
          // v4 shares coll/p2p/proxy/kernelCh offsets with v5 minus parentGroup.
          abi::DescrV5 tmp{};
          tmp.type = s.type;
          fill_common(&tmp, s, i);
          std::memcpy(reinterpret_cast<char*>(&d) + 24, reinterpret_cast<char*>(&tmp) + 24, sizeof(d) - 24);
          plugin_.v4->startEvent(ctx, &handle, &d);
        } else if (plugin_.v5) {
          abi::DescrV5 d{};
          d.type = s.type;
          d.parentObj = s.type == abi::kEvProxyStep ? map_step_parent(s.parent) : map_handle(s.parent);
          d.rank = s.rank;
          fill_common(&d, s, i);
          plugin_.v5->startEvent(ctx, &handle, &d);
        } else if (plugin_.v6) {
          abi::DescrV6 d{};
          d.type = s.type;
          d.parentObj = s.type == abi::kEvProxyStep ? map_step_parent(s.parent) : map_handle(s.parent);
          d.rank = s.rank;
          fill_common(&d, s, i);
          if (s.type == abi::kEvCeColl) {
            d.ceColl.seqNumber = s.u64[0];
            d.ceColl.func = str(i, s.str[0]);
            d.ceColl.sendBuff = buffer(s.ptr[0]);
            d.ceColl.recvBuff = buffer(s.ptr[1]);
            d.ceColl.count = s.u64[1];
            d.ceColl.root = s.i32[0];
            d.ceColl.datatype = str(i, s.str[1]);
            d.ceColl.syncStrategy = str(i, s.str[2]);
            d.ceColl.intraBatchSync = s.u8[2];
            d.ceColl.batchSize = static_cast<uint32_t>(s.i32[4]);
            d.ceColl.numBatches = static_cast<uint32_t>(s.i32[5]);
            d.ceColl.ceSeqNum = static_cast<uint32_t>(s.i32[1]);
            d.ceColl.stream = reinterpret_cast<void*>(s.u64[3]);
          } else if (s.type == abi::kEvCeSync) {
            d.ceCollSync.isComplete = s.u8[2];
            d.ceCollSync.nRanks = s.i32[0];
          } else if (s.type == abi::kEvCeBatch) {
            d.ceCollBatch.numOps = s.i32[0];
            d.ceCollBatch.totalBytes = s.u64[1];
            d.ceCollBatch.useIntraSync = s.u8[2];
          }
          plugin_.v6->startEvent(ctx, &handle, &d);
        }
        if (s.handle_out != 0) {
          handles_[s.handle_out] = handle;
          if (s.type == abi::kEvProxyOp) proxy_op_handles_[s.handle_out] = handle;
        }
        return;
      }
      case kEntryStop: {
        StopEntry s;
        if (!as(e, &s)) return;
        void* h = map_handle(s.handle);
        if (plugin_.v5)
          plugin_.v5->stopEvent(h);
        else if (plugin_.v6)
          plugin_.v6->stopEvent(h);
        else if (plugin_.v4)
          plugin_.v4->stopEvent(h);
        return;
      }
      case kEntryState: {
        StateEntry s;
        if (!as(e, &s)) return;
        void* h = map_handle(s.handle);
        abi::StateArgs args;
        std::memcpy(&args, &s.arg, sizeof(args));
        abi::StateArgs* ap = s.has_args ? &args : nullptr;
        if (plugin_.v5)
          plugin_.v5->recordEventState(h, s.state, ap);
        else if (plugin_.v6)
          plugin_.v6->recordEventState(h, s.state, ap);
        else if (plugin_.v4)
          plugin_.v4->recordEventState(h, s.state, ap);
        return;
      }
      case kEntryFinalize: {
        FinalizeEntry f;
        if (!as(e, &f)) return;
        void* ctx = map_context(f.context);
        if (plugin_.v5)
          plugin_.v5->finalize(ctx);
        else if (plugin_.v6)
          plugin_.v6->finalize(ctx);
        else if (plugin_.v4)
          plugin_.v4->finalize(ctx);
        return;
      }
      default: return;
    }
  }

  const sim::LoadedPlugin& plugin_;
  ReplayStats* stats_;
  std::unordered_map<uint64_t, void*> handles_;
  std::unordered_map<uint64_t, void*> contexts_;
  int mask_ = 0;  // NCCL's process-wide activation mask: the plugin may write it after init
  std::unordered_map<uint64_t, std::unique_ptr<char[]>> buffers_;
  std::vector<std::unordered_map<uint32_t, std::unique_ptr<std::string>>> strings_;
  std::vector<size_t> section_of_;
  std::vector<int32_t> pid_of_;  // recorded process of each entry
  std::unordered_map<uint64_t, void*> proxy_op_handles_;  // recorded ProxyOp handle -> replayed
};

}  // namespace

int recording_abi(const std::string& path, std::string* error) {
  std::vector<char> data;
  if (!read_file(path, &data, error)) return 0;
  std::vector<Entry> entries;
  if (!parse(data, &entries, error)) return 0;
  for (const Entry& e : entries) {
    if (e.kind == kEntryInit) return e.abi;
  }
  *error = "recording has no init entry";
  return 0;
}

bool replay_calls(const std::string& path, const sim::LoadedPlugin& plugin, ReplayStats* stats, std::string* error) {
  std::vector<char> data;
  if (!read_file(path, &data, error)) return false;
  std::vector<Entry> entries;
  if (!parse(data, &entries, error)) return false;
  int abi = 0;
  for (const Entry& e : entries) {
    if (e.kind == kEntryInit) {
      abi = e.abi;
      break;
    }
  }
  if (abi == 0) {
    *error = "recording has no init entry";
    return false;
  }
  if (abi != plugin.version) {
    *error = "recording uses ABI v" + std::to_string(abi) + " but the plugin was loaded as v" +
             std::to_string(plugin.version);
    return false;
  }
  ReplayStats local;
  ReplayStats* s = stats ? stats : &local;
  *s = ReplayStats{};
  s->abi = abi;
  Replayer r(plugin, s);
  return r.run(entries, error);
}

}  // namespace scout::testing
