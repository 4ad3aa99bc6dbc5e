// Collective algorithms of the observers' channel, written once over the transport primitives
// (channel.h has the cost model of each).
#include "observer/net/channel.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace scout::net {

namespace {

// Tags: the collective call number in the upper 48 bits, the step inside the call below.
constexpr int kStepBits = 16;
constexpr uint64_t kP2pStep = 0xffff;     // point-to-point messages between collectives
constexpr uint64_t kUnfoldStep = 0xfffe;  // allreduce: result back to a folded endpoint

void reduce_into(uint64_t* acc, const uint64_t* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], in[i]);
      break;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
      break;
    case ReduceOp::kSum:
      for (size_t i = 0; i < n; ++i) acc[i] += in[i];
      break;
    case ReduceOp::kOr:
      for (size_t i = 0; i < n; ++i) acc[i] |= in[i];
      break;
  }
}

}  // namespace

Channel::Channel(int rank, int size) : rank_(rank), size_(size) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw ChannelError("observer network: node-rank " + std::to_string(rank) + " is outside 0.." +
                       std::to_string(size - 1));
  }
  for (int r = 1; r < size; ++r) others_.push_back(r);
}

Traffic Channel::traffic() const {
  std::lock_guard<std::mutex> lock(traffic_mu_);
  return traffic_;
}

uint64_t Channel::next_tag() { return ++calls_ << kStepBits; }

void Channel::count_send(size_t n) {
  std::lock_guard<std::mutex> lock(traffic_mu_);
  traffic_.messages_sent++;
  traffic_.payload_sent += n;
}

void Channel::count_recv(size_t n) {
  std::lock_guard<std::mutex> lock(traffic_mu_);
  traffic_.messages_received++;
  traffic_.payload_received += n;
}

template <typename F>
void Channel::run(const char* what, F&& body) {
  if (failed()) {
    throw ChannelError(std::string("observer network: ") + what + ": channel failed earlier (" + error_ + ")");
  }
  try {
    body();
  } catch (const ChannelError& e) {
    error_ = std::string("observer network: ") + what + " (call " + std::to_string(calls_) + ", node-rank " +
             std::to_string(rank_) + " of " + std::to_string(size_) + "): " + e.what();
    close_after_failure();
    throw ChannelError(error_);
  }
}

uint64_t Channel::checked_payload(uint64_t n, const char* what) {
  if (n > kMaxPayloadBytes) {
    throw ChannelError(std::string(what) + " of " + std::to_string(n) + " bytes beyond the limit of " +
                       std::to_string(kMaxPayloadBytes) + " (malformed or hostile peer)");
  }
  return n;
}

void Channel::send(uint64_t tag, int peer, const void* p, size_t n) {
  SendSpec s{peer, p, n};
  transfer(tag, &s, nullptr);
  count_send(n);
}

void Channel::recv(uint64_t tag, int peer, void* p, size_t n) {
  RecvSpec r;
  r.peer = peer;
  r.data = p;
  r.len = n;
  transfer(tag, nullptr, &r);
  count_recv(n);
}

int Channel::recv_any(uint64_t tag, std::span<const int> from, void* p, size_t n) {
  int src = -1;
  RecvSpec r;
  r.peer = -1;
  r.from_any = from;
  r.data = p;
  r.len = n;
  r.source = &src;
  transfer(tag, nullptr, &r);
  count_recv(n);
  return src;
}

void Channel::sendrecv(uint64_t tag, int peer, const void* sp, size_t sn, void* rp, size_t rn) {
  SendSpec s{peer, sp, sn};
  RecvSpec r;
  r.peer = peer;
  r.data = rp;
  r.len = rn;
  transfer(tag, &s, &r);
  count_send(sn);
  count_recv(rn);
}

// Rabenseifner: fold the N - p extra endpoints into partners, recursive halving reduce-scatter
// and recursive doubling allgather among p = 2^k virtual ranks, unfold. Empty ranges (vectors
// shorter than p) are not sent; both partners know the ranges, so both skip.
void Channel::allreduce(std::span<uint64_t> v, ReduceOp op) {
  run("allreduce", [&] {
    const uint64_t tag = next_tag();
    const int n = size_, r = rank_;
    const size_t len = v.size();
    if (n == 1 || len == 0) return;
    int p = 1;
    while (p * 2 <= n) p *= 2;
    const int extra = n - p;
    std::vector<uint64_t> tmp(len);
    uint64_t step = 0;
    int vr = -1;  // virtual rank in [0, p), -1 while folded away
    if (r < 2 * extra) {
      if (r % 2 == 0) {
        send(tag | step, r + 1, v.data(), len * 8);
      } else {
        recv(tag | step, r - 1, tmp.data(), len * 8);
        reduce_into(v.data(), tmp.data(), len, op);
        vr = r / 2;
      }
    } else {
      vr = r - extra;
    }
    ++step;
    auto real = [extra](int virt) { return virt < extra ? 2 * virt + 1 : virt + extra; };
    if (vr >= 0) {
      size_t lo = 0, hi = len;
      std::vector<std::pair<size_t, size_t>> before;  // range before each halving
      for (int d = p / 2; d >= 1; d /= 2, ++step) {
        const int partner = real(vr ^ d);
        const size_t mid = lo + (hi - lo) / 2;
        const bool lower = (vr & d) == 0;
        const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
        const size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
        const size_t sn = (give_hi - give_lo) * 8, rn = (keep_hi - keep_lo) * 8;
        if (sn > 0 && rn > 0) {
          sendrecv(tag | step, partner, v.data() + give_lo, sn, tmp.data() + keep_lo, rn);
        } else if (sn > 0) {
          send(tag | step, partner, v.data() + give_lo, sn);
        } else if (rn > 0) {
          recv(tag | step, partner, tmp.data() + keep_lo, rn);
        }
        reduce_into(v.data() + keep_lo, tmp.data() + keep_lo, keep_hi - keep_lo, op);
        before.emplace_back(lo, hi);
        lo = keep_lo;
        hi = keep_hi;
      }
      for (int d = 1; d < p; d *= 2, ++step) {
        const int partner = real(vr ^ d);
        const auto [plo, phi] = before.back();
        before.pop_back();
        const size_t olo = (lo == plo) ? hi : plo, ohi = (lo == plo) ? phi : lo;
        const size_t sn = (hi - lo) * 8, rn = (ohi - olo) * 8;
        if (sn > 0 && rn > 0) {
          sendrecv(tag | step, partner, v.data() + lo, sn, v.data() + olo, rn);
        } else if (sn > 0) {
          send(tag | step, partner, v.data() + lo, sn);
        } else if (rn > 0) {
          recv(tag | step, partner, v.data() + olo, rn);
        }
        lo = plo;
        hi = phi;
      }
    }
    if (r < 2 * extra) {  // unfold: a step number the folded endpoint knows without the loops
      if (r % 2 == 0) {
        recv(tag | kUnfoldStep, r + 1, v.data(), len * 8);
      } else {
        send(tag | kUnfoldStep, r - 1, v.data(), len * 8);
      }
    }
  });
}

// Dissemination barrier: in round k every endpoint signals rank + 2^k and waits for rank - 2^k.
void Channel::barrier() {
  run("barrier", [&] {
    const uint64_t tag = next_tag();
    uint64_t step = 0;
    for (int d = 1; d < size_; d <<= 1, ++step) {
      SendSpec s{(rank_ + d) % size_, nullptr, 0};
      RecvSpec r;
      r.peer = (rank_ - d + size_) % size_;
      transfer(tag | step, &s, &r);
      count_send(0);
      count_recv(0);
    }
  });
}

void Channel::broadcast(std::vector<uint8_t>* data) {
  run("broadcast", [&] {
    const uint64_t tag = next_tag();
    if (size_ == 1) return;
    uint64_t bytes = is_leader() ? data->size() : 0;
    // Binomial tree rooted at 0: receive from the parent (rank minus its lowest set bit), then
    // forward to rank + 2^j for every 2^j below that bit.
    int mask = 1;
    while (mask < size_) {
      if (rank_ & mask) {
        const int parent = rank_ - mask;
        recv(tag | 0, parent, &bytes, sizeof(bytes));
        data->assign(checked_payload(bytes, "broadcast payload"), 0);
        if (bytes > 0) recv(tag | 1, parent, data->data(), bytes);
        break;
      }
      mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
      const int child = rank_ + mask;
      if (child >= size_) continue;
      send(tag | 0, child, &bytes, sizeof(bytes));
      if (bytes > 0) send(tag | 1, child, data->data(), bytes);
    }
  });
}

std::vector<std::vector<uint8_t>> Channel::allgather(std::span<const uint8_t> mine) {
  std::vector<uint64_t> sizes(size_, 0);
  sizes[rank_] = mine.size();
  allreduce(sizes, ReduceOp::kSum);
  std::vector<std::vector<uint8_t>> out(size_);
  out[rank_].assign(mine.begin(), mine.end());
  run("allgather", [&] {
    const uint64_t tag = next_tag();
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    for (int s = 0; s + 1 < size_; ++s) {
      const int send_idx = (rank_ - s + size_) % size_;
      const int recv_idx = (rank_ - s - 1 + 2 * size_) % size_;
      out[recv_idx].resize(checked_payload(sizes[recv_idx], "allgather payload"));
      const size_t sn = sizes[send_idx], rn = sizes[recv_idx];
      // Both directions of a step are posted together: the ring never waits on itself.
      SendSpec snd{right, out[send_idx].data(), sn};
      RecvSpec rcv;
      rcv.peer = left;
      rcv.data = out[recv_idx].data();
      rcv.len = rn;
      transfer(tag | s, sn > 0 ? &snd : nullptr, rn > 0 ? &rcv : nullptr);
      if (sn > 0) count_send(sn);
      if (rn > 0) count_recv(rn);
    }
  });
  return out;
}

std::vector<Contribution> Channel::gather_to_leader(std::span<const uint8_t> mine, int contributors) {
  if (contributors < 0) {
    uint64_t c = mine.empty() ? 0 : 1;
    allreduce(std::span<uint64_t>(&c, 1), ReduceOp::kSum);
    contributors = static_cast<int>(c);
  }
  std::vector<Contribution> out;
  run("gather", [&] {
    const uint64_t tag = next_tag();
    if (!is_leader()) {
      if (mine.empty()) return;
      const uint64_t n = mine.size();
      send(tag | 0, 0, &n, sizeof(n));
      send(tag | 1, 0, mine.data(), mine.size());
      return;
    }
    if (!mine.empty()) out.push_back({0, std::vector<uint8_t>(mine.begin(), mine.end())});
    const int expect = contributors - (mine.empty() ? 0 : 1);
    if (expect < 0 || expect > size_ - 1) {
      throw ChannelError("contributor count " + std::to_string(contributors) + " does not fit " +
                         std::to_string(size_) + " endpoints");
    }
    for (int i = 0; i < expect; ++i) {
      uint64_t n = 0;
      const int src = recv_any(tag | 0, others_, &n, sizeof(n));
      Contribution c;
      c.rank = src;
      c.bytes.resize(checked_payload(n, "gathered payload"));
      recv(tag | 1, src, c.bytes.data(), n);
      out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const Contribution& a, const Contribution& b) { return a.rank < b.rank; });
  });
  return out;
}

std::vector<uint8_t> Channel::reduce_to_leader(std::vector<uint8_t> mine, const Merge& merge) {
  run("reduce", [&] {
    const uint64_t tag = next_tag();
    // Binomial tree rooted at 0 (the broadcast's): children are rank + 2^j for every 2^j below the
    // rank's lowest set bit (all powers of two below N for the leader); the parent is rank minus
    // that bit. Children first, smallest subtree first.
    int mask = 1;
    for (; mask < size_ && !(rank_ & mask); mask <<= 1) {
      const int child = rank_ + mask;
      if (child >= size_) continue;
      uint64_t n = 0;
      recv(tag | 0, child, &n, sizeof(n));
      std::vector<uint8_t> theirs(checked_payload(n, "reduced payload"));
      if (n > 0) recv(tag | 1, child, theirs.data(), n);
      mine = merge(std::move(mine), std::move(theirs));
    }
    if (rank_ == 0) return;
    const int parent = rank_ - mask;
    const uint64_t n = mine.size();
    send(tag | 0, parent, &n, sizeof(n));
    if (n > 0) send(tag | 1, parent, mine.data(), n);
    mine.clear();
  });
  return mine;
}

void Channel::exchange(int peer, std::span<const uint8_t> out, std::span<uint8_t> in) {
  run("exchange",
      [&] { sendrecv((calls_ << kStepBits) | kP2pStep, peer, out.data(), out.size(), in.data(), in.size()); });
}

void Channel::send_to(int peer, std::span<const uint8_t> out) {
  run("send", [&] { send((calls_ << kStepBits) | kP2pStep, peer, out.data(), out.size()); });
}

void Channel::recv_from(int peer, std::span<uint8_t> in) {
  run("recv", [&] { recv((calls_ << kStepBits) | kP2pStep, peer, in.data(), in.size()); });
}

}  // namespace scout::net
