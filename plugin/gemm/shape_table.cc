// The plugin's writer of the GEMM shape table (shape_table.h).
#include "plugin/gemm/shape_table.h"

#include <algorithm>
#include <new>

namespace scout::gemm {

std::unique_ptr<ShapeTable> ShapeTable::attach(shm::GemmTableHeader* hdr, uint64_t bytes) {
  if (hdr == nullptr || bytes < shm::gemm_table_bytes(1)) return nullptr;
  uint64_t cap = (bytes - shm::kGemmTableHeaderBytes) / shm::kGemmEntryBytes;
  if (cap > (1u << 24)) cap = 1u << 24;
  std::unique_ptr<ShapeTable> t(new (std::nothrow) ShapeTable());
  if (!t) return nullptr;
  uint32_t slots = 16;
  while (slots < 2 * cap) slots <<= 1;
  t->index_.reset(new (std::nothrow) uint32_t[slots]());
  if (!t->index_) return nullptr;
  t->index_mask_ = slots - 1;
  t->hdr_ = hdr;
  t->entries_ = reinterpret_cast<shm::GemmShapeEntry*>(reinterpret_cast<char*>(hdr) + shm::kGemmTableHeaderBytes);
  t->capacity_ = uint32_t(cap);
  if (hdr->capacity == 0) {  // fresh table
    hdr->capacity = uint32_t(cap);
    hdr->entry_bytes = shm::kGemmEntryBytes;
  }
  uint32_t n = std::min(hdr->n_entries.load(std::memory_order_acquire), t->capacity_);
  for (uint32_t i = 0; i < n; ++i) {
    const shm::GemmShapeEntry& e = t->entries_[i];
    shm::GemmKey k;
    k.m = e.m, k.n = e.n, k.k = e.k, k.batch = e.batch;
    k.a_type = e.a_type, k.b_type = e.b_type, k.c_type = e.c_type, k.d_type = e.d_type;
    k.compute = e.compute, k.scale_type = e.scale_type, k.layout = e.layout, k.algo = e.algo;
    k.tile_m = e.tile_m, k.tile_n = e.tile_n;
    t->insert_index(hash(k), i);
  }
  return t;
}

uint64_t ShapeTable::hash(const shm::GemmKey& k) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  };
  mix(k.m);
  mix(k.n);
  mix(k.k);
  mix(k.batch);
  mix(uint64_t(k.a_type) | uint64_t(k.b_type) << 8 | uint64_t(k.c_type) << 16 | uint64_t(k.d_type) << 24 |
      uint64_t(k.compute) << 32 | uint64_t(k.scale_type) << 40 | uint64_t(k.layout) << 48);
  mix(uint64_t(uint32_t(k.algo)) | uint64_t(k.tile_m) << 32 | uint64_t(k.tile_n) << 48);
  return h ^ (h >> 29);
}

bool ShapeTable::same(const shm::GemmShapeEntry& e, const shm::GemmKey& k) {
  return e.m == k.m && e.n == k.n && e.k == k.k && e.batch == k.batch && e.a_type == k.a_type && e.b_type == k.b_type &&
         e.c_type == k.c_type && e.d_type == k.d_type && e.compute == k.compute && e.scale_type == k.scale_type &&
         e.layout == k.layout && e.algo == k.algo && e.tile_m == k.tile_m && e.tile_n == k.tile_n;
}

void ShapeTable::insert_index(uint64_t h, uint32_t entry) {
  for (uint32_t i = uint32_t(h) & index_mask_;; i = (i + 1) & index_mask_) {
    if (index_[i] == 0) {
      index_[i] = entry + 1;
      return;
    }
  }
}

void ShapeTable::record(const shm::GemmKey& key) {
  if (busy_.exchange(true, std::memory_order_acquire)) {
    hdr_->dropped_busy.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint64_t h = hash(key);
  uint32_t i = uint32_t(h) & index_mask_;
  for (;; i = (i + 1) & index_mask_) {
    uint32_t slot = index_[i];
    if (slot == 0) break;
    shm::GemmShapeEntry& e = entries_[slot - 1];
    if (same(e, key)) {
      e.count.fetch_add(1, std::memory_order_relaxed);
      hdr_->captured.fetch_add(1, std::memory_order_relaxed);
      busy_.store(false, std::memory_order_release);
      return;
    }
  }
  uint32_t n = hdr_->n_entries.load(std::memory_order_relaxed);
  if (n >= capacity_) {
    hdr_->dropped_full.fetch_add(1, std::memory_order_relaxed);
    busy_.store(false, std::memory_order_release);
    return;
  }
  shm::GemmShapeEntry& e = entries_[n];
  e.m = key.m, e.n = key.n, e.k = key.k, e.batch = key.batch;
  e.a_type = key.a_type, e.b_type = key.b_type, e.c_type = key.c_type, e.d_type = key.d_type;
  e.compute = key.compute, e.scale_type = key.scale_type, e.layout = key.layout, e.algo = key.algo;
  e.tile_m = key.tile_m, e.tile_n = key.tile_n;
  e.count.store(1, std::memory_order_relaxed);
  index_[i] = n + 1;
  hdr_->n_entries.store(n + 1, std::memory_order_release);
  hdr_->captured.fetch_add(1, std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

}  // namespace scout::gemm
