#include "observer/net/digest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "observer/net/vote_summary.h"
#include "observer/net/wait_filter.h"
#include "observer/net/wait_summary.h"

namespace scout::net {

namespace {

constexpr uint64_t kNeutral = ~0ull;
constexpr uint64_t kTopBit = 1ull << 63;
constexpr size_t kHeaderWords = 6;
constexpr size_t kStreamWords = 10;
constexpr size_t kTimingWords = 6;
// Header words.
constexpr size_t kConfigMin = 0, kConfigMax = 1, kRoundTime = 2, kHasFindings = 3, kWantWaits = 4, kStalled = 5;
constexpr uint64_t kMaxPartitions = 1ull << 20;
constexpr int kMaxProbes = 8;  // stream slot placement: linear probing bound

// Times travel as unsigned words in an order-preserving encoding (sign bit flipped), so MIN
// and MAX order them correctly even before 1970 or with large negative offsets.
uint64_t enc_time(int64_t t) { return uint64_t(t) ^ kTopBit; }
int64_t dec_time(uint64_t w) { return int64_t(w ^ kTopBit); }

// Hash of a few words; never 0 and never has the top bit (so ~x is never the neutral value and
// every real value sorts below the neutral one).
uint64_t hash_span(std::span<const uint64_t> words, uint64_t seed) {
  return (XXH64(words.data(), words.size() * sizeof(uint64_t), seed) & ~kTopBit) | 1;
}
uint64_t hash_words(std::initializer_list<uint64_t> words, uint64_t seed) {
  return hash_span(std::span<const uint64_t>(words.begin(), words.size()), seed);
}
// For placement (slot, partition): every bit of the hash, so that `mod` a power of two uses
// every slot and partition (the values above are always odd).
uint64_t spread(std::initializer_list<uint64_t> words, uint64_t seed) {
  return XXH64(words.begin(), words.size() * sizeof(uint64_t), seed);
}

}  // namespace

// Words of a stream slot and of a timing slot (digest.h, the vector). A "Min" word holds the
// MIN of what the nodes put; a "Max" word the MIN of the complements, i.e. ~MAX.
// Folds a value into word i of the vector as a MIN, or as a MAX (the MIN of the complement); reads
// the job-wide MIN / MAX after the allreduce.
struct Words {
  std::vector<uint64_t>& v;
  void put_min(size_t i, uint64_t x) { v[i] = std::min(v[i], x); }
  void put_max(size_t i, uint64_t x) { v[i] = std::min(v[i], ~x); }
  uint64_t min(size_t i) const { return v[i]; }
  uint64_t max(size_t i) const { return ~v[i]; }
  bool untouched(size_t i) const { return v[i] == kNeutral; }
};

// One stream slot of the vector.
struct StreamSlot {
  enum Word : size_t {
    kKeyMin,
    kKeyMax,
    kCompletedMin,
    kEnqueuedMax,
    kFromMin,
    kFromMax,
    kToMin,
    kToMax,
    kDigestMin,
    kDigestMax,
    kWordCount
  };
  Words w;
  size_t b;  // first word
  bool empty() const { return w.untouched(b + kKeyMin); }
  void put(uint64_t key, uint64_t completed, uint64_t enqueued) {
    w.put_min(b + kKeyMin, key);
    w.put_max(b + kKeyMax, key);
    w.put_min(b + kCompletedMin, completed);
    w.put_max(b + kEnqueuedMax, enqueued);
  }
  void put_digest(uint64_t from, uint64_t to, uint64_t digest) {
    w.put_min(b + kFromMin, from);
    w.put_max(b + kFromMax, from);
    w.put_min(b + kToMin, to);
    w.put_max(b + kToMax, to);
    w.put_min(b + kDigestMin, digest);
    w.put_max(b + kDigestMax, digest);
  }
  // One stream in the slot (else a collision: void this round).
  bool one_stream() const { return w.min(b + kKeyMin) == w.max(b + kKeyMax); }
  uint64_t completed() const { return w.min(b + kCompletedMin); }  // job-wide watermark
  uint64_t enqueued() const { return w.max(b + kEnqueuedMax); }    // highest enqueued anywhere
  bool digested() const { return !w.untouched(b + kFromMin); }     // some node digested it
  uint64_t from_min() const { return w.min(b + kFromMin); }
  uint64_t to_max() const { return w.max(b + kToMax); }
  // Some node digested the slot and every digesting node covered the same seqNumber range
  // [from, to) (from MIN == from MAX, to MIN == to MAX).
  bool same_range() const {
    return digested() && w.min(b + kFromMin) == w.max(b + kFromMax) && w.min(b + kToMin) == w.max(b + kToMax);
  }
  bool digests_differ() const { return w.min(b + kDigestMin) != w.max(b + kDigestMax); }
};

// One timing slot of the vector (times in the order-preserving encoding, leader clock).
struct TimingSlot {
  enum Word : size_t { kTimingKeyMin, kTimingKeyMax, kArrivalMin, kArrivalMax, kEndMax, kGapMin, kWordCount };
  Words w;
  size_t b;
  void put_key(uint64_t key) {
    w.put_min(b + kTimingKeyMin, key);
    w.put_max(b + kTimingKeyMax, key);
  }
  void put_arrival(uint64_t t) {
    w.put_min(b + kArrivalMin, t);
    w.put_max(b + kArrivalMax, t);
  }
  void put_end(uint64_t t) { w.put_max(b + kEndMax, t); }
  void put_gap(uint64_t ns) { w.put_min(b + kGapMin, ns); }
  // Only `key` was placed here by every node (else a collision: no cross-node view).
  bool holds_only(uint64_t key) const { return w.min(b + kTimingKeyMin) == key && w.max(b + kTimingKeyMax) == key; }
  uint64_t earliest_arrival() const { return w.min(b + kArrivalMin); }
  uint64_t latest_arrival() const { return w.max(b + kArrivalMax); }
  bool has_end() const { return !w.untouched(b + kEndMax); }
  uint64_t latest_end() const { return w.max(b + kEndMax); }
  bool has_gap() const { return !w.untouched(b + kGapMin); }
  uint64_t min_gap() const { return w.min(b + kGapMin); }
};

static_assert(StreamSlot::kWordCount == kStreamWords && TimingSlot::kWordCount == kTimingWords);

namespace {

// Every one of the `expected` local ranks reported the operation, with the same metadata hash
// and receive fingerprint (the digest folds such an operation into one value, and a drill-down
// sends one record for all of them).
bool local_ranks_agree(const std::vector<RankOpView>& ranks, size_t expected) {
  bool agree = !ranks.empty() && ranks.size() == expected;
  for (size_t i = 1; agree && i < ranks.size(); ++i) {
    agree = ranks[i].meta == ranks[0].meta && ranks[i].fp_recv == ranks[0].fp_recv;
  }
  return agree;
}

// The value a node contributes for one operation: the same on every node when all ranks agree.
uint64_t node_value(std::vector<RankOpView>& ranks, size_t expected) {
  std::sort(ranks.begin(), ranks.end(),
            [](const RankOpView& a, const RankOpView& b) { return a.comm_rank < b.comm_rank; });
  if (local_ranks_agree(ranks, expected)) return hash_words({1, ranks[0].meta, ranks[0].fp_recv}, 0);
  std::vector<uint64_t> w = {2};
  for (const RankOpView& r : ranks) {
    w.push_back(uint64_t(uint32_t(r.comm_rank)));
    w.push_back(r.meta);
    w.push_back(r.fp_recv);
  }
  return hash_span(w, 0);
}

}  // namespace

uint64_t DigestExchange::stream_key(uint64_t comm_hash, uint8_t func) { return hash_words({comm_hash, func}, 0x5c07); }

DigestExchange::DigestExchange(Channel* ch, Judge* judge, const DigestConfig& cfg) : ch_(ch), judge_(judge), cfg_(cfg) {
  if (cfg_.stream_slots < 1 || cfg_.timing_slots < 1 || cfg_.timing_ops < 0 || cfg_.max_range_ops < 1 ||
      cfg_.drill_split < 2 || cfg_.max_narrow_parts < cfg_.drill_split || cfg_.wait_buckets < 1) {
    throw std::invalid_argument(
        "observer network: digest slots and range must be positive, the drill-down split at least 2");
  }
  config_key_ = hash_words(
      {7 /* protocol version */, uint64_t(cfg_.stream_slots), uint64_t(cfg_.timing_slots), uint64_t(cfg_.timing_ops),
       cfg_.max_range_ops, uint64_t(cfg_.stall_ns), uint64_t(cfg_.drill_repeat_rounds), uint64_t(cfg_.drill_split),
       uint64_t(cfg_.max_narrow_parts), uint64_t(cfg_.wait_buckets)},
      0xc0f1);
}

StreamSlot DigestExchange::stream_slot(std::vector<uint64_t>& v, size_t slot) const {
  return StreamSlot{Words{v}, kHeaderWords + kStreamWords * slot};
}

TimingSlot DigestExchange::timing_slot(std::vector<uint64_t>& v, size_t slot) const {
  return TimingSlot{Words{v}, kHeaderWords + kStreamWords * size_t(cfg_.stream_slots) + kTimingWords * slot};
}

void DigestExchange::request_hang_drills(LocalView& local, const std::vector<StreamView>& streams,
                                         int64_t leader_now_ns, bool* want_waits, bool* stalled_here) {
  // Hang drill-downs: a stream found stalled last round, or a communicator this node's own
  // hang detector holds hung (asked again every drill_repeat_rounds while it lasts).
  *want_waits = false;
  *stalled_here = false;
  // One wait snapshot covers every stall of the job: within drill_repeat_rounds of the last one
  // (next_waits_drill_, known to every node from the header), a new request waits (stays pending).
  const bool may = round_ >= next_waits_drill_;
  for (const StreamView& s : streams) {
    auto it = state_.find(stream_key(s.comm_hash, s.func));
    if (it == state_.end()) continue;
    *stalled_here |= it->second.stalled;
    if (it->second.stall_drill_pending && may) {
      *want_waits = true;
      it->second.stall_drill_pending = false;
    }
  }
  if (local.locally_stalled()) {
    *stalled_here = true;
    if (round_ >= next_local_drill_ && may) {
      *want_waits = true;
      next_local_drill_ = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
    }
  }
  // A communicator with ranks on other nodes past its stall threshold: one drill-down per stall
  // episode (docs/observer-network.md, "Hangs across nodes").
  const LocalView::Stalls st = local.stalls();
  *stalled_here |= st.now;
  if (st.episodes > stall_episodes_) {
    stall_episodes_ = st.episodes;
    stall_drill_pending_ = true;
  }
  if (stall_drill_pending_ && may) {
    *want_waits = true;
    stall_drill_pending_ = false;
  }
  // The leader: once more when a communicator passes the largest of the nodes' thresholds (the
  // drill-down above came at the smallest), at once.
  if (ch_->is_leader() && judge_) {
    const int64_t due = judge_->waits_due_ns();
    if (due > 0 && due != due_asked_ && leader_now_ns >= due) {
      *want_waits = true;
      due_asked_ = due;
    }
    // And when a communicator passes the hang timeout: in a large job a stream is compared only
    // every P rounds, so no stream stall asks then, and a stall named earlier would never become
    // the hang. Within the repeat window like any stall (it waits, pending, for its end).
    const int64_t hang_due = judge_->hang_due_ns();
    if (hang_due > 0 && hang_due != hang_asked_ && leader_now_ns >= hang_due && may) {
      *want_waits = true;
      hang_asked_ = hang_due;
    }
  }
}

void DigestExchange::contribute_streams(LocalView& local, const std::vector<StreamView>& streams,
                                        const ClockEstimate& clock, std::vector<uint64_t>& v,
                                        std::vector<Placed>* placed, std::vector<TimingSample>* samples,
                                        RoundResult* res) {
  const size_t K = size_t(cfg_.stream_slots), T = size_t(cfg_.timing_slots);
  placed->reserve(streams.size());
  std::vector<RankOpView> ranks;
  std::vector<uint64_t> values;
  std::vector<std::pair<uint64_t, std::vector<RankOpView>>> tail;  // (seq, ranks) sampled for timing
  for (const StreamView& s : streams) {
    const uint64_t key = stream_key(s.comm_hash, s.func);
    if (partitions_ > 1 && spread({key}, 0x9a27) % partitions_ != round_ % partitions_) continue;
    // Linear probing over the slots this node already filled: nodes with the same streams
    // place them identically (no collision at all); nodes with different sets may not, which
    // shows as two keys in one slot (void, retried) and is never taken for agreement.
    size_t slot = spread({key, round_}, 0x510b) % K;
    int probes = 0;
    while (!stream_slot(v, slot).empty() && probes < kMaxProbes) {
      slot = (slot + 1) % K;
      ++probes;
    }
    StreamState& st = state_[key];  // a new stream starts at seqNumber 0 (see settle_streams)
    Placed p{&s, &st, slot, false, false, 0, 0, {}};
    StreamSlot ss = stream_slot(v, p.slot);
    ss.put(key, s.completed, s.enqueued);
    if (st.have_w && st.w > st.from) {
      const uint64_t to = st.w, from = to - std::min(to - st.from, cfg_.max_range_ops);
      values.clear();
      tail.clear();
      // The last timing_ops operations of the range are also sampled for cross-node arrival:
      // their per-rank detail is kept from this one read.
      const uint64_t timing_from = to - std::min<uint64_t>(to - from, uint64_t(cfg_.timing_ops));
      bool retained = true;
      for (uint64_t seq = from; seq < to && retained; ++seq) {
        ranks.clear();
        retained = local.op(s.comm_hash, s.func, seq, &ranks);
        if (!retained) break;
        values.push_back(node_value(ranks, s.ranks.size()));
        if (seq >= timing_from) tail.emplace_back(seq, ranks);
      }
      if (retained) {
        ss.put_digest(from, to, hash_span(values, 0xd16e));
        p.digested = true;
        p.from = from;
        p.to = to;
        p.values = values;  // for narrowing, should the range disagree
        for (const auto& [seq, op_ranks] : tail) {
          TimingSample ts{0, hash_words({s.comm_hash, s.func, seq}, 0x71e5), s.comm_hash, s.func, seq, s.nranks, {}};
          ts.slot = spread({ts.key, round_}, 0x2c4d) % T;
          TimingSlot tslot = timing_slot(v, ts.slot);
          for (const RankOpView& r : op_ranks) {
            if (r.arrival_ns == 0) continue;
            const int64_t a = clock.to_leader(r.arrival_ns);
            ts.arrivals.push_back({r.comm_rank, r.global_rank, a, r.gap_ns});
            tslot.put_arrival(enc_time(a));
            if (r.end_ns != 0) tslot.put_end(enc_time(clock.to_leader(r.end_ns)));
            if (r.gap_ns >= 0) tslot.put_gap(uint64_t(r.gap_ns));
          }
          if (ts.arrivals.empty()) continue;
          tslot.put_key(ts.key);
          samples->push_back(std::move(ts));
        }
      } else {
        res->digest_gaps++;
      }
    }
    placed->push_back(p);
  }
  res->streams_placed = static_cast<int>(placed->size());
}

void DigestExchange::settle_streams(std::vector<uint64_t>& v, std::vector<Placed>& placed, RoundResult* res) {
  for (Placed& p : placed) {
    const StreamSlot ss = stream_slot(v, p.slot);
    if (!ss.one_stream()) {
      res->collisions++;
      continue;
    }
    StreamState& st = *p.state;
    const uint64_t completed = ss.completed(), enqueued = ss.enqueued();
    bool undrilled = false;  // digests differ, drill-down put off (drill_repeat_rounds)
    if (p.digested && !ss.same_range()) {
      res->range_mismatches++;
    } else if (ss.same_range()) {
      if (p.digested) res->streams_compared++;
      if (ss.digests_differ()) {
        if (p.digested) res->streams_disagreeing++;
        // The range every node narrows (narrow()), also one that did not digest it this round
        // (it saw the stream a round later than the others, or no longer retains all of it):
        // the leader needs every rank's vote for a strict majority.
        p.from = ss.from_min();
        p.to = ss.to_max();
        // A lasting failure (every operation of a rank corrupted) is drilled again only every
        // drill_repeat_rounds: the leader is spared a drill-down per round. The range of a
        // disagreement not drilled now is not given up: it stays the start of the next digest
        // (below), so the next drill-down covers every operation since the last one, and a second
        // corruption soon after a first is judged too. It is drilled early when the range reaches
        // half of max_range_ops, before its oldest operations would leave the digest. Whether it
        // is drilled is agreed in narrow() (any node due drills it everywhere).
        p.due = round_ >= st.next_digest_drill || p.to - p.from >= cfg_.max_range_ops / 2;
        undrilled = !p.due;
      }
    }
    // The next digest covers what became complete everywhere since the previous watermark. A
    // stream starts at seqNumber 0 on every node (its first digest covers the operations completed
    // before the observers saw it, capped to the newest max_range_ops). A node that saw the stream
    // later than the others proposes a range from 0 while they propose [previous w, w): the ranges
    // differ, nothing is compared, and every node restarts at the smallest proposed start, known to
    // all from the vector, so the next range covers the skipped operations for everyone.
    // A disagreement whose drill-down was put off keeps its start, so the operations of the
    // range stay in the next digest (which therefore still disagrees) until they are drilled.
    // Every node decides this from the same vector; a node that decided otherwise proposes
    // another range, and the range mismatch restarts everyone at the smallest start.
    if (ss.digested() && !ss.same_range()) {
      st.from = ss.from_min();
    } else if (undrilled) {
      st.from = ss.from_min();
    } else if (st.have_w) {
      st.from = st.w;
    }
    st.w = std::max(completed, st.have_w ? st.w : 0);
    st.have_w = true;
    if (completed != st.last_completed) {
      st.last_completed = completed;
      st.changed_at = res->round_time_ns;
      st.stalled = false;
    } else if (enqueued > completed && res->round_time_ns - st.changed_at >= cfg_.stall_ns) {
      res->stalls.push_back({p.view->comm_hash, p.view->func, completed, enqueued, st.changed_at});
      if (!st.stalled || round_ >= st.next_stall_drill) {
        st.stall_drill_pending = true;
        st.next_stall_drill = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
      }
      st.stalled = true;
    }
  }
}

void DigestExchange::read_timings(std::vector<uint64_t>& v, const std::vector<TimingSample>& samples,
                                  RoundResult* res) const {
  for (const TimingSample& ts : samples) {
    const TimingSlot tslot = timing_slot(v, ts.slot);
    if (!tslot.holds_only(ts.key)) continue;  // collision: no cross-node view
    CrossNodeTiming t;
    t.comm_hash = ts.comm_hash;
    t.func = ts.func;
    t.nranks = ts.nranks;
    t.seq = ts.seq;
    t.earliest_arrival_ns = dec_time(tslot.earliest_arrival());
    t.latest_arrival_ns = dec_time(tslot.latest_arrival());
    t.latest_end_ns = tslot.has_end() ? dec_time(tslot.latest_end()) : 0;
    t.min_gap_ns = tslot.has_gap() ? int64_t(tslot.min_gap()) : -1;
    for (CrossNodeTiming::Local l : ts.arrivals) {
      l.lateness_ns -= t.earliest_arrival_ns;
      t.ranks.push_back(l);
    }
    res->timings.push_back(std::move(t));
  }
}

uint64_t DigestExchange::value_of(LocalView& local, Placed& p, uint64_t seq) {
  // A range longer than any digest covers (only a malformed or hostile vector proposes one): not
  // retained here, nothing is read or allocated for it.
  if (p.to - p.from > 2 * cfg_.max_range_ops) return 0;
  if (p.values.size() != p.to - p.from) {
    // Not digested here this round: read the range once (0: not retained).
    p.values.assign(p.to - p.from, 0);
    std::vector<RankOpView> ranks;
    for (uint64_t q = p.from; q < p.to; ++q) {
      ranks.clear();
      if (local.op(p.view->comm_hash, p.view->func, q, &ranks))
        p.values[q - p.from] = node_value(ranks, p.view->ranks.size());
    }
  }
  return p.values[seq - p.from];
}

std::vector<DigestExchange::Drill> DigestExchange::narrow(LocalView& local, std::vector<uint64_t>& v,
                                                          std::vector<Placed>& placed, RoundResult* res,
                                                          bool* any_drill) {
  // The disagreeing slots, in slot order: the same list on every node (read from the vector).
  struct Narrowed {
    size_t slot;
    Placed* mine = nullptr;                            // this node's stream in the slot, if it holds it
    std::vector<std::pair<uint64_t, uint64_t>> cands;  // ranges [from, to) still to split
    std::vector<uint64_t> leaves;                      // operations found to differ
    bool wanted = true;
  };
  std::vector<Narrowed> ns;
  for (size_t slot = 0; slot < size_t(cfg_.stream_slots); ++slot) {
    const StreamSlot ss = stream_slot(v, slot);
    if (ss.empty() || !ss.one_stream() || !ss.same_range() || !ss.digests_differ()) continue;
    Narrowed n{slot, nullptr, {{ss.from_min(), ss.to_max()}}, {}, true};
    for (Placed& p : placed) {
      if (p.slot == slot) n.mine = &p;
    }
    ns.push_back(std::move(n));
  }
  if (ns.empty()) return {};
  const uint64_t split = uint64_t(cfg_.drill_split);
  auto parts_of = [&](const std::pair<uint64_t, uint64_t>& c) { return std::min(split, c.second - c.first); };
  auto part = [&](const std::pair<uint64_t, uint64_t>& c, uint64_t j) {
    const uint64_t len = c.second - c.first, n = parts_of(c);
    return std::make_pair(c.first + j * len / n, c.first + (j + 1) * len / n);
  };
  std::vector<uint64_t> w, values;
  for (bool first = true;; first = false) {
    // Layout (every node computes the same): per narrowed stream still open, a "drill wanted"
    // word (first sub-round only), then per candidate range one MIN and one MAX word per part.
    size_t words = 0;
    bool open = false;
    for (const Narrowed& n : ns) {
      if (!n.wanted || n.cands.empty()) continue;
      open = true;
      words += first ? 1 : 0;
      for (const auto& c : n.cands) words += 2 * parts_of(c);
    }
    if (!open) break;
    w.assign(words, kNeutral);
    Words ww{w};
    size_t at = 0;
    for (Narrowed& n : ns) {
      if (!n.wanted || n.cands.empty()) continue;
      if (first) {
        // A lasting failure (every operation of a rank corrupted) is drilled again only every
        // drill_repeat_rounds: its finding exists and is kept up to date, the leader is spared.
        if (n.mine && n.mine->due) ww.put_max(at, 1);
        ++at;
      }
      for (const auto& c : n.cands) {
        for (uint64_t j = 0; j < parts_of(c); ++j, at += 2) {
          if (!n.mine) continue;
          const auto [a, b] = part(c, j);
          values.clear();
          for (uint64_t q = a; q < b; ++q) {
            const uint64_t x = value_of(local, *n.mine, q);
            if (x == 0) break;  // not retained here: no digest of this part
            values.push_back(x);
          }
          if (values.size() != b - a) continue;
          const uint64_t d = hash_span(values, 0xd16e);
          ww.put_min(at, d);
          ww.put_max(at + 1, d);
        }
      }
    }
    ch_->allreduce(w, ReduceOp::kMin);
    res->narrowing_rounds++;
    at = 0;
    for (Narrowed& n : ns) {
      if (!n.wanted || n.cands.empty()) continue;
      if (first) {
        n.wanted = ww.max(at++) != 0;
        if (n.mine && n.wanted) {
          n.mine->state->next_digest_drill = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
          // Drilled now although not due here (another node was): the range is covered, so the
          // next digest starts after it as on the nodes that were due (settle_streams kept it).
          if (!n.mine->due) n.mine->state->from = n.mine->to;
        }
      }
      std::vector<std::pair<uint64_t, uint64_t>> next;
      for (const auto& c : n.cands) {
        for (uint64_t j = 0; j < parts_of(c); ++j, at += 2) {
          if (!n.wanted || ww.untouched(at) || ww.min(at) == ww.max(at + 1)) continue;  // nobody, or all agree
          const auto pr = part(c, j);
          if (pr.second - pr.first == 1) {
            n.leaves.push_back(pr.first);
          } else {
            next.push_back(pr);
          }
        }
      }
      n.cands = std::move(next);
    }
    // Bound on a sub-round's size: the first max_narrow_parts parts (slot order, then seqNumber
    // order) go on; the operations of the others are not drilled this time (counted).
    uint64_t parts = 0;
    for (Narrowed& n : ns) {
      for (size_t i = 0; i < n.cands.size(); ++i) {
        parts += parts_of(n.cands[i]);
        if (parts <= uint64_t(cfg_.max_narrow_parts)) continue;
        for (size_t k = i; k < n.cands.size(); ++k) res->ops_not_drilled += n.cands[k].second - n.cands[k].first;
        n.cands.resize(i);
        break;
      }
    }
  }
  std::vector<Drill> out;
  for (Narrowed& n : ns) {
    *any_drill |= n.wanted && !n.leaves.empty();  // the same on every node: the votes are gathered
    if (!n.mine || !n.wanted || n.leaves.empty()) continue;
    res->ops_drilled += int(n.leaves.size());
    out.push_back({n.mine, std::move(n.leaves)});
  }
  return out;
}

void DigestExchange::update_partitions(size_t occupied) {
  // Partitions: the streams in this round's slots, summed over a whole
  // cycle of P rounds (each stream takes part once per cycle), estimates the job's stream count;
  // at the end of a cycle P becomes the power of two that keeps about K/4 streams per round
  // (shrinking only when half of P would do). Every node computes the same from the same
  // vectors, so participation stays consistent. Overload within a cycle only costs collisions
  // (void slots, retried), never a wrong comparison.
  const size_t K = size_t(cfg_.stream_slots);
  const double k = double(K);
  // Probing gives every stream of a round its own slot, so occupancy counts them, up to K.
  const double est = occupied >= K ? 4.0 * k : double(occupied);
  cycle_streams_ += est;
  if (++cycle_rounds_ >= partitions_) {
    const uint64_t want = std::max<uint64_t>(1, uint64_t(std::ceil(cycle_streams_ / std::max(1.0, k / 4.0))));
    if (want > partitions_ || want * 2 <= partitions_) { partitions_ = std::min(kMaxPartitions, std::bit_ceil(want)); }
    cycle_streams_ = 0;
    cycle_rounds_ = 0;
  }
}

NodeReport DigestExchange::node_report(const ClockEstimate& clock, const std::vector<obs::Finding>& node_findings) {
  NodeReport rep;
  if (ch_->is_leader()) return rep;
  for (obs::Finding f : node_findings) {
    if (f.first_seen_ns) f.first_seen_ns = clock.to_leader(f.first_seen_ns);
    if (f.last_seen_ns) f.last_seen_ns = clock.to_leader(f.last_seen_ns);
    rep.findings.push_back(std::move(f));
  }
  return rep;
}

VoteSummary DigestExchange::node_votes(LocalView& local, const ClockEstimate& clock, const std::vector<Drill>& drills) {
  VoteSummary votes;
  std::vector<RankOpView> ranks;
  for (const Drill& dr : drills) {
    const Placed* p = dr.placed;
    const StreamView& s = *p->view;
    const StreamKeyInfo key{s.comm_hash, s.func, s.nranks, s.comm_name};
    std::map<int, RankIdentity> ids;  // the local ranks of the stream
    for (const RankProgressView& r : s.ranks) ids.emplace(r.global_rank, local.identity(r.global_rank));
    for (uint64_t seq : dr.seqs) {
      ranks.clear();
      local.op(s.comm_hash, s.func, seq, &ranks);
      for (RankOpView& r : ranks) {
        shift_times(&r.rec, clock.offset_ns);
        auto id = ids.find(r.global_rank);
        merge(votes, one_vote(key, p->from, p->to, seq, r.comm_rank, r.global_rank, ch_->rank(),
                              id != ids.end() ? id->second : local.identity(r.global_rank), r.rec));
      }
    }
  }
  return votes;
}

void DigestExchange::gather_votes(LocalView& local, const ClockEstimate& clock, const std::vector<Drill>& drills,
                                  RoundResult* res) {
  const VoteSummary mine = node_votes(local, clock, drills);
  int bad = 0;
  std::string first;
  const std::vector<uint8_t> all = ch_->reduce_to_leader(
      mine.empty() ? std::vector<uint8_t>{} : encode_votes(mine), [&](std::vector<uint8_t> a, std::vector<uint8_t> b) {
        return merge_encoded_votes(std::move(a), std::move(b), &bad, &first);
      });
  res->gathered = true;
  if (!ch_->is_leader()) return;
  if (bad > 0) {
    if (res->bad_reports == 0) res->bad_report_error = "vote summary: " + first;
    res->bad_reports += bad;
  }
  VoteSummary job;
  std::string why;
  if (all.empty() || !decode_votes(all, &job, &why) || !judge_) return;
  Identities ids;
  for (const DigestDrill& d : expand(job, &ids)) {
    for (obs::Finding& f : judge_->judge_digest(d, ids, res->round_time_ns)) res->decided.push_back(std::move(f));
  }
}

WaitSnapshot DigestExchange::narrowed_waits(LocalView& local) {
  WaitSnapshot w = local.wait_snapshot();
  std::vector<uint64_t> buckets(size_t(cfg_.wait_buckets), 0);
  mark_waited(w, &buckets);
  ch_->allreduce(buckets, ReduceOp::kOr);
  keep_waited(buckets, &w);
  return w;
}

void DigestExchange::gather_waits(LocalView& local, const ClockEstimate& clock, RoundResult* res) {
  WaitSnapshot w = narrowed_waits(local);
  shift_times(&w, clock.offset_ns);
  const WaitSummary mine = summarize(w);
  int bad = 0;
  std::string first;
  const std::vector<uint8_t> all =
      ch_->reduce_to_leader(mine.empty() ? std::vector<uint8_t>{} : encode_summary(mine),
                            [&](std::vector<uint8_t> a, std::vector<uint8_t> b) {
                              return merge_encoded(std::move(a), std::move(b), &bad, &first);
                            });
  if (!ch_->is_leader()) return;
  if (bad > 0) {
    if (res->bad_reports == 0) res->bad_report_error = "wait summary: " + first;
    res->bad_reports += bad;
  }
  WaitSummary job;
  std::string why;
  if (all.empty() || !decode_summary(all, &job, &why) || job.empty() || !judge_) return;
  res->waits_members = job.members();
  for (obs::Finding& f : judge_->judge_waits(job, res->round_time_ns)) res->decided.push_back(std::move(f));
}

void DigestExchange::exchange_reports(const NodeReport& rep, RoundResult* res) {
  const std::vector<uint8_t> bytes = rep.findings.empty() ? std::vector<uint8_t>{} : encode_report(rep);
  std::vector<Contribution> got = ch_->gather_to_leader(bytes);
  res->gathered = true;
  if (!ch_->is_leader()) return;
  LeaderInbox in = collect_reports(got);
  res->bad_reports += in.bad_reports;
  if (res->bad_report_error.empty()) res->bad_report_error = in.first_error;
  res->findings = std::move(in.findings);
}

RoundResult DigestExchange::round(LocalView& local, int64_t now_ns, const ClockEstimate& clock,
                                  const std::vector<obs::Finding>& node_findings) {
  RoundResult res;
  res.round = round_;
  std::vector<uint64_t> v(cfg_.words(), kNeutral);
  Words words{v};
  const std::vector<StreamView> streams = local.streams();

  // ---- what this node puts in: the header, then its streams that take part this round
  bool want_waits = false, stalled_here = false;
  request_hang_drills(local, streams, clock.to_leader(now_ns), &want_waits, &stalled_here);
  words.put_min(kConfigMin, config_key_);
  words.put_max(kConfigMax, config_key_);
  words.put_max(kRoundTime, enc_time(clock.to_leader(now_ns)));
  if (!ch_->is_leader() && !node_findings.empty()) words.put_max(kHasFindings, 1);
  if (want_waits) words.put_max(kWantWaits, 1);
  if (stalled_here) words.put_max(kStalled, 1);
  std::vector<Placed> placed;
  std::vector<TimingSample> samples;
  contribute_streams(local, streams, clock, v, &placed, &samples, &res);

  ch_->allreduce(v, ReduceOp::kMin);

  // ---- what everyone learns
  if (words.min(kConfigMin) != config_key_ || words.max(kConfigMax) != config_key_) {
    throw std::runtime_error(
        "observer network: observers run different digest settings (stream/timing slots, "
        "timing ops, range, stall time): give every observer the same SCOUT_NET_* values");
  }
  res.round_time_ns = dec_time(words.max(kRoundTime));
  const bool any_findings = words.max(kHasFindings) != 0;
  const bool waits_wanted = words.max(kWantWaits) != 0;
  if (waits_wanted) next_waits_drill_ = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
  res.stalled_anywhere = words.max(kStalled) != 0;
  bool any_disagreement = false;
  size_t occupied = 0;
  for (size_t slot = 0; slot < size_t(cfg_.stream_slots); ++slot) {
    const StreamSlot ss = stream_slot(v, slot);
    if (ss.empty()) continue;
    ++occupied;
    if (ss.one_stream() && ss.same_range() && ss.digests_differ()) any_disagreement = true;
  }
  settle_streams(v, placed, &res);
  read_timings(v, samples, &res);
  update_partitions(occupied);
  res.partitions = partitions_;
  // Disagreeing ranges are narrowed to the operations that differ (sub-rounds of bounded size,
  // every node), and only those travel to the leader.
  bool any_drill = false;
  const std::vector<Drill> drills =
      any_disagreement ? narrow(local, v, placed, &res, &any_drill) : std::vector<Drill>{};

  // ---- drill-down and findings to the leader
  res.waits_gathered = waits_wanted;
  if (any_findings) exchange_reports(node_report(clock, node_findings), &res);
  if (any_drill) gather_votes(local, clock, drills, &res);
  if (waits_wanted) {
    gather_waits(local, clock, &res);
    res.gathered = true;
  }
  if (ch_->is_leader() && judge_ && !res.stalled_anywhere) {
    for (obs::Finding& f : judge_->all_clear(res.round_time_ns)) res.decided.push_back(std::move(f));
  }
  ++round_;
  return res;
}

}  // namespace scout::net
