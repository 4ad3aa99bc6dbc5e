#include "observer/cluster/cross_node.h"

#include <algorithm>
#include <cstdio>

#include "observer/net/net_config.h"

namespace scout::obs {

CrossNodeOptions cross_node_options(const config::Config& cfg, const ObserverOptions& obs, const std::string& rdzv) {
  CrossNodeOptions o;
  o.agent.interval = std::chrono::milliseconds(cfg.net_interval_ms);
  o.agent.clock_sync_rounds =
      int(std::max<int64_t>(1, cfg.net_clock_sync_s * 1000 / std::max<int64_t>(1, cfg.net_interval_ms)));
  o.agent.clock_samples = int(cfg.net_clock_samples);
  o.agent.digest = net::digest_config(cfg, obs.hang.timeout_ns);
  o.gloo.rdzv = rdzv;
  o.gloo.job = obs.job;
  o.gloo.rank = obs.node_rank;
  o.gloo.size = obs.nodes;
  net::apply_config(cfg, &o.gloo);
  o.view.settle_ns = obs.judge.settle_timeout_ns;
  o.view.retain_ops = uint64_t(cfg.net_max_range_ops) + 256;
  o.view.p2p_pass_ns = obs.straggler.min_ns;
  o.view.hang_timeout_ns = obs.hang.timeout_ns;
  o.view.stall = obs.hang.stall;
  o.hang = obs.hang;
  o.forward_refresh_ns = int64_t(cfg.net_drill_repeat) * cfg.net_interval_ms * 1'000'000;
  return o;
}

CrossNodeStep::CrossNodeStep(const Model& model, std::mutex& pass_mu, const CrossNodeOptions& opt)
    : opt_(opt), view_(model, pass_mu, opt_.view), judge_(opt_.hang) {}

std::vector<Finding> CrossNodeStep::step(Observer::CrossNodeIo& io, net::NetAgent::Harvest h, int64_t offset) {
  view_.capture(io.now_ns, io.hung);
  if (!h.timings.empty()) {
    // Lateness is a difference of two leader-clock times; the earliest arrival goes back to this
    // node's clock for the finding's first_seen.
    for (const net::CrossNodeTiming& t : h.timings) {
      CrossNodeArrivals a;
      a.comm = CommKey{t.comm_hash, t.nranks};
      a.id = OpId{OpClass::kColl, t.func, t.seq, -1, -1};
      a.first_arrival_ns = t.earliest_arrival_ns + offset;
      a.spread_ns = t.latest_arrival_ns - t.earliest_arrival_ns;
      a.min_gap_ns = t.min_gap_ns;
      const Comm* c = io.model.find_comm(a.comm);
      for (const auto& l : t.ranks) {
        const int proc = c && l.comm_rank >= 0 && l.comm_rank < int(c->ranks.size()) ? c->ranks[l.comm_rank].proc : -1;
        a.ranks.push_back({l.comm_rank, proc, l.lateness_ns, l.gap_ns});
      }
      io.straggler.observe_cross_node(a);
    }
  }
  if (leader()) {
    merge_.apply(io.board, std::move(h.findings), std::move(h.decided));
    return {};
  }
  return forward(io.board, io.now_ns);
}

std::vector<Finding> CrossNodeStep::forward(const FindingBoard& board, int64_t now_ns) {
  // What changed on the board since the last pass, and the open findings due for a refresh
  // (oldest send first): never a scan of the whole board.
  std::vector<const Finding*> send;
  for (const Finding* f : board.changed_since(forwarded_)) {
    std::string what = std::string(f->open ? "open " : "closed ") + to_string(f->verdict) + " " + hex64(f->comm_hash) +
                       (f->key ? " " + f->key->func + " " + std::to_string(f->key->seq) : "");
    for (const Suspect& s : f->suspects) what += " " + std::to_string(s.global_rank);
    if (f->peer) what += " peer " + std::to_string(f->peer->global_rank);
    auto [it, added] = sent_.try_emplace(f->dedup_key);
    const bool refresh = f->open && now_ns - it->second.at_ns >= opt_.forward_refresh_ns;
    if (!added && it->second.what == what && !refresh) continue;
    it->second = Sent{std::move(what), now_ns};
    if (f->open) refresh_.emplace_back(now_ns, f->dedup_key);
    send.push_back(f);
  }
  forwarded_ = board.stamp();
  while (!refresh_.empty() && now_ns - refresh_.front().first >= opt_.forward_refresh_ns) {
    auto [at, key] = std::move(refresh_.front());
    refresh_.pop_front();
    auto it = sent_.find(key);
    if (it == sent_.end() || it->second.at_ns != at) continue;  // sent again since
    const Finding* f = board.find(key);
    if (!f || !f->open) continue;  // closed: sent when it closed
    it->second.at_ns = now_ns;
    refresh_.emplace_back(now_ns, key);
    send.push_back(f);
  }
  // In board order, as the leader would have seen them from a scan.
  std::sort(send.begin(), send.end(),
            [&](const Finding* a, const Finding* b) { return board.order(a->dedup_key) < board.order(b->dedup_key); });
  std::vector<Finding> out;
  out.reserve(send.size());
  for (const Finding* f : send) out.push_back(*f);
  return out;
}

CrossNode::CrossNode(Observer& observer, CrossNodeOptions opt, const net::Clock& clock, net::NetAgent::Connect connect,
                     net::NetAgent::LatestEpoch latest)
    : observer_(observer), opt_(std::move(opt)), core_(observer.model(), observer.mutex(), opt_) {
  if (!connect) {
    connect = [g = opt_.gloo](uint64_t epoch, const std::atomic<bool>& stopping) -> std::unique_ptr<net::Channel> {
      net::GlooOptions o = g;
      o.epoch = epoch;
      o.cancel = &stopping;
      return net::GlooChannel::connect(o);
    };
  }
  if (!latest) {
    latest = [rdzv = opt_.gloo.rdzv, job = opt_.gloo.job] { return net::GlooChannel::latest_epoch(rdzv, job); };
  }
  agent_ = std::make_unique<net::NetAgent>(opt_.agent, std::move(connect), std::move(latest), core_.view(),
                                           core_.judge(), clock);
  std::lock_guard<std::mutex> lock(observer_.mutex());
  observer_.set_cross_node_step([this](Observer::CrossNodeIo& io) {
    const net::NetAgent::Status s = agent_->status();
    io.net.present = true;
    io.net.connected = s.connected;
    io.net.peers = s.peers;
    io.net.epoch = s.epoch;
    io.net.rounds = s.rounds;
    io.net.formed = s.formed;
    io.net.failures = s.failures;
    io.net.since_ns = s.since_ns;
    io.net.last_round_ns = s.last_round_ns;
    io.net.rendezvous = opt_.gloo.rdzv;
    io.net.last_error = s.last_error;
    net::NetAgent::Harvest h = agent_->take();
    std::vector<Finding> out = core_.step(io, std::move(h), s.clock.offset_ns);
    if (!out.empty()) agent_->submit(std::move(out));
  });
  installed_ = true;
}

CrossNode::~CrossNode() { stop(); }

void CrossNode::start() { agent_->start(); }

void CrossNode::stop() {
  agent_->stop();
  if (installed_) {
    std::lock_guard<std::mutex> lock(observer_.mutex());
    observer_.set_cross_node_step({});
    installed_ = false;
  }
}

std::string CrossNode::status_line() const {
  const net::NetAgent::Status s = agent_->status();
  char buf[512];
  const double rounds = double(std::max<uint64_t>(1, s.rounds));
  std::snprintf(
      buf, sizeof(buf),
      "network: node-rank %d of %d, %s, epoch %llu, %llu rounds (%llu gathered), %llu failures, clock offset "
      "%.1f us +- %.1f us, sent %llu bytes in %llu messages on this channel, per round %.0f us CPU / %.0f us wall",
      opt_.gloo.rank, opt_.gloo.size, s.connected ? "connected" : "not connected",
      static_cast<unsigned long long>(s.epoch), static_cast<unsigned long long>(s.rounds),
      static_cast<unsigned long long>(s.gathers), static_cast<unsigned long long>(s.failures),
      double(s.clock.offset_ns) / 1e3, double(s.clock.error_ns) / 1e3,
      static_cast<unsigned long long>(s.traffic.wire_sent()), static_cast<unsigned long long>(s.traffic.messages_sent),
      double(s.round_cpu_ns) / rounds / 1e3, double(s.round_wall_ns) / rounds / 1e3);
  std::string out = buf;
  std::snprintf(buf, sizeof(buf),
                ", digests %llu compared / %llu disagreeing / %llu not compared (%llu slot collisions, %llu range "
                "mismatches, %llu not retained)",
                static_cast<unsigned long long>(s.compared), static_cast<unsigned long long>(s.disagreeing),
                static_cast<unsigned long long>(s.collisions + s.range_mismatches + s.digest_gaps),
                static_cast<unsigned long long>(s.collisions), static_cast<unsigned long long>(s.range_mismatches),
                static_cast<unsigned long long>(s.digest_gaps));
  out += buf;
  if (s.bad_reports) out += ", " + std::to_string(s.bad_reports) + " malformed node reports";
  if (!s.last_error.empty()) out += "; last error: " + s.last_error;
  return out;
}

}  // namespace scout::obs
