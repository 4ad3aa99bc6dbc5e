// The timeline of `scout report --html` (observer/cli/report_pictures.h): findings per kind,
// checkpoints and replay cycles on one time axis, from the observer's start to the store's last
// update.
#include <algorithm>
#include <cmath>
#include <map>

#include "observer/cli/format.h"
#include "observer/cli/html.h"
#include "observer/cli/report_pictures.h"

namespace scout::cli::report {
namespace {

// Kinds in the order of their lanes: what stops a job first.
constexpr obs::FindingKind kLaneOrder[] = {
    obs::FindingKind::kHang,   obs::FindingKind::kDeadlock,  obs::FindingKind::kCrash,
    obs::FindingKind::kStall,  obs::FindingKind::kSdc,       obs::FindingKind::kNan,
    obs::FindingKind::kDesync, obs::FindingKind::kStraggler, obs::FindingKind::kSlowLink};

// A tick label for `s` seconds after the start, precise to the tick step: "+12s", "+1.5s",
// "+2m30s", "+1h05m".
std::string tick_label(double s, double step) {
  if (s == 0) return "0";
  if (step < 1) return "+" + html::num(s, step < 0.1 ? 2 : 1) + "s";
  const int64_t t = std::llround(s);
  if (t < 120 && step < 60) return "+" + std::to_string(t) + "s";
  char buf[32];
  if (t < 3600) {
    std::snprintf(buf, sizeof(buf), "+%lldm%02llds", (long long)(t / 60), (long long)(t % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "+%lldh%02lldm", (long long)(t / 3600), (long long)(t / 60 % 60));
  }
  return buf;
}

// Ticks in seconds: 1-2-5 steps below a minute, then minutes and hours.
std::vector<double> time_ticks(double span_s) {
  if (span_s <= 90) return html::ticks(0, span_s, 8);
  std::vector<double> steps = {15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  double step = steps.back();
  for (double s : steps)
    if (span_s / s <= 9) {
      step = s;
      break;
    }
  std::vector<double> t;
  for (double v = 0; v <= span_s + 1e-9; v += step) t.push_back(v);
  return t;
}

}  // namespace

std::string timeline_picture(const std::vector<obs::Finding>& findings, const std::vector<ckpt::Checkpoint>& ckpts,
                             const std::vector<obs::ReplayCycleRecord>& cycles, int64_t origin_ns, int64_t end_ns) {
  const double W = 1080, L = 118, R = 30, T = 14, LANE = 30, SUB = 13;
  const double pw = W - L - R;
  if (end_ns <= origin_ns) end_ns = origin_ns + 1000000000;
  const double span_s = double(end_ns - origin_ns) / 1e9;
  auto X = [&](int64_t ns) {
    const double s = std::clamp(double(ns - origin_ns) / 1e9, 0.0, span_s);
    return L + pw * s / span_s;
  };

  // Lanes: findings of each kind (interval-packed into sub-rows), checkpoints, replay cycles.
  struct Bar {
    const obs::Finding* f;
    int row;
  };
  std::vector<std::pair<obs::FindingKind, std::vector<Bar>>> lanes;
  for (obs::FindingKind k : kLaneOrder) {
    std::vector<Bar> bars;
    std::vector<double> row_end;  // x where each sub-row is free again
    for (const auto& f : findings) {
      if (f.kind != k) continue;
      const double x0 = X(f.first_seen_ns), x1 = std::max(X(f.last_seen_ns), x0 + 8) + 34;
      int row = 0;
      while (size_t(row) < row_end.size() && row_end[size_t(row)] > x0) ++row;
      if (size_t(row) == row_end.size()) row_end.push_back(0);
      if (row >= 6) row = 5;  // at most six sub-rows; later ones overlap the last
      row_end[size_t(row)] = x1;
      bars.push_back({&f, row});
    }
    if (!bars.empty()) lanes.push_back({k, bars});
  }
  double y = T;
  std::vector<double> lane_y, lane_h;
  for (auto& [k, bars] : lanes) {
    int rows = 1;
    for (const Bar& b : bars) rows = std::max(rows, b.row + 1);
    lane_y.push_back(y);
    lane_h.push_back(LANE + SUB * double(rows - 1));
    y += lane_h.back();
  }
  const double ckpt_y = y;
  if (!ckpts.empty()) y += LANE + 8;
  const double replay_y = y;
  if (!cycles.empty()) y += LANE;
  const double axis_y = y + 6;
  const double H = axis_y + 34;

  html::Svg svg(W, H, "chart timeline", "timeline of findings, checkpoints and replay cycles");
  // Lane backgrounds and labels.
  for (size_t i = 0; i < lanes.size(); ++i) {
    svg.rect(L, lane_y[i] + 2, pw, lane_h[i] - 4, i % 2 ? "lane" : "lane alt");
    svg.text(L - 10, lane_y[i] + 19, obs::to_string(lanes[i].first), "lane-label", "end");
  }
  if (!ckpts.empty()) {
    svg.rect(L, ckpt_y + 2, pw, LANE + 4, "lane alt");
    svg.text(L - 10, ckpt_y + 21, "checkpoints", "lane-label", "end");
  }
  if (!cycles.empty()) {
    svg.rect(L, replay_y + 2, pw, LANE - 4, "lane");
    svg.text(L - 10, replay_y + 19, "replay cycles", "lane-label", "end");
  }
  // Time grid.
  const std::vector<double> tt = time_ticks(span_s);
  const double step = tt.size() > 1 ? tt[1] - tt[0] : span_s;
  for (double t : tt) {
    const double x = L + pw * t / span_s;
    svg.line(x, T, x, axis_y, "grid");
    svg.text(x, axis_y + 16, tick_label(t, step), "tick", "middle");
  }
  svg.line(L, axis_y, L + pw, axis_y, "axis");
  svg.text(L + pw, axis_y + 31, "since the observer started; the right end is the store's last update", "axis-label",
           "end");
  // Findings.
  for (size_t i = 0; i < lanes.size(); ++i) {
    for (const Bar& b : lanes[i].second) {
      const obs::Finding& f = *b.f;
      const double x0 = X(f.first_seen_ns), x1 = std::max(X(f.last_seen_ns), x0 + 8);
      const double by = lane_y[i] + 7 + SUB * double(b.row);
      const std::string id = std::to_string(f.id);
      const std::string tip = "#" + id + " " + obs::to_string(f.kind) + " " + obs::to_string(f.verdict) + " (" +
                              (f.open ? "open" : "closed") + "), " + fmt_rel(f.first_seen_ns, origin_ns) + " to " +
                              fmt_rel(f.last_seen_ns, origin_ns) + ": " + f.summary;
      svg.begin_group(std::string("tl-finding kind-") + obs::to_string(f.kind) + (f.open ? "" : " closed"),
                      "#finding-" + id, tip, id);
      svg.rect(x0, by, x1 - x0, 12, "tl-bar", "", 3);
      svg.text(x1 + 4, by + 10, "#" + id, "tl-id");
      svg.end_group();
    }
  }
  // Checkpoints: a diamond at each completion, its step above.
  for (const auto& c : ckpts) {
    const double x = X(c.completed_ns), cy = ckpt_y + 22;
    const std::string tip = "checkpoint step " + std::to_string(c.step) + " (" + c.path +
                            "): " + ckpt::to_string(c.state) + (c.reason.empty() ? "" : ", " + c.reason) +
                            "; completed " + fmt_rel(c.completed_ns, origin_ns);
    svg.begin_group(std::string("tl-ckpt ") + ckpt::to_string(c.state), "#checkpoint-" + std::to_string(c.id), tip);
    svg.raw("<path d=\"M" + html::num(x) + "," + html::num(cy - 6) + " l6,6 l-6,6 l-6,-6 z\" class=\"diamond\"/>");
    svg.text(x, cy - 9, std::to_string(c.step), "tl-step", "middle");
    svg.end_group();
  }
  // Replay cycles: a bar from start to verdict, at least 3 units wide.
  for (const auto& c : cycles) {
    const double x0 = X(c.started_ns), x1 = std::max(X(c.ended_ns > 0 ? c.ended_ns : c.started_ns), x0 + 3);
    const std::string tip = "replay cycle " + std::to_string(c.cycle) + " (" + c.trigger +
                            "): " + (c.outcome.empty() ? "no verdict" : c.outcome) + ", " +
                            fmt_duration(std::max<int64_t>(0, c.ended_ns - c.started_ns)) + ", started " +
                            fmt_rel(c.started_ns, origin_ns);
    svg.begin_group(std::string("tl-replay ") + (c.outcome.empty() ? "none" : c.outcome),
                    "#replay-" + std::to_string(c.id), tip);
    svg.rect(x0, replay_y + 9, x1 - x0, 12, "tl-bar", "", 2);
    svg.end_group();
  }
  return svg.str();
}

}  // namespace scout::cli::report
