// Slow network links from the link tables of the segments (docs/observer.md, "Network links";
// the table: docs/record-format.md, "Link table"): per-connection timing of the net plugin half
// and ProxyStep timing of NCCL's own transports, turned into directed per-pair transfer times.
//
// Each pass takes every process's send entries (a send's duration is the link's own time once it
// had the data; a receive's also holds waiting for its sender, so receive entries are not
// judged) and keeps, per entry, snapshots of its cumulative counters over the last `window_ns`.
// The window's difference of the duration histograms, summed over the entries of one directed
// pair (src process -> dst: the listener's global rank for net connections; the peer's comm
// rank in its communicator for ProxyStep entries), gives the pair's median and lower quartile
// transfer time, its bytes and GB/s. Pairs with at least `min_transfers` transfers in the window
// are compared within their class (source, and mean bytes per transfer rounded down to a power
// of two):
//     slow when median >= factor * r and median - r >= min_ns and lower quartile >= factor * r
// with r the median of the other pairs' medians (a class needs two pairs). A pair counts as slow
// once it was slow in `confirm` consecutive passes that brought new transfers and for
// `confirm_ns` of observer time since its slow episode began (an episode ends after `confirm`
// passes in which it was not slow; a burst of scheduling noise on a busy host lasts up to a
// second, docs/observer.md "Network links"); until then it neither accuses nor clears anyone. Intersection: a rank whose slow pairs reach at least two
// distinct peers and which has no normal pair is a slow endpoint (class net_endpoint); other slow
// pairs name their link (class net_link: the sender of the slower direction as suspect, the
// other end as peer). Findings stay open while slow and close when the pairs are normal again; a
// pass in which no pair brought a new transfer (the job ended or paused) changes nothing.
// A link or endpoint whose processes are known takes the slow-link detector's dedup key
// (slowlink.h): a pair that operation times show slow too is one finding, kept open while either
// detector sees it. A pair from or to a host that the slow-link detector holds (a suspected or
// reported slow host, SlowLinkDetector::held_hosts; docs/observer.md, "Slow links") is left to
// the host finding: neither reported nor counted in the intersection while the host is held.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

struct NetLinkConfig {
  double factor = 2.0;                 // SCOUT_OBSERVER_NET_FACTOR
  int64_t min_ns = 50'000;             // SCOUT_OBSERVER_NET_MIN_US
  uint64_t min_transfers = 16;         // SCOUT_OBSERVER_NET_MIN_TRANSFERS
  int64_t window_ns = 10'000'000'000;  // SCOUT_OBSERVER_NET_WINDOW_S
  int confirm = 3;                     // SCOUT_OBSERVER_NET_CONFIRM
  int64_t confirm_ns = 2'000'000'000;  // ... and time slow (ns); not a setting
};

class NetLinkDetector {
 public:
  explicit NetLinkDetector(NetLinkConfig cfg) : cfg_(cfg) {}
  // One observer pass at observer time `now_ns`: reads Proc::links of every process, judges the
  // pairs, reports and closes slowlink findings on `board`. Pairs from or to a host named in
  // `held_hosts` (the slow-link detector's held hosts) are judged but left to the host finding.
  void pass(const Model& m, int64_t now_ns, FindingBoard& board, const std::set<std::string>& held_hosts);

  // A directed pair: source, sending process, and the receiving end (net: its global rank; proxy:
  // the communicator and the peer's comm rank).
  struct Pair {
    uint8_t source = 0;
    std::string src_host;
    int src_pid = 0;
    int dst_global = -1;     // net
    uint64_t comm_hash = 0;  // proxy
    int comm_nranks = 0;     // proxy
    int dst_comm_rank = -1;  // proxy
    auto operator<=>(const Pair&) const = default;
  };

 private:
  struct Judged;    // the window's figures of one pair (netlink.cc)
  struct AnonEnds;  // receiving ends known by comm rank only
  class Namer;      // names, evidence channels and dedup keys of judged pairs (netlink.cc)
  // The window's figures per pair from every process's link table (keeps the snapshots).
  std::map<Pair, Judged> collect(const Model& m, int64_t now_ns);
  // Sets each pair's receiving end: global rank, or a negative id of (communicator, comm rank).
  static AnonEnds name_receivers(const Model& m, std::map<Pair, Judged>& pairs);
  // Slow within each (source, size) class, confirmed after cfg_.confirm passes with new transfers.
  std::vector<Judged*> judge(std::map<Pair, Judged>& pairs, int64_t now_ns);
  void report_endpoints(const Namer& names, const std::vector<Judged*>& judged, const std::set<int>& endpoints,
                        const std::map<int, std::set<int>>& slow_peers, int64_t now_ns, FindingBoard& board,
                        std::set<std::string>* reported);
  void report_links(const Namer& names, const std::vector<Judged*>& judged, const std::set<int>& endpoints,
                    int64_t now_ns, FindingBoard& board, std::set<std::string>* reported);
  struct Snap {
    int64_t t = 0;
    uint64_t transfers = 0, bytes = 0, busy = 0;
    std::array<uint32_t, shm::kLinkHistBuckets> hist{};
  };
  struct EntryKey {
    std::string host;
    int pid = 0;
    uint32_t index = 0;
    auto operator<=>(const EntryKey&) const = default;
  };
  NetLinkConfig cfg_;
  std::map<EntryKey, std::deque<Snap>> snaps_;
  std::map<Pair, int> slow_for_;        // consecutive slow passes with new transfers
  std::map<Pair, int64_t> slow_since_;  // observer time the slow episode began (0: none)
  std::map<Pair, int> calm_for_;        // passes with new transfers since the episode was slow
  std::map<Pair, uint64_t> seen_;       // cumulative transfers at the previous pass
  std::set<std::string> open_;
};

}  // namespace scout::obs
