// Evidence in words for stragglers and slow links (docs/findings.md, "straggler", "slowlink"):
// the lateness series per communicator, the slow and normal channels, the thresholds in force.
#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli::ev {
namespace {

// A series of milliseconds, oldest first: "0 0 30 30.5".
std::string series(const nlohmann::json& v) {
  if (!v.is_array()) return text(v);
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + num(x);
  return s.empty() ? "(none)" : s;
}

// A channel {comm, kind, func, bytes_bucket, ranks, median_ms, peer_median_ms, ratio, samples,
// peers}: "tp1 (0x...), ranks 2-3: AllReduce of 4.0MiB takes 5.00ms (median of 10) vs 1.00ms on
// 3 peer channels (5x)".
std::string channel(const nlohmann::json& c) {
  std::string s = comm(at(c, "comm")) + ", " + ranks(at(c, "ranks")) + ": ";
  if (str(at(c, "kind")) == "p2p") s += "point-to-point ";
  s += str(at(c, "func"));
  const auto& b = at(c, "bytes_bucket");
  if (b.is_number_integer()) s += " of " + fmt_bytes(b.get<uint64_t>());
  s += " takes " + ms(at(c, "median_ms"));
  if (c.is_object() && c.contains("samples")) s += " (median of " + text(at(c, "samples")) + ")";
  const auto& peers = at(c, "peers");
  size_t np = peers.is_number_integer() && peers.get<int64_t>() > 0 ? static_cast<size_t>(peers.get<int64_t>()) : 0;
  s += " vs " + ms(at(c, "peer_median_ms")) + " on " + plural(np, "peer channel", "peer channels");
  if (c.is_object() && c.contains("ratio")) s += " (" + num(at(c, "ratio")) + "x)";
  return s;
}

}  // namespace

void straggler(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const auto& comms = t.use("comms");
  t.line("per communicator (lateness = GPU start minus the earliest rank's; the signal is the part the rank "
         "caused itself):");
  for (const auto& c : comms.is_array() ? comms : nlohmann::json::array()) {
    t.line(comm(at(c, "comm")) + ", comm rank " + text(at(c, "comm_rank")) + ": late in " + text(at(c, "late_ops")) +
               " of its last " + text(at(c, "window_ops")) + " collectives (" + text(at(c, "late_ops")) +
               " of the " + text(at(c, "late_events")) + " late events), median " + ms(at(c, "median_late_ms")) +
               " late",
           1);
    t.line("lateness signal, oldest first (ms): " + series(at(c, "series_ms")), 2);
    t.line("raw lateness, oldest first (ms): " + series(at(c, "lateness_ms")), 2);
  }
  const auto& a = t.use("aggregate");
  if (!a.is_null()) {
    t.line("across its communicators: late in " + text(at(a, "late_ops")) + " of " + text(at(a, "window_ops")) +
           " collectives, " + text(at(a, "late_events")) + " late events");
  }
  const auto& th = t.use("thresholds");
  if (!th.is_null()) {
    const auto& persist = at(th, "persist");
    std::string share = persist.is_number() ? num(persist.get<double>() * 100) + "%" : text(persist);
    t.line("thresholds: late when at least " + ms(at(th, "min_ms")) + " and " + num(at(th, "rel")) +
           "x the others' median lateness; a straggler when late in at least " + text(at(th, "min_late")) +
           " collectives and in " + share + " of the window's late events; window " + text(at(th, "window")) +
           " collectives");
  }
}

void slowlink(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const std::string cls = str(t.use("class"));
  if (cls == "link") {
    t.line("class: link (one slow pair: one end is the suspect, the other the peer)");
  } else if (cls == "endpoint") {
    t.line("class: endpoint (every compared channel of the rank is slow)");
  } else if (cls == "comm") {
    t.line("class: comm (a slow communicator that no rank or pair explains)");
  } else {
    t.line("class: " + cls);
  }
  const auto& slow = t.use("slow");
  t.line("slow channels:");
  for (const auto& c : slow.is_array() ? slow : nlohmann::json::array()) t.line(channel(c), 1);
  const auto& normal = t.use("normal");
  if (count(normal) == 0) {
    t.line("normal channels sharing a suspect: none");
  } else {
    t.line("normal channels sharing a suspect (they clear it as an endpoint):");
    for (const auto& c : normal) t.line(channel(c), 1);
  }
  const auto& th = t.use("thresholds");
  if (!th.is_null()) {
    t.line("thresholds: slow at " + num(at(th, "factor")) + "x the peers' median and at least " +
           ms(at(th, "min_ms")) + " more, over the last " + text(at(th, "window")) + " transfers of a channel");
  }
}

}  // namespace scout::cli::ev
