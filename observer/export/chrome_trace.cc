#include "observer/export/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "observer/export/json.h"
#include "observer/model/finding.h"

namespace scout::exporter {
namespace {

nlohmann::json meta_event(const char* name, int pid, int tid, nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"ts", 0}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

// Hosts as trace processes, ranks as threads.
struct Tracks {
  std::map<int, const obs::RankInfo*> rank_info;
  std::map<std::string, int> host_pid;
  std::set<int> all_ranks;  // every rank with a thread
  int pid_of(int rank) {
    auto it = rank_info.find(rank);
    return host_pid[it == rank_info.end() ? std::string("unknown") : it->second->host];
  }
};

// Microseconds since `origin` (ns).
double us_since(int64_t origin, int64_t ns) { return static_cast<double>(ns - origin) / 1e3; }

// One event per rank and stored operation: a span from GPU start to end (to `as_of` while
// running), or an instant at the enqueue of one that never started.
void add_op_events(const Snapshot& s, Tracks& tracks, int64_t origin, int64_t as_of, nlohmann::json& events) {
  auto us = [&](int64_t ns) { return us_since(origin, ns); };
  auto pid_of = [&](int rank) { return tracks.pid_of(rank); };
  std::map<int64_t, const obs::OpSummary*> ops;
  for (const auto& o : s.ops) ops[o.op_id] = &o.op;
  for (const auto& tr : s.timings) {
    auto it = ops.find(tr.op_id);
    if (it == ops.end()) continue;
    const obs::OpSummary& o = *it->second;
    const obs::OpRankTiming& t = tr.t;
    std::string name = o.func + " " + (o.comm_name.empty() ? obs::hex64(o.comm_hash) : o.comm_name);
    nlohmann::json args = {{"comm", o.comm_name},
                           {"comm_hash", obs::hex64(o.comm_hash)},
                           {"seq", o.seq},
                           {"bytes", o.bytes},
                           {"datatype", o.datatype},
                           {"algo", o.algo},
                           {"proto", o.proto},
                           {"verdict", o.fp_verdict},
                           {"meta_verdict", o.meta_verdict},
                           {"comm_rank", t.comm_rank},
                           {"fp_status", t.fp_status}};
    int pid = pid_of(t.global_rank);
    if (t.start_ns > 0) {
      bool complete = t.end_ns >= t.start_ns && t.end_ns > 0;
      int64_t end = complete ? t.end_ns : std::max(as_of, t.start_ns);
      args["complete"] = complete;
      args["lateness_ns"] = exporter::lateness_ns(o, t).value_or(0);
      events.push_back({{"name", name},
                        {"cat", o.kind},
                        {"ph", "X"},
                        {"ts", us(t.start_ns)},
                        {"dur", static_cast<double>(end - t.start_ns) / 1e3},
                        {"pid", pid},
                        {"tid", t.global_rank},
                        {"args", args}});
    } else if (t.api_ns > 0) {
      args["complete"] = false;
      events.push_back({{"name", name + " enqueued, not started"},
                        {"cat", o.kind},
                        {"ph", "i"},
                        {"s", "t"},
                        {"ts", us(t.api_ns)},
                        {"pid", pid},
                        {"tid", t.global_rank},
                        {"args", args}});
    }
  }
}

// The findings as their own process: one thread and span per finding, and an instant on each
// suspect's thread.
void add_finding_events(const Snapshot& s, Tracks& tracks, int64_t origin, nlohmann::json& events) {
  auto us = [&](int64_t ns) { return us_since(origin, ns); };
  auto pid_of = [&](int rank) { return tracks.pid_of(rank); };
  const std::set<int>& all_ranks = tracks.all_ranks;
  if (!s.findings.empty()) {
    events.push_back(meta_event("process_name", 0, 0, {{"name", "scout findings"}}));
    events.push_back(meta_event("process_sort_index", 0, 0, {{"sort_index", -1}}));
  }
  for (const auto& f : s.findings) {
    int tid = static_cast<int>(f.id);
    std::string label = "#" + std::to_string(f.id) + " " + obs::to_string(f.kind);
    events.push_back(meta_event("thread_name", 0, tid, {{"name", label}}));
    nlohmann::json args = {{"id", f.id},
                           {"verdict", obs::to_string(f.verdict)},
                           {"status", f.open ? "open" : "closed"},
                           {"summary", f.summary}};
    std::vector<int> suspects;
    for (const auto& su : f.suspects) suspects.push_back(su.global_rank);
    args["suspects"] = suspects;
    int64_t first = f.first_seen_ns > 0 ? f.first_seen_ns : origin;
    int64_t last = std::max(f.last_seen_ns, first);
    events.push_back({{"name", label},
                      {"cat", "finding"},
                      {"ph", "X"},
                      {"ts", us(first)},
                      {"dur", static_cast<double>(last - first) / 1e3},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", args}});
    for (const auto& su : f.suspects) {
      if (su.global_rank < 0 || !all_ranks.count(su.global_rank)) continue;
      events.push_back({{"name", label},
                        {"cat", "finding"},
                        {"ph", "i"},
                        {"s", "t"},
                        {"ts", us(first)},
                        {"pid", pid_of(su.global_rank)},
                        {"tid", su.global_rank},
                        {"args", args}});
    }
  }
}

}  // namespace

nlohmann::json chrome_trace(const Snapshot& s) {
  // Tracks: hosts -> pids, ranks -> tids.
  std::map<int, const obs::RankInfo*> rank_info;
  std::set<std::string> host_set;
  for (const auto& r : s.ranks) {
    rank_info[r.global_rank] = &r;
    host_set.insert(r.host);
  }
  std::set<int> ranks_seen;
  for (const auto& t : s.timings) ranks_seen.insert(t.t.global_rank);
  for (int r : ranks_seen) {
    if (!rank_info.count(r)) host_set.insert("unknown");
  }
  std::map<std::string, int> host_pid;
  int next = 1;
  for (const auto& h : host_set) host_pid[h] = next++;
  Tracks tracks{rank_info, host_pid, {}};
  auto pid_of = [&](int rank) { return tracks.pid_of(rank); };

  // Origin: the earliest time shown.
  int64_t origin = std::numeric_limits<int64_t>::max();
  auto take = [&](int64_t v) {
    if (v > 0) origin = std::min(origin, v);
  };
  for (const auto& t : s.timings) take(t.t.start_ns ? t.t.start_ns : t.t.api_ns);
  for (const auto& f : s.findings) take(f.first_seen_ns);
  if (origin == std::numeric_limits<int64_t>::max()) origin = s.origin_ns();
  const int64_t as_of = s.as_of_ns();

  nlohmann::json events = nlohmann::json::array();
  for (const auto& [h, pid] : tracks.host_pid) {
    events.push_back(meta_event("process_name", pid, 0, {{"name", h}}));
    events.push_back(meta_event("process_sort_index", pid, 0, {{"sort_index", pid}}));
  }
  std::set<int>& all_ranks = tracks.all_ranks;
  all_ranks = ranks_seen;
  for (const auto& [r, info] : rank_info) all_ranks.insert(r);
  for (int r : all_ranks) {
    auto it = rank_info.find(r);
    std::string name = "rank " + std::to_string(r);
    if (it != rank_info.end()) {
      name += " (pid " + std::to_string(it->second->pid);
      if (!it->second->gpu.empty()) name += ", GPU " + it->second->gpu;
      name += ")";
    }
    events.push_back(meta_event("thread_name", pid_of(r), r, {{"name", name}}));
    events.push_back(meta_event("thread_sort_index", pid_of(r), r, {{"sort_index", r}}));
  }

  add_op_events(s, tracks, origin, as_of, events);
  add_finding_events(s, tracks, origin, events);

  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"format", "scout-chrome-trace"},
            {"version", kChromeTraceVersion},
            {"job", s.job_name()},
            {"origin_ns", origin}}}};
}

std::string check_chrome_trace(const nlohmann::json& trace) {
  if (!trace.is_object()) return "top level is not an object";
  if (!trace.contains("traceEvents") || !trace["traceEvents"].is_array()) { return "no traceEvents array"; }
  std::set<int64_t> named_pids;
  std::set<std::pair<int64_t, int64_t>> named_tids, used;
  size_t i = 0;
  for (const auto& e : trace["traceEvents"]) {
    std::string where = "event " + std::to_string(i++);
    if (!e.is_object()) return where + " is not an object";
    if (!e.contains("name") || !e["name"].is_string()) return where + ": no string name";
    if (!e.contains("ph") || !e["ph"].is_string()) return where + ": no string ph";
    if (!e.contains("ts") || !e["ts"].is_number()) return where + ": no numeric ts";
    if (!e.contains("pid") || !e["pid"].is_number_integer()) return where + ": no integer pid";
    if (!e.contains("tid") || !e["tid"].is_number_integer()) return where + ": no integer tid";
    std::string ph = e["ph"];
    int64_t pid = e["pid"], tid = e["tid"];
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        return where + ": X event without dur >= 0";
      }
    }
    if (ph == "M") {
      std::string n = e["name"];
      bool has_name = e.contains("args") && e["args"].contains("name") && e["args"]["name"].is_string();
      if (n == "process_name") {
        if (!has_name) return where + ": process_name without args.name";
        named_pids.insert(pid);
      } else if (n == "thread_name") {
        if (!has_name) return where + ": thread_name without args.name";
        named_tids.insert({pid, tid});
      }
    } else {
      used.insert({pid, tid});
    }
  }
  for (const auto& [pid, tid] : used) {
    if (!named_pids.count(pid)) return "pid " + std::to_string(pid) + " has no process_name";
    if (!named_tids.count({pid, tid})) {
      return "track pid " + std::to_string(pid) + " tid " + std::to_string(tid) + " has no thread_name";
    }
  }
  return "";
}

}  // namespace scout::exporter
