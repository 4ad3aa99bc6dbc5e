#include "observer/net/clock_sync.h"

#include "common/clock.h"

#include <time.h>

#include <cstring>
#include <limits>

namespace scout::net {

namespace {

int highest_bit(int r) {
  int b = 1;
  while (b * 2 <= r) b *= 2;
  return b;
}

template <size_t N>
std::span<const uint8_t> bytes_of(const int64_t (&a)[N]) {
  return {reinterpret_cast<const uint8_t*>(a), sizeof(a)};
}
template <size_t N>
std::span<uint8_t> bytes_of(int64_t (&a)[N]) {
  return {reinterpret_cast<uint8_t*>(a), sizeof(a)};
}

}  // namespace

int64_t RealtimeClock::now_ns() const { return shm::wall_ns(); }
int64_t MonotonicClock::now_ns() const { return shm::mono_ns(); }

PingSample ping_sample(int64_t t0, int64_t t1, int64_t t2, int64_t t3) {
  PingSample s;
  s.offset_ns = ((t0 - t1) + (t3 - t2)) / 2;
  s.rtt_ns = (t3 - t0) - (t2 - t1);
  return s;
}

ClockEstimate sync_clocks(Channel& ch, const Clock& clock, int samples) {
  if (samples < 1) samples = 1;
  const int n = ch.size(), r = ch.rank();
  ClockEstimate est;
  // Level d: parents are the ranks below d, children the ranks in [d, 2d). A rank is a child
  // once (at d = its highest bit) and a parent at every later level that has a child for it.
  for (int d = 1; d < n; d <<= 1) {
    if (r >= d && r < 2 * d) {
      const int parent = r - d;
      PingSample best{0, std::numeric_limits<int64_t>::max()};
      for (int i = 0; i < samples; ++i) {
        int64_t ping[1] = {clock.now_ns()};
        int64_t pong[2] = {0, 0};
        ch.exchange(parent, bytes_of(ping), bytes_of(pong));  // reply receive posted first
        const int64_t t3 = clock.now_ns();
        const PingSample s = ping_sample(ping[0], pong[0], pong[1], t3);
        if (s.rtt_ns < best.rtt_ns) best = s;
      }
      int64_t up[2] = {0, 0};  // parent's offset and error
      ch.recv_from(parent, bytes_of(up));
      est.parent = parent;
      est.rtt_ns = best.rtt_ns < 0 ? 0 : best.rtt_ns;
      est.offset_ns = best.offset_ns + up[0];
      est.error_ns = (est.rtt_ns + 1) / 2 + up[1];
      est.hops = 0;
      for (int x = r; x > 0; x -= highest_bit(x)) est.hops++;
    } else if (r < d && r + d < n) {
      const int child = r + d;
      for (int i = 0; i < samples; ++i) {
        int64_t ping[1] = {0};
        ch.recv_from(child, bytes_of(ping));
        int64_t pong[2];
        pong[0] = clock.now_ns();
        pong[1] = clock.now_ns();
        ch.send_to(child, bytes_of(pong));
      }
      int64_t down[2] = {est.offset_ns, est.error_ns};
      ch.send_to(child, bytes_of(down));
    }
  }
  est.taken_ns = clock.now_ns();
  return est;
}

}  // namespace scout::net
