// Communicator identity as NCCL derives it (docs/nccl-notes.md §3.7): a root communicator's commHash is a
// hash of its 128-byte ncclUniqueId; a communicator made by ncclCommSplit hashes (parent
// commHash, parent's split counter, color). scout-sim follows that scheme with its own hash
// function (XXH64), so the values are the same on every member and differ between children,
// exactly the properties NCCL's hashes have; they are not bit-equal to NCCL's.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace scout::sim {

using UniqueId = std::array<uint8_t, 128>;  // NCCL_UNIQUE_ID_BYTES

// The root unique id of a job: 128 pseudo-random bytes, a pure function of `seed` (rank 0 of a
// real job draws them at random and broadcasts them; every sim rank computes them).
UniqueId make_unique_id(uint64_t seed);

// commHash of a root communicator: XXH64 over the 128 id bytes, seed 0.
uint64_t root_comm_hash(const UniqueId& id);

// commHash of a split child: XXH64 over the 24 bytes {parent_hash, split_count, color} (each
// as a little-endian 64-bit integer), seed 0.
uint64_t split_comm_hash(uint64_t parent_hash, uint64_t split_count, int64_t color);

// "0x%016llx": the form ground truth, RAS and the plugin's docs use.
std::string hash_hex(uint64_t h);

}  // namespace scout::sim
