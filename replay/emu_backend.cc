#include "replay/emu_backend.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace scout::replay {
namespace {

uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t k[3] = {a, b, c};
  return XXH64(k, sizeof(k), 0x5eed);
}

uint64_t text_hash(const std::string& s) { return XXH64(s.data(), s.size(), 0); }

// Deterministic value in [-1, 1) for element i of stream `stream`.
float seeded(uint64_t stream, uint64_t i) {
  uint64_t u = mix(stream, i, 0x9E3779B97F4A7C15ull);
  return float(u >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Rounds a float to bfloat16 precision (round to nearest even), returned as the 16-bit pattern.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// 0.99 .. 1.01, fixed per (gpu, recipe, round).
double jitter(const std::string& gpu, const std::string& recipe, int round) {
  uint64_t h = mix(text_hash(gpu), text_hash(recipe), uint64_t(round));
  return 0.99 + 0.02 * double(h % 10001) / 10000.0;
}

void flip_one_bit(void* data, uint64_t bytes, uint64_t where) {
  if (bytes == 0) return;
  auto* b = static_cast<unsigned char*>(data);
  b[where % bytes] ^= 0x10;
}

}  // namespace

EmuDeviceState EmuBackend::device(const std::string& gpu) const {
  return read_emu_device(emu_device_path(dir_, job_, gpu));
}

GpuInfo EmuBackend::describe(const Participant& p) {
  GpuInfo g;
  g.global_rank = p.global_rank;
  g.gpu = p.gpu;
  g.model = "scout-sim emulated GPU";
  g.sm_count = 132;
  g.libs = "emu 1";
  g.free_bytes = int64_t(80) << 30;
  g.ready = is_emulated_gpu(p.gpu);
  if (!g.ready) g.reason = "not an emulated GPU (" + p.gpu + ")";
  return g;
}

Sample EmuBackend::run_gemm(const Recipe& r, const Participant& p, int round) {
  Sample s = sample_of(r, p, round);
  const int eb = gemm_dtype_bytes(r.gemm.dtype);
  if (eb == 0 || r.gemm.m < 1 || r.gemm.n < 1 || r.gemm.k < 1) {
    s.status = SampleStatus::kSkipped;
    s.reason = "unsupported GEMM " + r.id;
    return s;
  }
  const EmuDeviceState dev = device(p.gpu);
  const int64_t m = std::min(r.gemm.m, kEmuDim), n = std::min(r.gemm.n, kEmuDim), k = std::min(r.gemm.k, kEmuDim);
  const bool half = eb == 2;
  // Inputs from the recipe's seed: the same on every GPU.
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = seeded(mix(r.seed, 'A', text_hash(r.id)), i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = seeded(mix(r.seed, 'B', text_hash(r.id)), i);
  if (half) {
    for (float& x : a) x = from_bf16(to_bf16(x));
    for (float& x : b) x = from_bf16(to_bf16(x));
  }
  std::vector<float> d(size_t(m * n), 0.0f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) {
      const float bv = b[size_t(kk + j * k)];
      for (int64_t i = 0; i < m; ++i) d[size_t(i + j * m)] += a[size_t(i + kk * m)] * bv;
    }
  if (half) {
    std::vector<uint16_t> h(d.size());
    for (size_t i = 0; i < d.size(); ++i) h[i] = to_bf16(d[i]);
    if (dev.gemm_flip) flip_one_bit(h.data(), h.size() * 2, text_hash(r.id) * 2 + 1);
    s.fp = fp::fingerprint(h.data(), h.size() * 2, shm::kTypeBfloat16, nullptr);
  } else {
    if (dev.gemm_flip) flip_one_bit(d.data(), d.size() * 4, text_hash(r.id) * 4 + 1);
    s.fp = fp::fingerprint(d.data(), d.size() * 4, shm::kTypeFloat32, nullptr);
  }
  const double flops = 2.0 * double(r.gemm.m) * double(r.gemm.n) * double(r.gemm.k) * double(r.iters);
  const double rate = half ? kEmuGemmFlops16 : kEmuGemmFlops32;
  s.ns = int64_t(flops / rate * 1e9 * dev.slow_factor * jitter(p.gpu, r.id, round));
  return s;
}

Sample EmuBackend::run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) {
  Sample s = sample_of(r, dst, round);
  s.peer = src.global_rank;
  const EmuDeviceState rx = device(dst.gpu);
  const EmuDeviceState tx = device(src.gpu);
  const uint64_t n = std::min<uint64_t>(r.bytes, kEmuBytes) / 4;
  std::vector<float> payload(n);
  for (uint64_t i = 0; i < n; ++i) payload[i] = seeded(mix(r.seed, 'L', uint64_t(src.global_rank)), i);
  s.expected_known = true;
  s.expected_fp = fp::fingerprint(payload.data(), n * 4, shm::kTypeFloat32, nullptr);
  EmuLinkState link;
  auto it = rx.links_in.find(src.gpu);
  if (it != rx.links_in.end()) link = it->second;
  if (link.flip) flip_one_bit(payload.data(), n * 4, uint64_t(round) * 7 + 3);
  s.fp = fp::fingerprint(payload.data(), n * 4, shm::kTypeFloat32, nullptr);
  const double slow = std::max(rx.slow_factor, tx.slow_factor);
  s.ns = int64_t((double(r.bytes) / kEmuLinkBytesPerS * 1e9 * slow + double(link.delay_ns)) *
                 jitter(src.gpu + ">" + dst.gpu, r.id, round));
  return s;
}

std::vector<Sample> EmuBackend::run_coll(const Recipe& r, const std::vector<Participant>& members, int round) {
  std::vector<Sample> out;
  const int nr = int(members.size());
  const CollClass& c = r.coll;
  const bool known =
      c.func == "AllReduce" || c.func == "AllGather" || c.func == "ReduceScatter" || c.func == "Broadcast";
  if (!known || nr < 2) {
    for (const Participant& p : members) {
      Sample s = sample_of(r, p, round);
      s.status = SampleStatus::kSkipped;
      s.reason = !known ? "collective " + c.func + " is not replayed" : "fewer than 2 members";
      out.push_back(s);
    }
    return out;
  }
  // Every member computes its float32 input from the seed and its rank (the emulation moves
  // float32 whatever the recorded datatype; docs/replay.md, "Backends").
  const uint64_t cnt = std::max<uint64_t>(1, std::min<uint64_t>(c.count, kEmuBytes / 4 / uint64_t(nr)));
  std::vector<EmuDeviceState> dev;
  for (const Participant& p : members) dev.push_back(device(p.gpu));
  std::vector<std::vector<float>> good(nr), used(nr);
  for (int i = 0; i < nr; ++i) {
    const uint64_t in_n = c.func == "ReduceScatter" ? cnt * uint64_t(nr) : cnt;
    good[i].resize(in_n);
    for (uint64_t e = 0; e < in_n; ++e) good[i][e] = seeded(mix(r.seed, 'C', uint64_t(members[i].global_rank)), e);
    used[i] = good[i];
    // Bit 20 of one float (byte 2, bit 4): large enough to survive the reduction.
    if (dev[i].gemm_flip) flip_one_bit(used[i].data(), used[i].size() * 4, (text_hash(r.id) % used[i].size()) * 4 + 2);
  }
  auto result = [&](const std::vector<std::vector<float>>& in, int me) {
    std::vector<float> o;
    if (c.func == "AllReduce" || c.func == "ReduceScatter") {
      std::vector<float> sum(in[0].size(), 0.0f);
      for (int i = 0; i < nr; ++i)
        for (size_t e = 0; e < sum.size(); ++e) sum[e] += in[i][e];
      if (c.func == "AllReduce")
        o = sum;
      else
        o.assign(sum.begin() + int64_t(cnt) * me, sum.begin() + int64_t(cnt) * (me + 1));
    } else if (c.func == "AllGather") {
      for (int i = 0; i < nr; ++i) o.insert(o.end(), in[i].begin(), in[i].end());
    } else {
      o = in[0];
    }
    return o;
  };
  double slow = 1.0;
  int64_t delay = 0;
  for (int i = 0; i < nr; ++i) {
    slow = std::max(slow, dev[i].slow_factor);
    auto it = dev[i].links_in.find(members[(i + nr - 1) % nr].gpu);
    if (it != dev[i].links_in.end()) delay = std::max(delay, it->second.delay_ns);
  }
  const double bytes = double(c.count) * double(c.elem_bytes > 0 ? c.elem_bytes : 4);
  for (int i = 0; i < nr; ++i) {
    Sample s = sample_of(r, members[i], round);
    std::vector<float> want = result(good, i), got = result(used, i);
    // A corrupting link from the ring predecessor corrupts what this member receives.
    auto it = dev[i].links_in.find(members[(i + nr - 1) % nr].gpu);
    if (it != dev[i].links_in.end() && it->second.flip) flip_one_bit(got.data(), got.size() * 4, 2);
    s.expected_known = true;
    s.expected_fp = fp::fingerprint(want.data(), want.size() * 4, shm::kTypeFloat32, nullptr);
    s.fp = fp::fingerprint(got.data(), got.size() * 4, shm::kTypeFloat32, nullptr);
    s.ns =
        int64_t((2.0 * bytes / kEmuLinkBytesPerS * 1e9 * slow + double(delay)) * jitter(members[i].gpu, r.id, round));
    out.push_back(s);
  }
  return out;
}

std::string EmuBackend::link_unique_id(const Participant& self, std::string* error) {
  unsigned char id[kUniqueIdBytes];
  std::random_device rd;
  for (unsigned char& b : id) b = static_cast<unsigned char>(rd() & 0xff);
  return bytes_hex(id, sizeof(id));
}

std::vector<Sample> EmuBackend::run_link_end(const Recipe& r, const Participant& self, const Participant& peer,
                                             bool sender, const std::string& uid, int64_t deadline_ns) {
  std::vector<Sample> out;
  if (uid.size() != 2 * size_t(kUniqueIdBytes)) {  // as the CUDA end: the receiver one sample per round
    for (int round = 0; round < (sender ? 1 : r.rounds); ++round) {
      Sample s = sample_of(r, self, round);
      s.peer = sender ? -1 : peer.global_rank;
      s.status = SampleStatus::kFailed;
      s.reason = "bootstrap id of " + std::to_string(uid.size() / 2) + " bytes, not " + std::to_string(kUniqueIdBytes);
      out.push_back(s);
    }
    return out;
  }
  if (sender) return out;
  for (int round = 0; round < r.rounds; ++round) out.push_back(run_link(r, peer, self, round));
  return out;
}

std::vector<Sample> EmuBackend::run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                             const std::vector<int>& local, const std::string& uid,
                                             int64_t deadline_ns) {
  std::vector<Sample> out;
  const bool bad_id = uid.size() != 2 * size_t(kUniqueIdBytes);
  for (int round = 0; round < r.rounds; ++round) {
    std::vector<Sample> all;
    if (!bad_id) all = run_coll(r, members, round);
    for (int g : local) {
      auto it = std::find_if(all.begin(), all.end(), [&](const Sample& s) { return s.global_rank == g; });
      if (it != all.end()) {
        out.push_back(*it);
        continue;
      }
      auto m = std::find_if(members.begin(), members.end(), [&](const Participant& p) { return p.global_rank == g; });
      Sample s = sample_of(r, m != members.end() ? *m : Participant{g, "", -1}, round);
      out.push_back(not_measured(
          s, SampleStatus::kFailed,
          bad_id ? "bootstrap id of " + std::to_string(uid.size() / 2) + " bytes, not " + std::to_string(kUniqueIdBytes)
                 : "rank " + std::to_string(g) + " is not a member of " + r.id));
    }
  }
  return out;
}

}  // namespace scout::replay
