// A digest drill-down's records, grouped by vote and merged on their way to the leader
// (docs/observer-network.md, "Drill-down"), so that what the leader receives follows the answer
// (how many different values the ranks reported), not how many ranks hold the stream.
//
// For each operation found to differ, every rank that holds it casts a vote: its record reduced to
// what the leader's consensus reads (vote_record: identity of the call, metadata, state and the
// receive fingerprint; the per-rank fields such as ring index, send fingerprint and channel counts
// do not travel). Ranks with equal votes form one group: the vote once (with the group's earliest
// enqueue and GPU start and latest GPU end and completion, the times the findings are dated by),
// the members as runs of consecutive comm ranks with evenly spaced global ranks (rank_runs.h), and
// the members' node-ranks and identities (host, pid, GPU) only while the group has at most
// kIdentifiedMembers members: a rank that disagrees with the majority is in a small group, the
// 4,095 ranks that agree need none. Summaries merge (merge()): per (stream, range, seqNumber),
// groups with equal votes add their members; the observers' channel merges them up a binomial tree
// (Channel::reduce_to_leader), so the leader receives one summary of the whole job in
// ceil(log2 N) messages. The leader expands it into one vote per rank (expand()) and judges each
// stream with the Judge, unchanged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/segment_reader.h"
#include "observer/net/drill.h"
#include "observer/net/local_view.h"
#include "observer/net/rank_runs.h"

namespace scout::net {

// Ranks of one operation that cast the same vote.
struct VoteGroup {
  shm::RecordSnapshot rec;    // vote_record() of every member, times: earliest starts, latest ends
  uint32_t count = 0;         // members
  std::vector<RankRun> runs;  // ascending comm rank, disjoint, `count` members in all
  struct Known {
    int node = -1;  // node-rank that sent the member's vote
    RankIdentity id;
  };
  std::vector<Known> identities;  // one per member in run order, or none (count > kIdentifiedMembers)
};

// The votes of one operation (seqNumber) of a stream.
struct OpVotes {
  uint64_t seq = 0;
  std::vector<VoteGroup> groups;
};

// One disagreeing stream's digested range [from, to) and its drilled operations (ascending seq).
struct StreamVotes {
  StreamKeyInfo stream;
  uint64_t from = 0, to = 0;
  std::vector<OpVotes> ops;
};

struct VoteSummary {
  std::vector<StreamVotes> streams;  // ascending (comm_hash, func, from, to)
  bool empty() const { return streams.empty(); }
  // Members over every group of every operation (the votes expand() creates, at most).
  uint64_t members() const;
};

// `r` reduced to the fields a vote carries (the rest zero): key, kind, func, datatypes, counts,
// peer, bytes, state, receive fingerprint (status, value, bytes, version), and the times
// api/enqueue/GPU start/GPU end/complete.
shm::RecordSnapshot vote_record(const shm::RecordSnapshot& r);

// A summary of one rank's vote: comm rank `comm_rank` (global rank `global_rank`, on node-rank
// `node`, identity `id`) reported `rec` for operation `seq` of `stream`, range [from, to).
VoteSummary one_vote(const StreamKeyInfo& stream, uint64_t from, uint64_t to, uint64_t seq, int comm_rank,
                     int global_rank, int node, const RankIdentity& id, const shm::RecordSnapshot& rec);

// Adds `b` to `a`: groups with equal votes of the same (stream, range, seqNumber) add their
// members (runs merged and coalesced, times widened, identities kept while the group stays
// small). A comm rank that both claim in one group is kept once (the first); one claimed by two
// groups is expanded once (the first group's claim).
void merge(VoteSummary& a, VoteSummary b);

// The leader's view: one DigestDrill per stream and range, with one vote per member (its group's
// record; node-rank -1 where the group was too large to carry it), and the identities carried.
std::vector<DigestDrill> expand(const VoteSummary& s, Identities* ids);

// Bytes of a summary (layout in docs/observer-network.md, "Drill-down"). Version byte first.
std::vector<uint8_t> encode_votes(const VoteSummary& s);
// Inverse; false with *error on a malformed, truncated or oversized message (never reads past the
// end; communicators within obs::kMaxCommRanks ranks, members of one operation within its
// communicator's size, members within obs::kMaxRankSlots in all).
bool decode_votes(std::span<const uint8_t> bytes, VoteSummary* out, std::string* error);

// The merge the channel applies at every tree node (Channel::reduce_to_leader): decodes both,
// merges, encodes. A payload that does not decode is dropped (counted in *bad when given, the
// first error in *error); an empty payload is nothing.
std::vector<uint8_t> merge_encoded_votes(std::vector<uint8_t> a, std::vector<uint8_t> b, int* bad = nullptr,
                                         std::string* error = nullptr);

}  // namespace scout::net
