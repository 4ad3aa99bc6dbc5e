// Per-kind pictures of `scout report --html` (observer/cli/report_pictures.h): the straggler's
// lateness chart, the slow-link bars and the vote grids. The wait-for graph is in
// observer/cli/report_graph.cc, the timeline in observer/cli/report_timeline.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "observer/cli/evidence_words.h"
#include "observer/cli/format.h"
#include "observer/cli/html.h"
#include "observer/cli/report_pictures.h"

namespace scout::cli::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// At most this many communicators of a straggler get a chart, this many channels a bar.
constexpr size_t kMaxLatenessCharts = 3;
constexpr size_t kMaxChannelBars = 16;
// With more other ranks than this, they are drawn as a band (min to max) and their median.
constexpr size_t kMaxOtherLines = 12;

std::string ms_words(double v) { return fmt_duration(static_cast<int64_t>(std::llround(v * 1e6))); }

// "0x6be2ffe0f63cef30" -> the hash; 0 when it does not read as one.
uint64_t parse_hash(const std::string& s) {
  if (s.size() < 3 || s.size() > 18 || (s.rfind("0x", 0) != 0 && s.rfind("0X", 0) != 0)) return 0;
  char* end = nullptr;
  uint64_t h = std::strtoull(s.c_str() + 2, &end, 16);
  return end && *end == '\0' ? h : 0;
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One lateness chart: the suspect's line over the other ranks', the threshold dashed.
std::string lateness_chart(const LatenessWindow& w, int suspect, double threshold_ms, const std::string& caption) {
  const double W = 1080, H = 270, L = 64, R = 104, T = 40, B = 46;
  const double pw = W - L - R, ph = H - T - B;
  const size_t n = w.ops.size();
  double ymax = threshold_ms;
  for (const auto& row : w.ms)
    for (double v : row)
      if (std::isfinite(v)) ymax = std::max(ymax, v);
  ymax = ymax <= 0 ? 1 : ymax * 1.08;
  std::vector<double> yt = html::ticks(0, ymax, 5);
  ymax = std::max(ymax, yt.back());
  // A little room below zero, so that ranks that are never late show above the axis.
  const double ymin = -0.03 * ymax;
  auto X = [&](size_t i) { return L + (n > 1 ? pw * double(i) / double(n - 1) : pw / 2); };
  auto Y = [&](double v) { return std::isfinite(v) ? T + ph - ph * (std::min(v, ymax) - ymin) / (ymax - ymin) : kNaN; };

  html::Svg svg(W, H, "chart", caption);
  // Grid and y axis.
  for (double t : yt) {
    svg.line(L, Y(t), L + pw, Y(t), "grid");
    svg.text(L - 8, Y(t) + 4, html::num(t, 2), "tick", "end");
  }
  svg.text(14, T + ph / 2, "ms late", "axis-label vertical", "middle");
  svg.line(L, T + ph, L + pw, T + ph, "axis");
  // x labels: first, middle and last collective.
  if (n > 0) {
    std::vector<size_t> at = {0};
    if (n > 2) at.push_back(n / 2);
    if (n > 1) at.push_back(n - 1);
    for (size_t i : at) {
      svg.line(X(i), T + ph, X(i), T + ph + 5, "axis");
      svg.text(X(i), T + ph + 19, w.ops[i], "tick", i == 0 ? "start" : i + 1 == n ? "end" : "middle");
    }
    svg.text(L + pw / 2, H - 6, "collectives of " + w.comm + ", oldest first", "axis-label", "middle");
  }
  std::vector<double> xs(n);
  for (size_t i = 0; i < n; ++i) xs[i] = X(i);
  // The other ranks: lines, or a band and their median.
  size_t mine = w.ranks.size();
  for (size_t r = 0; r < w.ranks.size(); ++r)
    if (w.ranks[r] == suspect) mine = r;
  std::vector<size_t> others;
  for (size_t r = 0; r < w.ranks.size(); ++r)
    if (r != mine) others.push_back(r);
  if (others.size() <= kMaxOtherLines) {
    for (size_t r : others) {
      std::vector<double> ys(n);
      for (size_t i = 0; i < n; ++i) ys[i] = Y(w.ms[r][i]);
      svg.polyline(xs, ys, "ln-other", "rank " + std::to_string(w.ranks[r]));
    }
  } else {
    std::string upper, lower;
    std::vector<double> med(n);
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> col;
      for (size_t r : others)
        if (std::isfinite(w.ms[r][i])) col.push_back(w.ms[r][i]);
      med[i] = Y(median(col));
      if (col.empty()) continue;
      auto [lo, hi] = std::minmax_element(col.begin(), col.end());
      upper += html::num(xs[i]) + "," + html::num(Y(*hi)) + " ";
      lower = html::num(xs[i]) + "," + html::num(Y(*lo)) + " " + lower;
    }
    if (!upper.empty()) {
      svg.raw("<polygon points=\"" + upper + lower + "\" class=\"band\">" +
              html::title("range of the other " + std::to_string(others.size()) + " ranks") + "</polygon>");
    }
    svg.polyline(xs, med, "ln-median", "median of the other " + std::to_string(others.size()) + " ranks");
  }
  // Threshold.
  if (threshold_ms > 0) {
    svg.line(L, Y(threshold_ms), L + pw, Y(threshold_ms), "thr");
    svg.text(L + pw + 8, Y(threshold_ms) - 3, "late threshold", "thr-label");
    svg.text(L + pw + 8, Y(threshold_ms) + 11, ms_words(threshold_ms), "thr-label");
  }
  // The suspect.
  if (mine < w.ranks.size()) {
    std::vector<double> ys(n);
    for (size_t i = 0; i < n; ++i) ys[i] = Y(w.ms[mine][i]);
    svg.polyline(xs, ys, "ln-suspect", "rank " + std::to_string(suspect));
    for (size_t i = 0; i < n; ++i) {
      const double v = w.ms[mine][i];
      if (std::isfinite(v) && threshold_ms > 0 && v >= threshold_ms) {
        svg.circle(xs[i], Y(v), 3.2, "pt-late",
                   "rank " + std::to_string(suspect) + ", " + w.ops[i] + ": " + ms_words(v) + " late");
      }
    }
  }
  // Legend.
  double lx = L;
  auto key = [&](const std::string& cls, const std::string& words) {
    svg.line(lx, 16, lx + 22, 16, cls);
    svg.text(lx + 28, 20, words, "legend");
    lx += 40 + 7.2 * double(words.size());
  };
  if (mine < w.ranks.size()) key("ln-suspect", "rank " + std::to_string(suspect) + " (suspect)");
  if (others.size() <= kMaxOtherLines) {
    if (!others.empty()) {
      std::vector<int> o;
      for (size_t r : others) o.push_back(w.ranks[r]);
      key("ln-other", (o.size() == 1 ? "rank " : "ranks ") + fmt_ranges(o));
    }
  } else {
    key("ln-median", "median of the other " + std::to_string(others.size()) + " ranks (band: their range)");
  }
  if (threshold_ms > 0) key("thr", "late threshold");
  return svg.str();
}

// Short channel label for a bar: "tp1 ranks 2-3: AllReduce 4.0MiB", "net rank 1 -> 3 64.0KiB".
std::string channel_label(const obs::EvChannel& c) {
  if (c.source) {
    return std::string(*c.source == "net" ? "net" : "proxy") + " rank " + std::to_string(c.src.value_or(-1)) +
           " \xE2\x86\x92 " + std::to_string(c.dst.value_or(-1)) + ": " + fmt_bytes(c.bytes_bucket);
  }
  std::string name = c.comm ? (c.comm->name.empty() ? c.comm->hash : c.comm->name) : std::string("?");
  return name + " " + ev::ranks(c.ranks) + ": " + (c.kind == "p2p" ? "p2p " : "") + c.func + " " +
         fmt_bytes(c.bytes_bucket);
}

}  // namespace

LatenessWindow lateness_window(store::StoreReader& rd, uint64_t comm_hash, const std::string& comm_words,
                               int64_t until_ns, int window) {
  LatenessWindow w;
  w.comm = comm_words;
  store::OpFilter filter;
  filter.comm_hash = comm_hash;
  std::vector<store::OpRow> rows;
  for (auto& r : rd.ops(filter)) {
    if (r.op.kind == "coll" && r.op.first_arrival_ns > 0 && r.op.first_arrival_ns <= until_ns) rows.push_back(r);
  }
  if (window > 0 && rows.size() > size_t(window)) rows.erase(rows.begin(), rows.end() - window);
  if (rows.empty()) return w;
  std::vector<int64_t> ids;
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) {
    ids.push_back(rows[i].op_id);
    index[rows[i].op_id] = i;
    w.ops.push_back(rows[i].op.func + " #" + std::to_string(rows[i].op.seq));
  }
  std::vector<store::TimingRow> timings = rd.timings(ids);
  std::map<int, std::vector<double>> by_rank;
  std::vector<int64_t> first(rows.size(), 0);
  for (const auto& t : timings) {
    if (t.t.start_ns <= 0 || t.t.global_rank < 0) continue;
    int64_t& f = first[index[t.op_id]];
    if (f == 0 || t.t.start_ns < f) f = t.t.start_ns;
  }
  for (const auto& t : timings) {
    if (t.t.start_ns <= 0 || t.t.global_rank < 0) continue;
    auto& row = by_rank[t.t.global_rank];
    if (row.empty()) row.assign(rows.size(), kNaN);
    const size_t i = index[t.op_id];
    row[i] = double(t.t.start_ns - first[i]) / 1e6;
  }
  for (auto& [rank, row] : by_rank) {
    w.ranks.push_back(rank);
    w.ms.push_back(std::move(row));
  }
  return w;
}

std::string straggler_picture(const obs::Finding& f, const obs::StragglerEvidence& e,
                              const std::vector<LatenessWindow>& windows) {
  const int suspect = f.suspects.empty() ? -1 : f.suspects.front().global_rank;
  const double threshold = e.thresholds.late_ms.value_or(e.thresholds.min_ms);
  std::string out;
  for (size_t i = 0; i < e.comms.size() && i < kMaxLatenessCharts; ++i) {
    const obs::EvStragglerComm& c = e.comms[i];
    LatenessWindow w = i < windows.size() ? windows[i] : LatenessWindow{};
    std::string note;
    if (w.ops.size() < 2) {
      // The store no longer keeps these collectives: the rank's own raw lateness from the evidence.
      w = LatenessWindow{};
      w.comm = ev::comm(c.comm);
      w.ranks = {suspect};
      w.ms = {c.lateness_ms};
      for (size_t k = 0; k < c.lateness_ms.size(); ++k) w.ops.push_back("collective " + std::to_string(k + 1));
      note = " (the store no longer keeps these collectives: rank " + std::to_string(suspect) +
             "'s raw lateness from the evidence)";
    }
    const std::string caption = ev::comm(c.comm) + ": lateness per rank over the last " + std::to_string(w.ops.size()) +
                                " collectives; rank " + std::to_string(suspect) + " late in " +
                                std::to_string(c.late_ops) + " of its last " + std::to_string(c.window_ops) +
                                ", median " + ms_words(c.median_late_ms) + note;
    out += "<figure><figcaption>" + html::esc(caption) + "</figcaption>" +
           lateness_chart(w, suspect, threshold, caption) + "</figure>";
  }
  return out;
}

std::string slowlink_picture(const obs::SlowLinkEvidence& e) {
  std::vector<std::pair<const obs::EvChannel*, bool>> rows;  // channel, slow
  for (const auto& c : e.slow) rows.push_back({&c, true});
  for (const auto& c : e.normal) rows.push_back({&c, false});
  if (rows.size() > kMaxChannelBars) rows.resize(kMaxChannelBars);
  if (rows.empty()) return "";
  const double W = 1080, L = 340, R = 150, T = 34, RH = 28, B = 34;
  const double H = T + RH * double(rows.size()) + B, pw = W - L - R;
  double xmax = 0;
  for (auto& [c, slow] : rows) xmax = std::max({xmax, c->median_ms, c->peer_median_ms});
  xmax = xmax <= 0 ? 1 : xmax * 1.05;
  std::vector<double> xt = html::ticks(0, xmax, 5);
  xmax = std::max(xmax, xt.back());
  auto X = [&](double v) { return L + pw * std::min(v, xmax) / xmax; };
  html::Svg svg(W, H, "chart", "median transfer time per channel against its peers'");
  for (double t : xt) {
    svg.line(X(t), T - 6, X(t), T + RH * double(rows.size()), "grid");
    svg.text(X(t), T + RH * double(rows.size()) + 16, html::num(t, 3), "tick", "middle");
  }
  svg.text(L + pw / 2, H - 4, "median time per transfer, ms (tick: the peers' median)", "axis-label", "middle");
  for (size_t i = 0; i < rows.size(); ++i) {
    const obs::EvChannel& c = *rows[i].first;
    const bool slow = rows[i].second;
    const double y = T + RH * double(i);
    const std::string tip = channel_label(c) + ": " + ms_words(c.median_ms) + " (median of " +
                            std::to_string(c.samples) + ") vs " + ms_words(c.peer_median_ms) + " on " +
                            std::to_string(c.peers) + " peers (" + ev::num(c.ratio) + "x)";
    svg.text(L - 10, y + 18, channel_label(c), slow ? "bar-label slow" : "bar-label", "end");
    svg.rect(L, y + 5, X(c.median_ms) - L, RH - 10, slow ? "bar-slow" : "bar-normal", tip, 2);
    svg.line(X(c.peer_median_ms), y + 2, X(c.peer_median_ms), y + RH - 2, "peer-tick");
    svg.text(X(c.median_ms) + 6, y + 18, ms_words(c.median_ms) + " (" + ev::num(c.ratio) + "x)", "bar-value");
  }
  svg.rect(L, 10, 14, 10, "bar-slow");
  svg.text(L + 20, 19, "slow", "legend");
  svg.rect(L + 70, 10, 14, 10, "bar-normal");
  svg.text(L + 90, 19, "normal (clears the suspect as an endpoint)", "legend");
  return "<figure><figcaption>" +
         html::esc("median time per transfer of each channel against its peers' (class " + e.cls + ": " +
                   std::to_string(e.slow.size()) + " slow, " + std::to_string(e.normal.size()) +
                   " normal channels; slow at " + ev::num(e.thresholds.factor) + "x the peers' median and at least " +
                   ms_words(e.thresholds.min_ms) + " more)") +
         "</figcaption>" + svg.str() + "</figure>";
}

std::string vote_picture(const std::string& caption, const std::vector<VoteCell>& cells,
                         const std::vector<VoteGroup>& groups) {
  if (cells.empty()) return "";
  // Rows of 16 cells (two 8-GPU nodes) with their labels; past 256 cells, rows of 64 small cells
  // labelled by their first rank, each cell's label in its tooltip.
  const bool big = cells.size() > 256;
  const size_t per_row = big ? 64 : 16;
  const double C = big ? 14 : 36, G = big ? 2 : 5, L = big ? 44 : 2, T = 4, LH = 24;
  const size_t nrows = (cells.size() + per_row - 1) / per_row;
  const double legend_y = T + double(nrows) * (C + G) + 22;
  const double H = legend_y + LH * double(groups.size()) - 6;
  size_t longest = 0;
  for (const auto& g : groups) longest = std::max(longest, std::min<size_t>(g.value.size(), 48));
  const double value_w = 8.0 * double(longest) + 16;
  const double W = std::max(L + double(std::min(per_row, cells.size())) * (C + G), L + 22 + value_w + 170);
  html::Svg svg(W, H, "chart votes", caption);
  // Colour per group: the majority green, the others in turn.
  std::vector<std::string> cls(groups.size());
  int other = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    cls[g] = groups[g].majority ? "vote-maj" : "vote-" + std::to_string(other++ % 5);
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    const double x = L + double(i % per_row) * (C + G), y = T + double(i / per_row) * (C + G);
    const VoteCell& c = cells[i];
    const std::string& k = c.group >= 0 && size_t(c.group) < cls.size() ? cls[c.group] : std::string("vote-none");
    if (big) {
      if (i % per_row == 0) svg.text(L - 6, y + C - 3, c.label, "tick", "end");
      svg.rect(x, y, C, C, k, c.tooltip, 2);
      continue;
    }
    svg.begin_group("cell");
    svg.rect(x, y, C, C, k, c.tooltip, 3);
    svg.text(x + C / 2, y + C / 2 + 5, c.label, c.label.size() > 3 ? "cell-label small" : "cell-label", "middle");
    svg.end_group();
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const double y = legend_y + LH * double(g);
    svg.rect(L, y - 12, 16, 16, cls[g], "", 3);
    svg.text(L + 24, y + 1, groups[g].value, "legend mono");
    svg.text(L + 24 + value_w, y + 1,
             std::to_string(groups[g].size) + (groups[g].size == 1 ? " holder" : " holders") +
                 (groups[g].majority ? " (majority)" : ""),
             groups[g].majority ? "legend" : "legend strong");
  }
  return "<figure><figcaption>" + html::esc(caption) + "</figcaption>" + svg.str() + "</figure>";
}

std::string sdc_picture(const obs::SdcEvidence& e) {
  std::string out;
  if (e.votes) {
    std::vector<VoteGroup> groups;
    std::vector<std::pair<int, VoteCell>> cells;  // by global rank
    const std::optional<std::string> maj = e.majority.value_or(std::nullopt);
    for (const auto& g : *e.votes) {
      const int gi = int(groups.size());
      groups.push_back({g.value, g.ranks.size(), maj && *maj == g.value});
      for (size_t k = 0; k < g.ranks.size(); ++k) {
        const int cr = k < g.comm_ranks.size() ? g.comm_ranks[k] : -1;
        cells.push_back(
            {g.ranks[k],
             {g.ranks[k] >= 0 ? std::to_string(g.ranks[k]) : "c" + std::to_string(cr),
              "rank " + std::to_string(g.ranks[k]) + " (comm rank " + std::to_string(cr) + "): " + g.value, gi}});
      }
    }
    std::stable_sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<VoteCell> flat;
    for (auto& c : cells) flat.push_back(c.second);
    std::string caption = "receive fingerprint per rank after " + ev::op(e.op) + ": " +
                          std::to_string(e.voters.value_or(int(flat.size()))) + " of " +
                          std::to_string(e.nranks.value_or(int(flat.size()))) + " ranks voted; " +
                          (maj ? "the strict majority holds " + *maj : std::string("no strict majority"));
    out += vote_picture(caption, flat, groups);
  }
  if (e.disagreements) {
    for (const auto& d : *e.disagreements) {
      std::vector<VoteGroup> groups;
      std::vector<VoteCell> cells;
      for (const auto& v : d.votes) {
        const int gi = int(groups.size());
        groups.push_back({v.value, v.comms.size(), d.majority && *d.majority == v.value});
        for (size_t k = 0; k < v.comms.size(); ++k) {
          const obs::EvComm& c = v.comms[k];
          const int gr = k < v.ranks.size() ? v.ranks[k] : -1;
          cells.push_back({c.name.empty() ? c.hash.substr(0, 6) : c.name,
                           ev::comm(c) + ", rank " + std::to_string(gr) + ": " + v.value, gi});
        }
      }
      out += vote_picture("comm rank " + std::to_string(d.comm_rank) + " of the equivalent communicators (" +
                              e.declaration.value_or(e.check) + "): fingerprint per communicator",
                          cells, groups);
    }
  }
  return out;
}

std::string desync_picture(const obs::DesyncEvidence& e) {
  // Any vote of the evidence: one cell per rank, coloured by what it called.
  std::vector<VoteGroup> groups;
  std::vector<std::pair<int, VoteCell>> cells;
  std::string what;
  auto add = [&](const std::vector<int>& ranks, const std::string& value, bool majority) {
    const int gi = int(groups.size());
    groups.push_back({value, ranks.size(), majority});
    for (int r : ranks) cells.push_back({r, {std::to_string(r), "rank " + std::to_string(r) + ": " + value, gi}});
  };
  if (e.votes) {
    what = "what each rank passed to " + ev::op(e.op);
    const auto maj = e.majority.value_or(std::nullopt);
    for (const auto& g : *e.votes) {
      std::string v = g.value.datatype + " x " + std::to_string(g.value.count);
      if (g.value.root >= 0) v += ", root " + std::to_string(g.value.root);
      add(g.ranks, v,
          maj && maj->datatype == g.value.datatype && maj->count == g.value.count && maj->root == g.value.root);
    }
  } else if (e.sequence_votes) {
    what = "what each rank called at position " + std::to_string(e.position.value_or(0)) + " of its sequence";
    for (const auto& g : *e.sequence_votes) {
      std::string v = g.value ? g.value->func + " " + g.value->datatype + " x " + std::to_string(g.value->count)
                              : std::string("(not called)");
      add(g.ranks, v, false);
    }
  } else if (e.frontier_votes) {
    what = "the collective each rank waits in";
    for (const auto& g : *e.frontier_votes) add(g.ranks, g.value ? ev::op(*g.value) : "(in none)", false);
  }
  std::string out;
  if (!cells.empty()) {
    // The largest group is the majority when it is a strict one (metadata marks it itself).
    if (!e.votes) {
      size_t total = 0, best = 0;
      for (size_t g = 0; g < groups.size(); ++g) {
        total += groups[g].size;
        if (groups[g].size > groups[best].size) best = g;
      }
      if (2 * groups[best].size > total) groups[best].majority = true;
    }
    std::stable_sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<VoteCell> flat;
    for (auto& c : cells) flat.push_back(c.second);
    out += vote_picture(what, flat, groups);
  }
  if (e.hang && e.hang->root) out += wait_graph_picture(e.hang->chain, *e.hang->root, -1, false);
  return out;
}

std::string finding_picture(store::StoreReader& rd, const obs::Finding& f) {
  using K = obs::FindingKind;
  if (!f.evidence.is_object()) return "";
  switch (f.kind) {
    case K::kStraggler: {
      obs::StragglerEvidence e;
      if (!obs::read_evidence(f.evidence, &e)) return "";
      std::vector<LatenessWindow> windows;
      const int window = e.thresholds.window > 0 ? std::min(e.thresholds.window, 256) : 64;
      for (size_t i = 0; i < e.comms.size() && i < kMaxLatenessCharts; ++i) {
        const uint64_t h = parse_hash(e.comms[i].comm.hash);
        windows.push_back(h ? lateness_window(rd, h, ev::comm(e.comms[i].comm), f.last_seen_ns, window)
                            : LatenessWindow{});
      }
      return straggler_picture(f, e, windows);
    }
    case K::kSlowLink: {
      obs::SlowLinkEvidence e;
      return obs::read_evidence(f.evidence, &e) ? slowlink_picture(e) : "";
    }
    case K::kSdc: {
      obs::SdcEvidence e;
      return obs::read_evidence(f.evidence, &e) ? sdc_picture(e) : "";
    }
    case K::kDesync: {
      obs::DesyncEvidence e;
      return obs::read_evidence(f.evidence, &e) ? desync_picture(e) : "";
    }
    case K::kHang: {
      obs::HangEvidence e;
      if (!obs::read_evidence(f.evidence, &e) || !e.root) return "";
      return wait_graph_picture(e.chain, *e.root, -1, false);
    }
    case K::kStall: {
      obs::StallEvidence e;
      return obs::read_evidence(f.evidence, &e) ? wait_graph_picture(e.chain, e.root, -1, false) : "";
    }
    case K::kCrash: {
      obs::CrashEvidence e;
      if (!obs::read_evidence(f.evidence, &e)) return "";
      return wait_graph_picture(e.chain, {}, f.suspects.empty() ? -1 : f.suspects.front().global_rank, false);
    }
    case K::kDeadlock: {
      obs::DeadlockEvidence e;
      return obs::read_evidence(f.evidence, &e) ? wait_graph_picture(e.cycle, {}, -1, true) : "";
    }
    case K::kNan: return "";
  }
  return "";
}

}  // namespace scout::cli::report
