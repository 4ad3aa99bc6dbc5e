// Evidence in words for stragglers and slow links (docs/findings.md, "straggler", "slowlink"):
// the lateness series per communicator, the slow and normal channels, the thresholds in force.
#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli::ev {
namespace {

// A series of milliseconds, oldest first: "0 0 30 30.5".
std::string series(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : " ") + num(x);
  return s.empty() ? "(none)" : s;
}

// A channel {comm, kind, func, bytes_bucket, ranks, median_ms, peer_median_ms, ratio, samples,
// peers}: "tp1 (0x...), ranks 2-3: AllReduce of 4.0MiB takes 5.00ms (median of 10) vs 1.00ms on
// 3 peer channels (5x)".
std::string channel(const obs::EvChannel& c) {
  if (c.source) {
    // A directed network pair (docs/findings.md, slowlink classes net_link / net_endpoint):
    // "net plugin rank 1 -> rank 3: transfers of 64.0KiB take 20.10ms (median of 120) vs 0.12ms on
    // 3 other pairs (167x), 0.004 GB/s".
    std::string s = std::string(*c.source == "net" ? "net plugin" : "ProxyStep") + " rank " +
                    std::to_string(c.src.value_or(-1)) + " -> rank " + std::to_string(c.dst.value_or(-1));
    if (c.comm) s += " in " + comm(c.comm);
    s += ": transfers of " + fmt_bytes(c.bytes_bucket) + " take " + ms(c.median_ms) + " (median of " +
         std::to_string(c.samples) + ")";
    size_t np = c.peers > 0 ? static_cast<size_t>(c.peers) : 0;
    s += " vs " + ms(c.peer_median_ms) + " on " + plural(np, "other pair", "other pairs") + " (" + num(c.ratio) + "x)";
    if (c.gbps) s += ", " + num(*c.gbps) + " GB/s";
    return s;
  }
  std::string s = comm(c.comm) + ", " + ranks(c.ranks) + ": ";
  if (c.kind == "p2p") s += "point-to-point ";
  s += c.func;
  s += " of " + fmt_bytes(c.bytes_bucket);
  s += " takes " + ms(c.median_ms);
  s += " (median of " + std::to_string(c.samples) + ")";
  size_t np = c.peers > 0 ? static_cast<size_t>(c.peers) : 0;
  s += " vs " + ms(c.peer_median_ms) + " on " + plural(np, "peer channel", "peer channels");
  s += " (" + num(c.ratio) + "x)";
  return s;
}

}  // namespace

void straggler(const obs::Finding& f, const obs::StragglerEvidence& e, EvidenceText& t) {
  (void)f;
  t.line(
      "per communicator (lateness = GPU start minus the earliest rank's; the signal is the part the rank "
      "caused itself):");
  for (const auto& c : e.comms) {
    const std::string late = std::to_string(c.late_ops);
    t.line(comm(c.comm) + ", comm rank " + std::to_string(c.comm_rank) + ": late in " + late + " of its last " +
               std::to_string(c.window_ops) + " collectives (" + late + " of the " + std::to_string(c.late_events) +
               " late events), median " + ms(c.median_late_ms) + " late",
           1);
    t.line("lateness signal, oldest first (ms): " + series(c.series_ms), 2);
    t.line("raw lateness, oldest first (ms): " + series(c.lateness_ms), 2);
  }
  const auto& a = e.aggregate;
  t.line("across all its communicators: late in " + std::to_string(a.late_ops) + " of its last " +
         std::to_string(a.window_ops) + " collectives (" + std::to_string(a.late_events) +
         " late events); this window counts the collectives of every communicator, so it reaches back less far "
         "than each communicator's own window above and may count fewer");
  const auto& th = e.thresholds;
  t.line("thresholds: late when at least " + ms(th.min_ms) + " and " + num(th.rel) +
         "x the others' median lateness; a straggler when late in at least " + std::to_string(th.min_late) +
         " collectives and in " + num(th.persist * 100) + "% of the window's late events; window " +
         std::to_string(th.window) + " collectives");
  replay_cause(e, t);
}

void slowlink(const obs::Finding& f, const obs::SlowLinkEvidence& e, EvidenceText& t) {
  (void)f;
  if (e.cls == "endpoint" && e.host) {
    t.line("class: endpoint, host " + *e.host +
           " (every compared inter-host channel of the host is slow, to at least two other hosts; its ranks are "
           "the suspects)");
  } else if (e.cls == "link") {
    t.line("class: link (one slow pair: one end is the suspect, the other the peer)");
  } else if (e.cls == "endpoint") {
    t.line("class: endpoint (every compared channel of the rank is slow)");
  } else if (e.cls == "comm") {
    t.line("class: comm (a slow communicator that no rank or pair explains)");
  } else if (e.cls == "net_link") {
    t.line(
        "class: net_link (a slow network pair from the link tables: the sender is the suspect, the receiver the peer)");
  } else if (e.cls == "net_endpoint") {
    t.line("class: net_endpoint (every network pair of the rank, to at least two peers, is slow)");
  } else {
    t.line("class: " + e.cls);
  }
  t.line("slow channels:");
  for (const auto& c : e.slow) t.line(channel(c), 1);
  if (e.host) {
    t.line(e.normal.empty() ? std::string("normal inter-host channels between other hosts: none")
                            : std::string("normal inter-host channels between other hosts (they clear those hosts):"));
    for (const auto& c : e.normal) t.line(channel(c), 1);
  } else if (e.normal.empty()) {
    t.line("normal channels sharing a suspect: none");
  } else {
    t.line("normal channels sharing a suspect (they clear it as an endpoint):");
    // One above the factor is normal because its excess is under its floor (min_ms, or the
    // peers' noise): say so beside it.
    for (const auto& c : e.normal)
      t.line(channel(c) + (c.ratio >= e.thresholds.factor && c.min_diff_ms
                               ? "; not slow: " + ms(c.median_ms - c.peer_median_ms) + " above its peers, under its " +
                                     ms(*c.min_diff_ms) + " floor"
                               : ""),
             1);
  }
  const auto& th = e.thresholds;
  if (th.window_s) {
    t.line("thresholds: slow at " + num(th.factor) + "x the other pairs' median and at least " + ms(th.min_ms) +
           " more per transfer, over the last " + num(*th.window_s) + " s with at least " +
           std::to_string(th.min_transfers.value_or(0)) + " transfers, in " + std::to_string(th.confirm.value_or(0)) +
           " consecutive passes");
    return;
  }
  const std::string noise =
      th.noise_k ? " (or " + num(*th.noise_k) + " MADs of the peers' times when that is more: a channel's min_diff)"
                 : "";
  t.line("thresholds: slow at " + num(th.factor) + "x the peers' median and at least " + ms(th.min_ms) + " more" +
         noise + ", over the last " + std::to_string(th.window) + " transfers of a channel");
  if (e.replay) {
    std::string rs;
    for (const auto& r : e.replay->recipes) rs += (rs.empty() ? "" : ", ") + r;
    t.line("replay: cycle " + std::to_string(e.replay->cycle) + "'s link sweep found it first: " + ms(e.replay->ms) +
           " for the transfer (" + rs + ") vs " + ms(e.replay->median_ms) + " (median of the cycle's pairs)");
  }
}

}  // namespace scout::cli::ev
