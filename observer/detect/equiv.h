// Equivalent communicators (docs/observer.md#consensus): communicators the user declares
// to carry the same data for corresponding operations, e.g. the sharding groups of different
// data-parallel replicas in HSDP, whose parameter AllGathers must give every replica's rank r the
// same bytes. For each declared group and each key (func, seqNumber) present in every member,
// comm rank r of each member votes with its send and/or receive fingerprint; the members are the
// electorate (strict majority, as everywhere).
//
// Declaration syntax (SCOUT_EQUIV: groups separated by ';'; --equiv FILE: one group per line,
// '#' starts a comment):
//     [send: | recv: | both:] MEMBER MEMBER [MEMBER ...]
// MEMBER is a communicator name (exact; a name shared by several communicators includes all of
// them) or a commHash written 0x<hex>. Members are separated by spaces or commas. Without a
// prefix, both send and receive fingerprints are compared. Example:
//     recv: 0x8d3c0a11f00d0001 0x8d3c0a11f00d0002
//     both: shard-replica0, shard-replica1, shard-replica2
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

struct EquivGroup {
  bool send = true;                  // compare send fingerprints
  bool recv = true;                  // compare receive fingerprints
  std::vector<std::string> members;  // names or "0x..." hashes, as written
  std::string text;                  // the declaration, for evidence
};

// Parses declarations separated by `sep` ('\n' for files, ';' for SCOUT_EQUIV). Empty items and
// comments are skipped. Returns false with a one-line *error naming the bad item (unknown
// prefix, fewer than two members, malformed hash).
bool parse_equiv(const std::string& text, char sep, std::vector<EquivGroup>* out, std::string* error);
// Reads and parses a file (one group per line).
bool load_equiv_file(const std::string& path, std::vector<EquivGroup>* out, std::string* error);

class EquivChecker {
 public:
  explicit EquivChecker(std::vector<EquivGroup> groups) : groups_(std::move(groups)) {}
  bool empty() const { return groups_.empty(); }
  // Keeps the fingerprints of `op` if its communicator belongs to a group, and compares every
  // key now present in all members of that group.
  void observe(const Model& m, const JudgedOp& op, int64_t now_ns, FindingBoard& board);
  static constexpr size_t kHistoryPerComm = 1024;  // keys kept per communicator while waiting

 private:
  struct Fp {
    bool present = false;
    int proc = -1;
    uint8_t send_status = 0, recv_status = 0;
    uint64_t send = 0, recv = 0;
  };
  using Key = std::pair<uint8_t, uint64_t>;  // (func, seq)
  bool matches(const EquivGroup& g, const Comm& c) const;
  void compare(const Model& m, size_t g, const std::vector<const Comm*>& members, const Key& key, int64_t now_ns,
               FindingBoard& board);

  std::vector<EquivGroup> groups_;
  std::map<CommKey, std::map<Key, std::map<int, Fp>>> history_;  // comm -> key -> comm rank -> fp
};

}  // namespace scout::obs
