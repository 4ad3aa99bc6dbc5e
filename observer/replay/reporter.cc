#include "observer/replay/reporter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/clock.h"
#include "observer/detect/finding_util.h"
#include "observer/replay/lookup.h"

namespace scout::obs {
namespace {

// The summary of a replay sdc finding about global rank `rank` (of this node or, across nodes,
// another), named by `first` (peer: the sender of a corrupting link, -1 none).
std::string sdc_summary(const Model& m, int rank, const replay::SdcVerdict& first, int peer, const CycleResult& d) {
  using replay::SdcCheck;
  const std::string me = replay_who(m, rank, d);
  if (first.check == SdcCheck::kLink ||
      (peer >= 0 && first.check != SdcCheck::kGemmVote && first.check != SdcCheck::kGemmSelf))
    return "replay: data " + me + " receives from " + replay_who(m, peer, d) + " arrives corrupted (" + first.recipe +
           ")";
  if (first.check == SdcCheck::kGemmSelf)
    return "replay: the GPU of " + me + ", " + first.gpu + ", gives different bits for the same " + first.recipe +
           " on two runs";
  if (first.check == SdcCheck::kGemmVote)
    return "replay: the GPU of " + me + ", " + first.gpu + ", computes " + first.recipe +
           (d.job.trigger == Trigger::kCross ? " differently from the majority of its class's GPUs across nodes"
                                             : " differently from the majority of its peers");
  return "replay: " + me + " received a wrong result in " + first.recipe;
}

// "1 s", "0.5 s": a recipe deadline in words.
std::string secs(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof(b), "%g s", double(ns) / 1e9);
  return b;
}

// The communicators spanning nodes (cross_store.h) that hold both ends of slow pair `sp`, with
// each end's comm rank in them: the live network-link detector names a far end by its comm rank
// only (observer/detect/netlink.cc) and so sees that replay already names the pair.
std::vector<EvReplayComm> spanning_comms(const std::map<std::string, std::map<int, int>>& comm_ranks,
                                         const replay::SlowPair& sp) {
  std::vector<EvReplayComm> out;
  for (const auto& [key, ranks] : comm_ranks) {
    int ca = -1, cb = -1;
    for (const auto& [c, g] : ranks) {
      if (g == sp.a) ca = c;
      if (g == sp.b) cb = c;
    }
    const size_t colon = key.rfind(':');
    if (ca < 0 || cb < 0 || colon == std::string::npos) continue;
    out.push_back({key.substr(0, colon), std::atoi(key.c_str() + colon + 1), {ca, cb}});
  }
  return out;
}

// Whether `f` is a finding replay made (its evidence's source).
bool from_replay(const Finding& f) { return f.evidence.is_object() && f.evidence.value("source", "") == "replay"; }

}  // namespace

Suspect replay_suspect(const Model& m, int global_rank, const CycleResult& d) {
  const int proc = proc_of_rank(m, global_rank);
  if (proc >= 0) return suspect_of(m, proc);
  Suspect s;
  s.global_rank = global_rank;
  auto it = d.remote.find(global_rank);
  if (it != d.remote.end()) {
    s.host = it->second.host;
    s.pid = it->second.pid;
    s.gpu = it->second.gpu;
  }
  return s;
}

std::string replay_who(const Model& m, int global_rank, const CycleResult& d) {
  const int proc = proc_of_rank(m, global_rank);
  if (proc >= 0) return who(m, proc);
  const Suspect s = replay_suspect(m, global_rank, d);
  return "rank " + std::to_string(global_rank) +
         (s.pid ? " (" + s.host + ", pid " + std::to_string(s.pid) + ")" : std::string(" (another node)"));
}

void ReplayReporter::apply(const Model& m, FindingBoard& board, const CycleResult& d,
                           const std::map<std::string, std::map<int, int>>& comm_ranks, int64_t now_ns) {
  if (!d.have_verdict) return;
  if (d.report) {
    report_sdc(m, board, d, now_ns);
    report_slow_pairs(m, board, d, comm_ranks, now_ns);
  }
  note_causes(d);
  if (d.job.trigger == Trigger::kStuck && !d.job.finding.empty()) note_stuck(m, d, now_ns);
}

void ReplayReporter::note_stuck(const Model& m, const CycleResult& d, int64_t now_ns) {
  const replay::CycleVerdict& v = d.verdict;
  StuckResult res;
  EvStuckReplay& e = res.replay;
  e.cycle = d.record.cycle;
  e.timed_out = v.timed_out;
  e.recipes = int(d.job.recipes.size());
  e.deadline_ms = to_ms(d.job.recipe_deadline_ns);
  e.named_ns = shm::wall_ns();
  const std::string after = " after " + secs(d.job.recipe_deadline_ns);
  const std::string cycle = "replay cycle " + std::to_string(e.cycle) + ": ";
  // One verdict, or several GPUs: named. A mix of GPUs and links is said, not attributed.
  bool all_gpu = !v.timeouts.empty();
  for (const replay::TimeoutVerdict& t : v.timeouts) all_gpu &= t.verdict == "gpu";
  if (v.timeouts.size() == 1 || all_gpu) {
    e.verdict = v.timeouts[0].verdict;
    for (const replay::TimeoutVerdict& t : v.timeouts)
      for (int r : t.ranks) {
        e.ranks.push_back(r);
        res.suspects.push_back(replay_suspect(m, r, d));
      }
  } else {
    e.verdict = "none";
  }
  const size_t others = v.timed_out.size();
  if (e.verdict == "link") {
    const replay::TimeoutVerdict& t = v.timeouts[0];
    e.words = cycle + "link " + std::to_string(t.ranks[0]) + "->" + std::to_string(t.ranks[1]) + " and " +
              std::to_string(t.ranks[1]) + "->" + std::to_string(t.ranks[0]) + " timed out" + after + "; " +
              (others == 2 ? std::string("every other pair delivered and every GPU finished its GEMM")
                           : std::to_string(others - 2) + " other recipes timed out too, none touching either end");
  } else if (e.verdict == "gpu") {
    std::string names;
    for (size_t i = 0; i < e.ranks.size(); ++i) names += (i ? " and " : "") + replay_who(m, e.ranks[i], d);
    e.words = cycle + "the GEMM on the GPU of " + names + " timed out" + after +
              " while the other GPUs finished it; the links touching it were not launched";
  } else if (v.timed_out.empty()) {
    e.words = cycle + "every GPU finished its GEMM and every pair delivered within " + secs(d.job.recipe_deadline_ns) +
              ": the GPUs and links of this node work";
  } else {
    e.words =
        cycle + std::to_string(v.timed_out.size()) + " recipes timed out" + after + ", naming no single GPU or link";
  }
  (void)now_ns;
  stuck_[d.job.finding] = std::move(res);
}

void ReplayReporter::mark_stuck(FindingBoard& board) const {
  for (auto it = stuck_.begin(); it != stuck_.end(); ++it) {
    const Finding* f = board.find(it->first);
    if (!f || !f->open || !f->evidence.is_object() || f->evidence.value("class", "") != "stuck") continue;
    const StuckResult& res = it->second;
    // Already written since the detector's last report, or named by the finding's own progress
    // sources: left as it is.
    if (f->evidence.contains("replay")) continue;
    if (!f->suspects.empty()) continue;
    Finding g = *f;
    auto with_replay = [&](auto ev) {
      if (!read_evidence(f->evidence, &ev)) return false;
      ev.replay = res.replay;
      if (!res.suspects.empty()) {
        EvStuckTrace tr = ev.trace.value_or(EvStuckTrace{});
        tr.source = "replay";
        tr.verdict = res.replay.verdict;
        tr.replay = res.replay.words;
        ev.trace = tr;
      }
      g.evidence = to_json(ev);
      return true;
    };
    const bool ok = f->kind == FindingKind::kStall ? with_replay(StallEvidence{}) : with_replay(HangEvidence{});
    if (!ok) continue;
    if (!res.suspects.empty()) {
      g.suspects = res.suspects;
      g.verdict = Verdict::kAttributed;
    }
    g.summary += "; " + res.replay.words;
    board.report(std::move(g));
  }
}

void ReplayReporter::report_sdc(const Model& m, FindingBoard& board, const CycleResult& d, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  std::map<int, std::vector<const replay::SdcVerdict*>> by_rank;
  for (const replay::SdcVerdict& s : d.verdict.sdc) by_rank[s.global_rank].push_back(&s);
  for (const auto& [rank, list] : by_rank) {
    // A rank of another node (a cross-node cycle's link, collective or GEMM voter) is named by the
    // host and pid its node published.
    const Suspect suspect = replay_suspect(m, rank, d);
    if (suspect.pid == 0) continue;
    const replay::SdcVerdict& first = *list[0];
    const std::string key = "sdc:replay:" + suspect.host + ":" + std::to_string(suspect.pid);
    // Found again: the finding keeps the evidence of the cycle that found it first (what `scout
    // replay show` of that cycle prints), noting the latest cycle.
    if (const Finding* old = board.find(key); old != nullptr && old->open && from_replay(*old)) {
      Finding again = *old;
      again.last_seen_ns = now_ns;
      if (again.evidence.value("cycle", uint64_t(0)) != rec.cycle) again.evidence["last_cycle"] = rec.cycle;
      board.report(again);
      continue;
    }
    int peer = -1;
    for (const auto* s : list)
      if (s->peer >= 0) peer = s->peer;
    ReplaySdcEvidence e;
    e.source = "replay";
    e.cycle = rec.cycle;
    e.trigger = rec.trigger;
    e.check = to_string(first.check);
    e.recipe = first.recipe;
    e.votes = first.votes;
    e.gpu = first.gpu;
    for (const auto* s : list)
      e.checks.push_back(
          {to_string(s->check), s->recipe, s->votes, s->peer >= 0 ? std::optional<int>(s->peer) : std::nullopt});
    for (const replay::Participant& p : d.job.participants) e.gpus.push_back({p.global_rank, p.gpu});
    for (const auto& [r, x] : d.remote) e.gpus.push_back({r, x.gpu});
    std::sort(e.gpus.begin(), e.gpus.end(),
              [](const EvReplayGpu& a, const EvReplayGpu& b) { return a.global_rank < b.global_rank; });
    Finding f;
    f.kind = FindingKind::kSdc;
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(suspect);
    if (peer >= 0) f.peer = replay_suspect(m, peer, d);
    f.first_seen_ns = rec.started_ns;
    f.last_seen_ns = now_ns;
    f.evidence = to_json(e);
    f.dedup_key = key;
    f.summary = sdc_summary(m, rank, first, peer, d);
    if (list.size() > 1)
      f.summary += "; " + std::to_string(list.size() - 1) + " more of the cycle's checks named it (scout explain)";
    board.report(f);
  }
}

void ReplayReporter::report_slow_pairs(const Model& m, FindingBoard& board, const CycleResult& d,
                                       const std::map<std::string, std::map<int, int>>& comm_ranks, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  // A finding's end as a global rank; one named by its comm rank only (a far end the live
  // detector of another node saw) through the spanning communicators' members (-1 unknown).
  auto global_of = [&](const Finding& g, const Suspect& s) {
    if (s.global_rank >= 0 || s.comm_rank < 0) return s.global_rank;
    auto c = comm_ranks.find(cross_comm_key(g.comm_hash, g.comm_nranks));
    if (c == comm_ranks.end()) return -1;
    auto r = c->second.find(s.comm_rank);
    return r == c->second.end() ? -1 : r->second;
  };
  auto key_of = [](const Suspect& x, const Suspect& y) {
    return "slowlink:link:" + x.host + ":" + std::to_string(x.pid) + ":" + y.host + ":" + std::to_string(y.pid);
  };
  std::set<std::string> slow_now;
  for (const replay::SlowPair& sp : d.verdict.slow_pairs) {
    const Suspect sa = replay_suspect(m, sp.a, d), sb = replay_suspect(m, sp.b, d);
    if (sa.pid == 0 || sb.pid == 0) continue;
    const int pa = proc_of_rank(m, sp.a), pb = proc_of_rank(m, sp.b);
    // The live detector's key for this pair (observer/detect/slowlink.cc: ends in process order;
    // a rank of another node after the local one), or the key of an open finding that already
    // names the pair.
    std::string key = pb >= 0 && (pa < 0 || pb < pa) ? key_of(sb, sa) : key_of(sa, sb);
    bool live = false;  // the live detectors already name this pair: their finding stands
    for (const Finding* g : board.all()) {
      if (g->kind != FindingKind::kSlowLink || !g->open || g->suspects.empty() || !g->peer) continue;
      std::set<int> ends = {global_of(*g, g->suspects[0]), global_of(*g, *g->peer)};
      if (ends != std::set<int>{sp.a, sp.b}) continue;
      key = g->dedup_key;
      live = !from_replay(*g);
    }
    if (live) continue;  // the cycle's verdict (slow_pairs) is in its stored record
    ReplaySlowLinkEvidence e;
    e.cls = "link";
    e.source = "replay";
    e.cycle = rec.cycle;
    e.recipes = sp.recipes;
    e.ms = to_ms(sp.ns);
    e.median_ms = to_ms(sp.median_ns);
    e.thresholds = {rule_.min_ratio, to_ms(rule_.min_ns)};
    if (std::vector<EvReplayComm> c = spanning_comms(comm_ranks, sp); !c.empty()) e.comms = c;
    Finding f;
    f.kind = FindingKind::kSlowLink;
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(sa);
    f.peer = sb;
    f.first_seen_ns = rec.started_ns;
    f.last_seen_ns = now_ns;
    f.dedup_key = key;
    f.evidence = to_json(e);
    f.summary = "replay: the link between " + replay_who(m, sp.a, d) + " and " + replay_who(m, sp.b, d) +
                " is slow: " + ms_text(sp.ns) + " for a transfer the cycle's other pairs do in " +
                ms_text(sp.median_ns) + " (median)";
    board.report(f);
    replay_links_[key] = {std::min(sp.a, sp.b), std::max(sp.a, sp.b)};
    slow_now.insert(key);
  }
  // A pair this cycle measured (either direction) and found normal closes its replay finding.
  std::set<std::pair<int, int>> measured;
  for (const replay::RecipeOutcome& r : d.verdict.recipes) {
    if (r.kind != replay::RecipeKind::kLink || r.outcome == replay::Outcome::kInconclusive) continue;
    for (const replay::Recipe& x : d.job.recipes)
      if (x.id == r.recipe) measured.insert({std::min(x.src, x.dst), std::max(x.src, x.dst)});
  }
  for (auto it = replay_links_.begin(); it != replay_links_.end();) {
    if (!slow_now.count(it->first) && measured.count(it->second)) {
      board.close(it->first, now_ns);
      it = replay_links_.erase(it);
    } else {
      ++it;
    }
  }
}

void ReplayReporter::note_causes(const CycleResult& d) {
  const ReplayCycleRecord& rec = d.record;
  auto note = [&](const std::vector<replay::SlowGpu>& gpus, const char* cause) {
    for (const replay::SlowGpu& s : gpus) {
      EvReplayCause e;
      e.cycle = rec.cycle;
      e.recipe = s.recipe;
      e.ms.emplace();
      for (int64_t x : s.ns) e.ms->push_back(to_ms(x));
      e.median_ms = to_ms(s.median_ns);
      causes_[s.global_rank] = {cause, rec.started_ns, e};
    }
  };
  note(d.verdict.slow_gpus, "gpu");
  // Normal: the GEMM it ran at its class's median is the number that puts the delay in the host.
  note(d.verdict.normal_gpus, "host");
}

bool ReplayReporter::cause_known(int global_rank, int64_t since_ns) const {
  auto it = causes_.find(global_rank);
  return it != causes_.end() && it->second.at_ns >= since_ns;
}

void ReplayReporter::mark_stragglers(FindingBoard& board) const {
  std::vector<Finding> updates;
  for (const Finding* f : board.all()) {
    if (f->kind != FindingKind::kStraggler || !f->open || f->suspects.empty()) continue;
    StragglerEvidence e;
    if (!read_evidence(f->evidence, &e)) continue;  // not the straggler detector's shape: left as it is
    std::string cause = "unknown";
    std::optional<EvReplayCause> detail;
    auto it = causes_.find(f->suspects[0].global_rank);
    if (it != causes_.end() && it->second.at_ns >= f->first_seen_ns) {
      cause = it->second.cause;
      detail = it->second.evidence;
    }
    if (e.cause == cause) continue;
    e.cause = cause;
    e.replay = detail;
    Finding g = *f;
    g.evidence = to_json(e);
    updates.push_back(std::move(g));
  }
  for (Finding& g : updates) board.report(std::move(g));
}

}  // namespace scout::obs
