#include "observer/net/agent.h"

#include <time.h>

#include <algorithm>

namespace scout::net {

namespace {
uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace

NetAgent::NetAgent(const AgentOptions& opts, Connect connect, LatestEpoch latest, LocalView& view, Judge& judge,
                   const Clock& clock)
    : opts_(opts),
      connect_(std::move(connect)),
      latest_(std::move(latest)),
      view_(view),
      judge_(judge),
      clock_(clock) {}

NetAgent::~NetAgent() { stop(); }

void NetAgent::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void NetAgent::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (current_) current_->abort();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NetAgent::submit(std::vector<obs::Finding> findings) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& f : findings) outbox_.push_back(std::move(f));
}

NetAgent::Harvest NetAgent::take() {
  std::lock_guard<std::mutex> lock(mu_);
  Harvest h = std::move(harvest_);
  harvest_ = Harvest{};
  return h;
}

NetAgent::Status NetAgent::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  Status s = status_;
  if (current_) s.traffic = current_->traffic();
  return s;
}

bool NetAgent::sleep_for(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_.load(); });
  return !stopping_;
}

void NetAgent::run() {
  uint64_t epoch = 0;
  while (!stopping_) {
    // ---- form a channel: a restarted observer joins the latest epoch
    try {
      epoch = std::max(epoch, latest_());
    } catch (const ChannelError& e) {
      std::lock_guard<std::mutex> lock(mu_);
      status_.last_error = e.what();
    }
    std::unique_ptr<Channel> ch;
    try {
      ch = connect_(epoch, stopping_);
    } catch (const RendezvousTimeout& e) {
      std::lock_guard<std::mutex> lock(mu_);
      status_.failures++;
      status_.last_error = e.what();
    } catch (const RendezvousUnreachable& e) {
      // Nothing of this epoch was written: moving on would only scatter the observers over
      // epochs while the store is away.
      std::lock_guard<std::mutex> lock(mu_);
      status_.failures++;
      status_.last_error = e.what();
    } catch (const ChannelError& e) {
      std::lock_guard<std::mutex> lock(mu_);
      status_.failures++;
      status_.last_error = e.what();
      ++epoch;  // the attempt may have half-written this epoch: the next one is clean
    }
    if (!ch) {
      if (!sleep_for(opts_.retry)) return;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_ = ch.get();
      status_.connected = true;
      status_.peers = ch->size() - 1;
      status_.epoch = epoch;
      status_.formed++;
      status_.since_ns = clock_.now_ns();
      if (stopping_) ch->abort();
    }

    // ---- rounds on this channel, until it fails or the agent stops
    DigestExchange exchange(ch.get(), &judge_, opts_.digest);
    ClockEstimate clock;
    uint64_t n = 0;
    auto next = std::chrono::steady_clock::now();
    try {
      while (!stopping_) {
        if (n % uint64_t(std::max(1, opts_.clock_sync_rounds)) == 0) {
          clock = sync_clocks(*ch, clock_, opts_.clock_samples);
          std::lock_guard<std::mutex> lock(mu_);
          status_.clock = clock;
        }
        std::vector<obs::Finding> out;
        {
          std::lock_guard<std::mutex> lock(mu_);
          out.swap(outbox_);
        }
        RoundResult r;
        const uint64_t cpu0 = thread_cpu_ns();
        const auto wall0 = std::chrono::steady_clock::now();
        try {
          r = exchange.round(view_, clock_.now_ns(), clock, out);
        } catch (...) {
          // Not sent: keep them for the next channel.
          std::lock_guard<std::mutex> lock(mu_);
          outbox_.insert(outbox_.begin(), out.begin(), out.end());
          throw;
        }
        ++n;
        {
          std::lock_guard<std::mutex> lock(mu_);
          status_.rounds++;
          status_.last_round_ns = clock_.now_ns();
          status_.partitions = r.partitions;
          status_.round_cpu_ns += thread_cpu_ns() - cpu0;
          status_.round_wall_ns += uint64_t(
              std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall0).count());
          status_.gathers += r.gathered;
          status_.compared += uint64_t(r.streams_compared);
          status_.disagreeing += uint64_t(r.streams_disagreeing);
          status_.collisions += uint64_t(r.collisions);
          status_.range_mismatches += uint64_t(r.range_mismatches);
          status_.digest_gaps += uint64_t(r.digest_gaps);
          status_.bad_reports += uint64_t(r.bad_reports);
          if (r.bad_reports && status_.last_error.empty()) status_.last_error = r.bad_report_error;
          for (auto& f : r.findings) harvest_.findings.push_back(std::move(f));
          for (auto& f : r.decided) harvest_.decided.push_back(std::move(f));
          for (auto& t : r.timings) harvest_.timings.push_back(std::move(t));
        }
        next += opts_.interval;
        const auto now = std::chrono::steady_clock::now();
        if (next < now) next = now;  // fell behind: do not burst
        if (!sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(next - now))) break;
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      status_.failures++;
      status_.last_error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_ = nullptr;
      status_.connected = false;
      status_.peers = 0;
      status_.since_ns = clock_.now_ns();
    }
    ch.reset();
    if (stopping_) break;
    ++epoch;  // survivors move on; a restarted observer finds this epoch as the latest
    if (!sleep_for(opts_.retry)) break;
  }
}

}  // namespace scout::net
