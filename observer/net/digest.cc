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

namespace scout::net {

namespace {

constexpr uint64_t kNeutral = ~0ull;
constexpr uint64_t kTopBit = 1ull << 63;
constexpr size_t kHeaderWords = 6;
constexpr size_t kStreamWords = 10;
constexpr size_t kTimingWords = 6;
// Header words.
constexpr size_t kConfigMin = 0, kConfigMax = 1, kRoundTime = 2, kHasFindings = 3, kWantWaits = 4,
                 kStalled = 5;
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

// A stream slot's range words: some node digested the slot and every digesting node covered the
// same seqNumber range [from, to) (from MIN == from MAX, to MIN == to MAX).
bool same_range(const std::vector<uint64_t>& v, size_t b) {
  return v[b + 4] != kNeutral && v[b + 4] == ~v[b + 5] && v[b + 6] == ~v[b + 7];
}

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

uint64_t DigestExchange::stream_key(uint64_t comm_hash, uint8_t func) {
  return hash_words({comm_hash, func}, 0x5c07);
}

DigestExchange::DigestExchange(Channel* ch, Judge* judge, const DigestConfig& cfg)
    : ch_(ch), judge_(judge), cfg_(cfg) {
  if (cfg_.stream_slots < 1 || cfg_.timing_slots < 1 || cfg_.timing_ops < 0 || cfg_.max_range_ops < 1) {
    throw std::invalid_argument("observer network: digest slots and range must be positive");
  }
  config_key_ = hash_words({2 /* protocol version */, uint64_t(cfg_.stream_slots),
                            uint64_t(cfg_.timing_slots), uint64_t(cfg_.timing_ops),
                            cfg_.max_range_ops, uint64_t(cfg_.stall_ns),
                            uint64_t(cfg_.drill_repeat_rounds)},
                           0xc0f1);
}

RoundResult DigestExchange::round(LocalView& local, int64_t now_ns, const ClockEstimate& clock,
                                  const std::vector<obs::Finding>& node_findings) {
  RoundResult res;
  res.round = round_;
  const size_t K = size_t(cfg_.stream_slots), T = size_t(cfg_.timing_slots);
  const size_t stream0 = kHeaderWords, timing0 = kHeaderWords + kStreamWords * K;
  std::vector<uint64_t> v(cfg_.words(), kNeutral);
  auto put_min = [&](size_t i, uint64_t x) { v[i] = std::min(v[i], x); };
  auto put_max = [&](size_t i, uint64_t x) { v[i] = std::min(v[i], ~x); };

  const std::vector<StreamView> streams = local.streams();

  // Hang drill-downs: a stream found stalled last round, or a communicator this node's own
  // hang detector holds hung (asked again every drill_repeat_rounds while it lasts).
  bool want_waits = false, stalled_here = false;
  for (const StreamView& s : streams) {
    auto it = state_.find(stream_key(s.comm_hash, s.func));
    if (it == state_.end()) continue;
    stalled_here |= it->second.stalled;
    if (it->second.stall_drill_pending) want_waits = true;
    it->second.stall_drill_pending = false;
  }
  if (local.locally_stalled()) {
    stalled_here = true;
    if (round_ >= next_local_drill_) {
      want_waits = true;
      next_local_drill_ = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
    }
  }

  put_min(kConfigMin, config_key_);
  put_max(kConfigMax, config_key_);
  put_max(kRoundTime, enc_time(clock.to_leader(now_ns)));
  if (!ch_->is_leader() && !node_findings.empty()) put_max(kHasFindings, 1);
  if (want_waits) put_max(kWantWaits, 1);
  if (stalled_here) put_max(kStalled, 1);

  // ---- contributions of the local streams that take part this round
  struct TimingSample {
    size_t slot;
    uint64_t key;
    uint64_t comm_hash;
    uint8_t func;
    uint64_t seq;
    int nranks;
    std::vector<CrossNodeTiming::Local> arrivals;  // lateness_ns holds the arrival (leader clock)
  };
  std::vector<Placed> placed;
  std::vector<TimingSample> samples;
  placed.reserve(streams.size());
  std::vector<RankOpView> ranks;
  std::vector<uint64_t> values;
  std::vector<std::pair<uint64_t, std::vector<RankOpView>>> tail;  // (seq, ranks) sampled for timing
  for (const StreamView& s : streams) {
    const uint64_t key = stream_key(s.comm_hash, s.func);
    if (partitions_ > 1 && hash_words({key}, 0x9a27) % partitions_ != round_ % partitions_) continue;
    // Linear probing over the slots this node already filled: nodes with the same streams
    // place them identically (no collision at all); nodes with different sets may not, which
    // shows as two keys in one slot (void, retried) and is never taken for agreement.
    size_t slot = hash_words({key, round_}, 0x510b) % K;
    int probes = 0;
    while (v[stream0 + kStreamWords * slot] != kNeutral && probes < kMaxProbes) {
      slot = (slot + 1) % K;
      ++probes;
    }
    StreamState& st = state_[key];  // a new stream starts at seqNumber 0 (see the update below)
    Placed p{&s, &st, slot};
    const size_t b = stream0 + kStreamWords * p.slot;
    put_min(b + 0, key);
    put_max(b + 1, key);
    put_min(b + 2, s.completed);
    put_max(b + 3, s.enqueued);
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
        const uint64_t digest = hash_span(values, 0xd16e);
        put_min(b + 4, from);
        put_max(b + 5, from);
        put_min(b + 6, to);
        put_max(b + 7, to);
        put_min(b + 8, digest);
        put_max(b + 9, digest);
        p.digested = true;
        p.from = from;
        p.to = to;
        for (const auto& [seq, op_ranks] : tail) {
          TimingSample ts{0, hash_words({s.comm_hash, s.func, seq}, 0x71e5), s.comm_hash, s.func, seq, s.nranks, {}};
          ts.slot = hash_words({ts.key, round_}, 0x2c4d) % T;
          const size_t tb = timing0 + kTimingWords * ts.slot;
          for (const RankOpView& r : op_ranks) {
            if (r.arrival_ns == 0) continue;
            const int64_t a = clock.to_leader(r.arrival_ns);
            ts.arrivals.push_back({r.comm_rank, r.global_rank, a, r.gap_ns});
            put_min(tb + 2, enc_time(a));
            put_max(tb + 3, enc_time(a));
            if (r.end_ns != 0) put_max(tb + 4, enc_time(clock.to_leader(r.end_ns)));
            if (r.gap_ns >= 0) put_min(tb + 5, uint64_t(r.gap_ns));
          }
          if (ts.arrivals.empty()) continue;
          put_min(tb + 0, ts.key);
          put_max(tb + 1, ts.key);
          samples.push_back(std::move(ts));
        }
      } else {
        res.digest_gaps++;
      }
    }
    placed.push_back(p);
  }
  res.streams_placed = static_cast<int>(placed.size());

  ch_->allreduce(v, ReduceOp::kMin);

  // ---- what everyone learns
  if (v[kConfigMin] != config_key_ || ~v[kConfigMax] != config_key_) {
    throw std::runtime_error(
        "observer network: observers run different digest settings (stream/timing slots, "
        "timing ops, range, stall time): give every observer the same SCOUT_NET_* values");
  }
  res.round_time_ns = dec_time(~v[kRoundTime]);
  const bool any_findings = ~v[kHasFindings] != 0;
  const bool waits_wanted = ~v[kWantWaits] != 0;
  res.stalled_anywhere = ~v[kStalled] != 0;
  bool any_disagreement = false;
  size_t occupied = 0;
  for (size_t slot = 0; slot < K; ++slot) {
    const size_t b = stream0 + kStreamWords * slot;
    if (v[b] == kNeutral) continue;
    ++occupied;
    if (v[b] != ~v[b + 1] || !same_range(v, b)) continue;
    if (v[b + 8] != ~v[b + 9]) any_disagreement = true;
  }

  std::vector<const Placed*> drills;
  for (Placed& p : placed) {
    const size_t b = stream0 + kStreamWords * p.slot;
    if (v[b] != ~v[b + 1]) {
      res.collisions++;
      continue;
    }
    StreamState& st = *p.state;
    const uint64_t completed = v[b + 2], enqueued = ~v[b + 3];
    if (p.digested && !same_range(v, b)) {
      res.range_mismatches++;
    } else if (same_range(v, b)) {
      if (p.digested) res.streams_compared++;
      if (v[b + 8] != ~v[b + 9]) {
        if (p.digested) res.streams_disagreeing++;
        // Every node holding the stream sends its records of the range, also one that did not
        // digest it this round (it saw the stream a round later than the others, or no longer
        // retains all of it): the leader needs every rank's vote for a strict majority.
        p.from = v[b + 4];
        p.to = ~v[b + 7];
        // A lasting failure (every operation of a rank corrupted) is drilled again only every
        // drill_repeat_rounds: its finding exists and is kept up to date, the leader is spared.
        if (round_ >= st.next_digest_drill) {
          drills.push_back(&p);
          st.next_digest_drill = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
        }
      }
    }
    // The next digest covers what became complete everywhere since the previous watermark. A
    // stream starts at seqNumber 0 on every node (its first digest covers the operations completed
    // before the observers saw it, capped to the newest max_range_ops). A node that saw the stream
    // later than the others proposes a range from 0 while they propose [previous w, w): the ranges
    // differ, nothing is compared, and every node restarts at the smallest proposed start, known to
    // all from the vector, so the next range covers the skipped operations for everyone.
    if (v[b + 4] != kNeutral && !same_range(v, b)) {
      st.from = v[b + 4];
    } else if (st.have_w) {
      st.from = st.w;
    }
    st.w = std::max(completed, st.have_w ? st.w : 0);
    st.have_w = true;
    if (completed != st.last_completed) {
      st.last_completed = completed;
      st.changed_at = res.round_time_ns;
      st.stalled = false;
    } else if (enqueued > completed && res.round_time_ns - st.changed_at >= cfg_.stall_ns) {
      res.stalls.push_back({p.view->comm_hash, p.view->func, completed, enqueued, st.changed_at});
      if (!st.stalled || round_ >= st.next_stall_drill) {
        st.stall_drill_pending = true;
        st.next_stall_drill = round_ + uint64_t(std::max(1, cfg_.drill_repeat_rounds));
      }
      st.stalled = true;
    }
  }

  for (const TimingSample& ts : samples) {
    const size_t tb = timing0 + kTimingWords * ts.slot;
    if (v[tb] != ts.key || ~v[tb + 1] != ts.key) continue;  // collision: no cross-node view
    CrossNodeTiming t;
    t.comm_hash = ts.comm_hash;
    t.func = ts.func;
    t.nranks = ts.nranks;
    t.seq = ts.seq;
    t.earliest_arrival_ns = dec_time(v[tb + 2]);
    t.latest_arrival_ns = dec_time(~v[tb + 3]);
    t.latest_end_ns = v[tb + 4] == kNeutral ? 0 : dec_time(~v[tb + 4]);
    t.min_gap_ns = v[tb + 5] == kNeutral ? -1 : int64_t(v[tb + 5]);
    for (CrossNodeTiming::Local l : ts.arrivals) {
      l.lateness_ns -= t.earliest_arrival_ns;
      t.ranks.push_back(l);
    }
    res.timings.push_back(std::move(t));
  }

  // Partitions: the streams in this round's slots, summed over a whole
  // cycle of P rounds (each stream takes part once per cycle), estimates the job's stream count;
  // at the end of a cycle P becomes the power of two that keeps about K/4 streams per round
  // (shrinking only when half of P would do). Every node computes the same from the same
  // vectors, so participation stays consistent. Overload within a cycle only costs collisions
  // (void slots, retried), never a wrong comparison.
  {
    const double k = double(K);
    // Probing gives every stream of a round its own slot, so occupancy counts them, up to K.
    const double est = occupied >= K ? 4.0 * k : double(occupied);
    cycle_streams_ += est;
    if (++cycle_rounds_ >= partitions_) {
      const uint64_t want = std::max<uint64_t>(
          1, uint64_t(std::ceil(cycle_streams_ / std::max(1.0, k / 4.0))));
      if (want > partitions_ || want * 2 <= partitions_) {
        partitions_ = std::min(kMaxPartitions, std::bit_ceil(want));
      }
      cycle_streams_ = 0;
      cycle_rounds_ = 0;
    }
  }
  res.partitions = partitions_;

  // ---- drill-down and findings to the leader
  if (any_findings || any_disagreement || waits_wanted) {
    NodeReport rep;
    std::set<int> mentioned;
    if (!ch_->is_leader()) {
      for (obs::Finding f : node_findings) {
        if (f.first_seen_ns) f.first_seen_ns = clock.to_leader(f.first_seen_ns);
        if (f.last_seen_ns) f.last_seen_ns = clock.to_leader(f.last_seen_ns);
        rep.findings.push_back(std::move(f));
      }
    }
    for (const Placed* p : drills) {
      const StreamView& s = *p->view;
      NodeStreamOps d;
      d.stream = {s.comm_hash, s.func, s.nranks, s.comm_name};
      d.from = p->from;
      d.to = p->to;
      for (const RankProgressView& r : s.ranks) {
        d.ranks.emplace_back(r.comm_rank, r.global_rank);
        mentioned.insert(r.global_rank);
      }
      std::sort(d.ranks.begin(), d.ranks.end());
      for (uint64_t seq = p->from; seq < p->to; ++seq) {
        ranks.clear();
        NodeOpValues op;
        op.seq = seq;
        local.op(s.comm_hash, s.func, seq, &ranks);
        for (RankOpView& r : ranks) shift_times(&r.rec, clock.offset_ns);
        if (local_ranks_agree(ranks, d.ranks.size())) {
          op.agree = true;
          op.rec = ranks[0].rec;
        } else {
          for (const auto& [cr, gr] : d.ranks) {
            NodeOpValues::Value val;
            for (const RankOpView& r : ranks) {
              if (r.comm_rank == cr) val = {true, r.rec};
            }
            op.per_rank.push_back(val);
          }
        }
        d.ops.push_back(std::move(op));
      }
      rep.digests.push_back(std::move(d));
    }
    if (waits_wanted) {
      rep.waits = local.wait_snapshot();
      shift_times(&rep.waits, clock.offset_ns);
    }
    for (int gr : mentioned) rep.identities.push_back(local.identity(gr));
    const bool empty = rep.findings.empty() && rep.digests.empty() && rep.waits.empty();
    const std::vector<uint8_t> bytes = empty ? std::vector<uint8_t>{} : encode_report(rep);
    std::vector<Contribution> got = ch_->gather_to_leader(bytes);
    res.gathered = true;

    if (ch_->is_leader()) {
      LeaderInbox in = collect_reports(got);
      res.bad_reports = in.bad_reports;
      res.bad_report_error = in.first_error;
      res.findings = std::move(in.findings);
      if (judge_) {
        for (const DigestDrill& d : in.digests) {
          for (obs::Finding& f : judge_->judge_digest(d, in.identities, res.round_time_ns)) res.decided.push_back(std::move(f));
        }
        if (!in.waits.empty()) {
          for (obs::Finding& f : judge_->judge_waits(in.waits, res.round_time_ns)) res.decided.push_back(std::move(f));
        }
      }
    }
  }
  if (ch_->is_leader() && judge_ && !res.stalled_anywhere) {
    for (obs::Finding& f : judge_->all_clear(res.round_time_ns)) res.decided.push_back(std::move(f));
  }
  ++round_;
  return res;
}

}  // namespace scout::net
