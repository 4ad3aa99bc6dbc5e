// The plugin's writer of the GEMM shape table in its segment (include/scout/shm_format.h, "GEMM
// shape table"): counts each matmul into its shape class. The index that finds a class is in
// process memory, sized at creation; record() never allocates, never blocks (a second thread
// arriving while one writes is counted in dropped_busy and returns) and never throws.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/gemm_key.h"
#include "scout/shm_format.h"

namespace scout::gemm {

class ShapeTable {
 public:
  // Takes the table at `hdr` of `bytes` bytes (zero-filled, or left by an earlier load cycle of
  // this process: its entries are indexed again). nullptr if the bytes cannot hold a header and
  // one entry, or the index cannot be allocated.
  static std::unique_ptr<ShapeTable> attach(shm::GemmTableHeader* hdr, uint64_t bytes);

  // Counts one matmul of class `key`: a known class's count advances; a new class is appended
  // and published (n_entries, release); a full table counts dropped_full.
  void record(const shm::GemmKey& key);

  shm::GemmTableHeader* header() const { return hdr_; }
  uint32_t capacity() const { return capacity_; }

 private:
  ShapeTable() = default;
  static uint64_t hash(const shm::GemmKey& k);
  static bool same(const shm::GemmShapeEntry& e, const shm::GemmKey& k);
  void insert_index(uint64_t h, uint32_t entry);

  shm::GemmTableHeader* hdr_ = nullptr;
  shm::GemmShapeEntry* entries_ = nullptr;
  uint32_t capacity_ = 0;
  std::unique_ptr<uint32_t[]> index_;  // open addressing: entry + 1, 0 = empty
  uint32_t index_mask_ = 0;
  std::atomic<bool> busy_{false};
};

}  // namespace scout::gemm
