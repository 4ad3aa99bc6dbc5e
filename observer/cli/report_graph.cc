// The wait-for graph of `scout report --html` (observer/cli/report_pictures.h): the ranks of a
// hang, stall, crash or deadlock and, for each, an arrow to the rank it waits for, labelled with
// the communicator and operation (the wait edges of docs/findings.md, "Common fields"). The root
// (the rank nobody can blame on another) is on the right, the ranks waiting on it further left
// the longer their chain;
// ranks with exactly the same wait and nobody waiting on them are drawn as one box. A deadlock's
// cycle is drawn in a row, its closing arrow underneath.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"
#include "observer/cli/html.h"
#include "observer/cli/report_pictures.h"

namespace scout::cli::report {
namespace {

constexpr double kMinBoxW = 178, kBoxH = 46, kGap = 150, kRowPitch = 62, kMarginX = 16, kMarginY = 16;
// Width of a box title per character (13 px bold), for boxes as wide as their longest title.
constexpr double kCharW = 7.9;
// At most this many boxes; beyond, the waiting ranks are merged by the rank they wait for only.
constexpr size_t kMaxBoxes = 40;

struct Node {
  std::vector<int> ranks;                // one rank, or merged waiting ranks
  const obs::EvWaitEdge* out = nullptr;  // the wait of (each of) its ranks
  int target = -1;                       // node index it waits for
  bool root = false;
  std::string state;  // second line
  int depth = 0;
  double x = 0, y = 0;
};

// The state of a rank as the edges pointing at it describe it ("why" of docs/findings.md).
std::string why_short(const std::string& why) {
  if (why == "absent") return "never enqueued it";
  if (why == "not-started") return "enqueued, GPU not started";
  if (why == "dead") return "process died";
  if (why == "mismatch") return "in another collective";
  return why;
}

std::string root_short(const obs::EvHangRoot& r) {
  if (r.reason == "idle") return "never entered it";
  if (r.reason == "gpu-blocked") return "GPU never started it";
  if (r.reason == "running") return "busy in another communicator";
  if (r.reason == "dead") return "process died";
  return r.reason;
}

std::string edge_label(const obs::EvWaitEdge& e) {
  return (e.comm.name.empty() ? e.comm.hash : e.comm.name) + " " + ev::op(e.op);
}

std::string ranks_label(const std::vector<int>& r) {
  return r.size() == 1 ? "rank " + std::to_string(r[0])
                       : "ranks " + fmt_ranges(r) + " (" + std::to_string(r.size()) + ")";
}

using Sig = std::tuple<int, std::string, std::string, uint64_t, std::string>;
Sig signature(const obs::EvWaitEdge& e, bool by_target_only) {
  if (by_target_only) return {e.waits_for, "", "", 0, ""};
  return {e.waits_for, e.comm.hash, e.op.func, e.op.seq, e.why};
}

// Boxes for the ranks of `edges`: leaves (nobody waits on them) with the same wait merged.
std::vector<Node> build_nodes(const std::vector<obs::EvWaitEdge>& edges, const std::vector<int>& extra,
                              bool by_target_only) {
  std::map<int, const obs::EvWaitEdge*> out;
  std::set<int> ranks(extra.begin(), extra.end()), waited_on;
  for (const auto& e : edges) {
    out.emplace(e.rank, &e);
    ranks.insert(e.rank);
    ranks.insert(e.waits_for);
    waited_on.insert(e.waits_for);
  }
  std::vector<Node> nodes;
  std::map<int, size_t> of_rank;
  std::map<Sig, size_t> merged;
  for (int r : ranks) {
    auto it = out.find(r);
    const bool leaf = !waited_on.count(r) && it != out.end();
    if (leaf) {
      Sig s = signature(*it->second, by_target_only);
      auto m = merged.find(s);
      if (m != merged.end()) {
        nodes[m->second].ranks.push_back(r);
        of_rank[r] = m->second;
        continue;
      }
      merged[s] = nodes.size();
    }
    of_rank[r] = nodes.size();
    Node n;
    n.ranks = {r};
    n.out = it == out.end() ? nullptr : it->second;
    nodes.push_back(n);
  }
  for (Node& n : nodes) {
    if (n.out) n.target = int(of_rank[n.out->waits_for]);
  }
  return nodes;
}

}  // namespace

std::string wait_graph_picture(const std::vector<obs::EvWaitEdge>& edges, const std::vector<obs::EvHangRoot>& roots,
                               int dead_rank, bool cycle) {
  if (edges.empty()) return "";
  std::vector<int> extra;
  for (const auto& r : roots)
    if (r.global_rank) extra.push_back(*r.global_rank);
  if (dead_rank >= 0) extra.push_back(dead_rank);
  std::vector<Node> nodes = build_nodes(edges, extra, false);
  if (nodes.size() > kMaxBoxes) nodes = build_nodes(edges, extra, true);

  // States: roots by their reason, other ranks by what the edges into them say.
  for (Node& n : nodes) {
    const int r = n.ranks.front();
    for (const auto& root : roots)
      if (root.global_rank && *root.global_rank == r && n.ranks.size() == 1) {
        n.root = true;
        n.state = root_short(root) + (root.reason != "dead" && root.process && *root.process != "running"
                                          ? " (process " + *root.process + ")"
                                          : "");
      }
    if (r == dead_rank && n.ranks.size() == 1) {
      n.root = true;
      n.state = "process died";
    }
    if (n.root) continue;
    for (const auto& e : edges)
      if (e.waits_for == r) n.state = why_short(e.why);
    if (n.state.empty()) n.state = n.out ? "waits" : "";
  }

  double kBoxW = kMinBoxW;
  for (const Node& n : nodes) {
    kBoxW = std::max(kBoxW, 24 + kCharW * double(ranks_label(n.ranks).size()));
    kBoxW = std::max(kBoxW, 24 + 6.6 * double(n.state.size()));
  }
  const double kColPitch = kBoxW + kGap;

  std::string caption;
  for (const auto& root : roots) caption += (caption.empty() ? "" : "; ") + ev::root_words(root);
  if (dead_rank >= 0) caption = "rank " + std::to_string(dead_rank) + "'s process died";
  if (cycle) caption = "each rank waits for the next, the last for the first: nobody can move";
  std::set<int> waiting;
  for (const auto& e : edges) waiting.insert(e.rank);
  caption += (caption.empty() ? "" : "; ") + std::to_string(waiting.size()) +
             (waiting.size() == 1 ? " rank waits" : " ranks wait") + " in the chain drawn";

  double W = 0, H = 0;
  std::string body;
  if (cycle) {
    // The cycle's ranks in order, left to right; the closing arrow underneath.
    std::vector<size_t> order;
    std::set<size_t> seen;
    size_t at = 0;
    while (at < nodes.size() && !seen.count(at)) {
      seen.insert(at);
      order.push_back(at);
      if (nodes[at].target < 0) break;
      at = size_t(nodes[at].target);
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!seen.count(i)) order.push_back(i);
    for (size_t i = 0; i < order.size(); ++i) {
      nodes[order[i]].x = kMarginX + double(i) * kColPitch;
      nodes[order[i]].y = kMarginY + 24;
    }
    W = kMarginX * 2 + double(order.size() - 1) * kColPitch + kBoxW;
    H = kMarginY * 2 + 24 + kBoxH + 56;
  } else {
    // Depth: hops to a rank that waits for nobody in the chain.
    std::vector<int> state(nodes.size(), 0);  // 0 new, 1 visiting, 2 done
    std::function<int(size_t)> depth = [&](size_t i) -> int {
      if (state[i] == 2) return nodes[i].depth;
      if (state[i] == 1 || nodes[i].target < 0) {
        state[i] = 2;
        return nodes[i].depth = 0;
      }
      state[i] = 1;
      nodes[i].depth = depth(size_t(nodes[i].target)) + 1;
      state[i] = 2;
      return nodes[i].depth;
    };
    int max_depth = 0;
    for (size_t i = 0; i < nodes.size(); ++i) max_depth = std::max(max_depth, depth(i));
    std::vector<std::vector<size_t>> cols(size_t(max_depth) + 1);
    for (size_t i = 0; i < nodes.size(); ++i) cols[size_t(nodes[i].depth)].push_back(i);
    size_t tallest = 0;
    for (const auto& c : cols) tallest = std::max(tallest, c.size());
    const double plot_h = double(tallest) * kRowPitch;
    for (size_t d = 0; d < cols.size(); ++d) {
      auto& c = cols[d];
      // Next to the box each waits for, then by rank.
      std::stable_sort(c.begin(), c.end(), [&](size_t a, size_t b) {
        const double ya = nodes[a].target >= 0 && d > 0 ? nodes[size_t(nodes[a].target)].y : 0;
        const double yb = nodes[b].target >= 0 && d > 0 ? nodes[size_t(nodes[b].target)].y : 0;
        return ya != yb ? ya < yb : nodes[a].ranks.front() < nodes[b].ranks.front();
      });
      const double top = kMarginY + 24 + (plot_h - double(c.size()) * kRowPitch) / 2;
      for (size_t k = 0; k < c.size(); ++k) {
        nodes[c[k]].x = kMarginX + double(max_depth - int(d)) * kColPitch;
        nodes[c[k]].y = top + double(k) * kRowPitch;
      }
    }
    W = kMarginX * 2 + double(max_depth) * kColPitch + kBoxW;
    H = kMarginY * 2 + 24 + plot_h;
  }
  W = std::max(W, 560.0);

  html::Svg svg(W, H, "chart graph", "wait-for graph: each arrow points from a waiting rank to the rank it waits for");
  svg.text(kMarginX, 18,
           cycle ? "wait-for cycle" : "waiting ranks  \xE2\x86\x92  the rank they wait for (root on the right)",
           "legend");
  // Arrows first, boxes over them.
  for (const Node& n : nodes) {
    if (n.target < 0) continue;
    const Node& t = nodes[size_t(n.target)];
    const std::string tip =
        ev::edge(*n.out) + (n.ranks.size() > 1 ? " (and likewise ranks " + fmt_ranges(n.ranks) + ")" : "");
    const double x1 = n.x + kBoxW, y1 = n.y + kBoxH / 2;
    double x2 = t.x, y2 = t.y + kBoxH / 2;
    std::string d;
    if (cycle && t.x <= n.x) {
      // The closing edge: from the bottom of the last box back under the row to the first.
      const double xs = n.x + kBoxW / 2, ys = n.y + kBoxH, xe = t.x + kBoxW / 2, ye = t.y + kBoxH + 2;
      d = "M" + html::num(xs) + "," + html::num(ys) + " C" + html::num(xs) + "," + html::num(ys + 50) + " " +
          html::num(xe) + "," + html::num(ye + 50) + " " + html::num(xe) + "," + html::num(ye);
      svg.raw("<path d=\"" + d + "\" class=\"edge\">" + html::title(tip) + "</path>");
      svg.text((xs + xe) / 2, ys + 44, edge_label(*n.out), "edge-label", "middle");
      continue;
    }
    const double mx = (x1 + x2) / 2;
    d = "M" + html::num(x1) + "," + html::num(y1) + " C" + html::num(mx) + "," + html::num(y1) + " " + html::num(mx) +
        "," + html::num(y2) + " " + html::num(x2 - 2) + "," + html::num(y2);
    svg.raw("<path d=\"" + d + "\" class=\"edge\">" + html::title(tip) + "</path>");
    svg.text(x1 + 8, y1 - 6, edge_label(*n.out), "edge-label");
  }
  for (const Node& n : nodes) {
    std::string tip = ranks_label(n.ranks) + (n.state.empty() ? "" : ": " + n.state);
    if (n.out) tip += "\n" + ev::edge(*n.out);
    svg.begin_group(n.root ? "node root" : "node");
    svg.rect(n.x, n.y, kBoxW, kBoxH, n.root ? "box-root" : "box", tip, 6);
    svg.text(n.x + 12, n.y + 19, ranks_label(n.ranks), "node-title");
    svg.text(n.x + 12, n.y + 36, n.state, "node-state");
    svg.end_group();
  }
  return "<figure><figcaption>" + html::esc(caption) + "</figcaption>" + svg.str() + "</figure>";
}

}  // namespace scout::cli::report
