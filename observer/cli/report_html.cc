// `scout report --html` (observer/cli/report_html.h): assembles the page from the store.
#include "observer/cli/report_html.h"

#include <openssl/evp.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "observer/ckpt/ckpt_store.h"
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/cli/html.h"
#include "observer/cli/report_pictures.h"
#include "observer/cli/words.h"
#include "observer/export/atomic_file.h"
#include "observer/export/snapshot.h"
#include "scout/version.h"

namespace scout::cli {
namespace {

using html::esc;

// At most this many findings get a section of their own (all are in the table), this many
// replay cycles a row (failed and inconclusive ones first).
constexpr size_t kMaxFindingSections = 100;
constexpr size_t kMaxCycleRows = 60;
// The words of a finding start unfolded up to this many lines.
constexpr size_t kMaxOpenLines = 45;

// 'sha256-<base64>' of the script, for the page's Content-Security-Policy.
std::string script_hash(const std::string& script) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(script.data(), script.size(), md, &n, EVP_sha256(), nullptr);
  unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int len = EVP_EncodeBlock(b64, md, static_cast<int>(n));
  return "'sha256-" + std::string(reinterpret_cast<char*>(b64), size_t(len)) + "'";
}

std::string badge(const std::string& cls, const std::string& text) {
  return "<span class=\"badge " + esc(cls) + "\">" + esc(text) + "</span>";
}

std::string kind_badge(obs::FindingKind k) {
  return badge(std::string("kind-") + obs::to_string(k), obs::to_string(k));
}

std::string verdict_badge(obs::Verdict v) {
  return "<span class=\"verdict " + std::string(obs::to_string(v)) + "\">" + obs::to_string(v) + "</span>";
}

std::string status_badge(bool open) {
  return std::string("<span class=\"status ") + (open ? "open\">open" : "closed\">closed") + "</span>";
}

std::string pre(const std::string& text) { return "<pre>" + esc(text) + "</pre>"; }

std::string tile(const std::string& label, const std::string& value, const std::string& detail,
                 const std::string& cls = "") {
  return "<div class=\"tile " + esc(cls) + "\"><div class=\"tile-label\">" + esc(label) +
         "</div><div class=\"tile-value\">" + esc(value) + "</div><div class=\"tile-detail\">" + esc(detail) +
         "</div></div>";
}

std::string fact(const std::string& key, const std::string& value_html) {
  return "<dt>" + esc(key) + "</dt><dd>" + value_html + "</dd>";
}

// The counts per state/outcome as "3 verified, 1 rejected" (zero counts left out).
std::string counts(const std::map<std::string, int>& m, const std::vector<std::string>& order) {
  std::string s;
  for (const auto& k : order) {
    auto it = m.find(k);
    if (it == m.end() || it->second == 0) continue;
    s += (s.empty() ? "" : ", ") + std::to_string(it->second) + " " + k;
  }
  for (const auto& [k, n] : m) {
    if (std::find(order.begin(), order.end(), k) != order.end() || n == 0) continue;
    s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  }
  return s.empty() ? "none" : s;
}

struct Page {
  exporter::Snapshot s;
  std::vector<ckpt::Checkpoint> ckpts;
  std::vector<obs::ReplayCycleRecord> cycles;
  std::string status_text;
  int64_t origin = 0, end = 0;
};

std::string header_html(const Page& p) {
  const std::string job = p.s.job ? p.s.job->job : std::string("(no job header yet)");
  size_t open = 0;
  for (const auto& f : p.s.findings) open += f.open ? 1 : 0;
  std::string out =
      "<header class=\"top\"><div class=\"wrap\"><div class=\"brand\">scout &middot; incident report</div>";
  out += "<h1>job " + esc(job) + "</h1><div class=\"sub\">";
  out += esc(std::to_string(open) + (open == 1 ? " open finding" : " open findings") + ", " +
             std::to_string(p.s.findings.size() - open) + " closed; " + std::to_string(p.s.ranks.size()) +
             (p.s.ranks.size() == 1 ? " rank" : " ranks") + "; as of " + fmt_utc(p.s.as_of_ns()));
  out += "</div></div></header>";
  return out;
}

std::string summary_html(const Page& p) {
  const exporter::Snapshot& s = p.s;
  size_t open = 0;
  std::map<std::string, int> kinds;
  for (const auto& f : s.findings) {
    open += f.open ? 1 : 0;
    if (f.open) kinds[obs::to_string(f.kind)]++;
  }
  std::map<std::string, int> rank_states, comm_states, ck, outcomes;
  std::set<std::string> hosts;
  for (const auto& r : s.ranks) {
    rank_states[r.state]++;
    hosts.insert(r.host);
  }
  for (const auto& c : s.comms) comm_states[comm_state_shown(c, s.ranks)]++;
  for (const auto& c : p.ckpts) ck[ckpt::to_string(c.state)]++;
  for (const auto& c : p.cycles) outcomes[c.outcome.empty() ? "no verdict" : c.outcome]++;
  std::string out = "<section class=\"tiles\" id=\"summary\">";
  out += tile(
      "findings", std::to_string(open) + " open",
      counts(kinds, {}) + (s.findings.size() > open ? "; " + std::to_string(s.findings.size() - open) + " closed" : ""),
      open ? "alert" : "good");
  out += tile("ranks", std::to_string(s.ranks.size()),
              std::to_string(hosts.size()) + (hosts.size() == 1 ? " host; " : " hosts; ") +
                  counts(rank_states, {"running", "exited", "dead"}));
  out +=
      tile("communicators", std::to_string(s.comms.size()),
           counts(comm_states, {"hung", "stalled", "dead", "active", "finalized"}), comm_states["hung"] ? "alert" : "");
  out += tile("checkpoints", std::to_string(p.ckpts.size()), counts(ck, {"verified", "rejected", "candidate"}),
              ck["rejected"] ? "warn" : "");
  out += tile("replay cycles", std::to_string(p.cycles.size()), counts(outcomes, {"pass", "fail", "inconclusive"}),
              outcomes["fail"] ? "alert" : "");
  return out + "</section>";
}

std::string job_html(const Page& p) {
  const exporter::Snapshot& s = p.s;
  std::string out = "<section id=\"job\"><h2>Job</h2>";
  if (s.job) {
    const obs::JobInfo& j = *s.job;
    if (!j.warning.empty()) out += "<p class=\"warning\">" + esc("warning: " + j.warning) + "</p>";
    if (j.records_lost > 0) {
      out +=
          "<p class=\"warning\">" +
          esc("warning: " + std::to_string(j.records_lost) + " of " + std::to_string(j.records_read + j.records_lost) +
              " records lost (ring overwritten before the observer read them): a finding may be missing") +
          "</p>";
    }
    out += "<dl class=\"facts\">";
    out += fact("job", "<code>" + esc(j.job) + "</code>");
    out += fact("node", esc(std::to_string(j.node_rank) + " of " + std::to_string(j.nodes) +
                            (j.node_rank == 0 ? " (the leader: the job-wide findings)" : "")));
    out += fact("observer", esc(j.observer_version));
    out += fact("started", esc(fmt_utc(j.started_ns)));
    out += fact("last update", esc(fmt_utc(j.updated_ns) + " (up " + fmt_duration(j.updated_ns - j.started_ns) + ")"));
    std::map<std::string, std::vector<int>> hosts;
    for (const auto& r : s.ranks) hosts[r.host].push_back(r.global_rank);
    std::string h;
    size_t listed = 0;
    for (const auto& [host, ranks] : hosts) {
      if (++listed > 8) {
        h += esc(", and " + std::to_string(hosts.size() - 8) + " more");
        break;
      }
      h += (h.empty() ? "" : ", ") + std::string("<code>") + esc(host) + "</code>: " + esc(fmt_ranges(ranks));
    }
    out += fact("hosts", h.empty() ? "-" : h);
    out += fact("records", esc(std::to_string(j.records_read) + " read, " + std::to_string(j.records_lost) + " lost, " +
                               std::to_string(j.segments_refused) + " segment files refused"));
  } else {
    out += "<p>The observer has not written the job header yet.</p>";
  }
  out += fact("store", "<code>" + esc(s.store_path) + "</code>");
  out += "</dl>";
  out += "<details><summary>The job at the last update, as <code>scout status</code> prints it</summary>" +
         pre(p.status_text) + "</details>";
  return out + "</section>";
}

std::string findings_table_html(const Page& p) {
  std::string out = "<section id=\"findings\"><h2>Findings</h2>";
  if (p.s.findings.empty()) return out + "<p class=\"none\">No findings: nothing was found wrong.</p></section>";
  out +=
      "<table class=\"findings\"><thead><tr><th>ID</th><th>kind</th><th>verdict</th><th>status</th>"
      "<th>suspects</th><th>peer</th><th>communicator</th><th>operation</th><th class=\"num\">first seen</th>"
      "<th class=\"num\">last seen</th><th>summary</th></tr></thead><tbody>";
  for (const auto& f : p.s.findings) {
    const std::string id = std::to_string(f.id);
    out += "<tr data-finding=\"" + id + "\"><td class=\"num\"><a href=\"#finding-" + id + "\">#" + id +
           "</a></td><td>" + kind_badge(f.kind) + "</td><td>" + verdict_badge(f.verdict) +
           "</td><td class=\"nowrap\">" + status_badge(f.open) + "</td><td class=\"strong\">" +
           esc(suspect_ranks(f.suspects)) + "</td><td>" + esc(f.peer ? std::to_string(f.peer->global_rank) : "-") +
           "</td><td>" + esc(comm_words(f)) + "</td><td class=\"nowrap\">" + esc(key_words(f)) +
           "</td><td class=\"num\">" + esc(fmt_rel(f.first_seen_ns, p.origin)) + "</td><td class=\"num\">" +
           esc(fmt_rel(f.last_seen_ns, p.origin)) + "</td><td>" + esc(f.summary) + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

std::string timeline_html(const Page& p) {
  if (p.s.findings.empty() && p.ckpts.empty() && p.cycles.empty()) return "";
  return "<section id=\"timeline\"><h2>Timeline</h2>" +
         report::timeline_picture(p.s.findings, p.ckpts, p.cycles, p.origin, p.end) +
         "<p class=\"hint\">Bars run from when a finding was first seen to when it was last seen; select one to go "
         "to it. Diamonds: checkpoints (green verified, red rejected, grey candidate). Replay cycles: green passed, "
         "red failed, amber inconclusive.</p></section>";
}

// The replay cycle a finding's evidence names (`replay.cycle`, docs/findings.md "straggler"), as
// a line linking to its row.
std::string replay_note(const Page& p, const obs::Finding& f) {
  if (!f.evidence.is_object() || !f.evidence.contains("replay")) return "";
  const nlohmann::json& r = f.evidence["replay"];
  if (!r.is_object() || !r.contains("cycle") || !r["cycle"].is_number_unsigned()) return "";
  const uint64_t cycle = r["cycle"].get<uint64_t>();
  const obs::ReplayCycleRecord* c = nullptr;
  for (const auto& x : p.cycles)
    if (x.cycle == cycle && x.started_ns <= f.last_seen_ns) c = &x;
  if (!c) return "";
  const std::string found = found_text(*c);
  return "<p class=\"replay-note\">Replay cycle <a href=\"#replay-" + std::to_string(c->id) + "\">" +
         std::to_string(c->cycle) + "</a> (" + esc(c->trigger) + ") measured this: <span class=\"outcome " +
         esc(c->outcome) + "\">" + esc(c->outcome.empty() ? "no verdict" : c->outcome) + "</span>" +
         (found == "-" ? "" : esc("; found: " + found)) + "</p>";
}

std::string finding_html(const Page& p, store::StoreReader& rd, const obs::Finding& f) {
  const std::string id = std::to_string(f.id);
  std::string who;
  if (f.suspects.empty()) {
    who = "no suspect named";
  } else {
    for (size_t i = 0; i < f.suspects.size() && i < 4; ++i) who += (i ? "; " : "") + suspect_words(f.suspects[i]);
    if (f.suspects.size() > 4) who += "; and " + std::to_string(f.suspects.size() - 4) + " more";
  }
  if (f.peer) who += " \xE2\x86\x94 " + suspect_words(*f.peer);
  std::string out = "<section class=\"finding kind-" + std::string(obs::to_string(f.kind)) + "\" id=\"finding-" + id +
                    "\" data-finding=\"" + id + "\">";
  out += "<h2>" + kind_badge(f.kind) + " <span class=\"fid\">#" + id + "</span> " + verdict_badge(f.verdict) + " " +
         status_badge(f.open) + "<span class=\"who\">" + esc(who) + "</span></h2>";
  if (!f.summary.empty()) out += "<p class=\"summary\">" + esc(f.summary) + "</p>";
  const std::string picture = report::finding_picture(rd, f);
  if (!picture.empty()) out += "<div class=\"picture\">" + picture + "</div>";
  out += replay_note(p, f);
  // Long explanations (a hang of many ranks lists every wait) start folded.
  const std::string words = explain_text(f, p.origin);
  const size_t lines = size_t(std::count(words.begin(), words.end(), '\n'));
  out += std::string("<details") + (lines <= kMaxOpenLines ? " open" : "") +
         "><summary>In words, as <code>scout explain " + id + "</code> prints it" +
         (lines <= kMaxOpenLines ? "" : " (" + std::to_string(lines) + " lines)") + "</summary>" + pre(words) +
         "</details>";
  return out + "</section>";
}

std::string checkpoints_html(const Page& p) {
  if (p.ckpts.empty()) return "";
  std::string out =
      "<section id=\"checkpoints\"><h2>Checkpoints</h2><table><thead><tr><th>ID</th><th class=\"num\">step</th>"
      "<th>state</th><th>framework</th><th>path</th><th "
      "class=\"num\">completed</th><th>reason</th></tr></thead><tbody>";
  for (const auto& c : p.ckpts) {
    std::string reason = c.state == ckpt::State::kCandidate
                             ? "waiting: " + std::to_string(c.cycles.size()) + " clean cycles so far"
                             : c.reason;
    std::string links;
    for (int64_t fid : c.finding_ids)
      links += " <a href=\"#finding-" + std::to_string(fid) + "\">#" + std::to_string(fid) + "</a>";
    out += "<tr id=\"checkpoint-" + std::to_string(c.id) + "\"><td class=\"num\">" + std::to_string(c.id) +
           "</td><td class=\"num\">" + std::to_string(c.step) + "</td><td>" +
           badge(std::string("ck-") + ckpt::to_string(c.state), ckpt::to_string(c.state)) + "</td><td>" +
           esc(c.framework) + "</td><td><code>" + esc(c.path) + "</code></td><td class=\"num\">" +
           esc(fmt_rel(c.completed_ns, p.origin)) + "</td><td>" + esc(reason) + links + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

std::string cycles_html(const Page& p) {
  if (p.cycles.empty()) return "";
  // Every cycle that did not pass, then the latest ones, up to kMaxCycleRows, in time order.
  std::vector<const obs::ReplayCycleRecord*> rows;
  for (const auto& c : p.cycles)
    if (c.outcome != "pass") rows.push_back(&c);
  for (auto it = p.cycles.rbegin(); it != p.cycles.rend() && rows.size() < kMaxCycleRows; ++it)
    if (it->outcome == "pass") rows.push_back(&*it);
  if (rows.size() > kMaxCycleRows) rows.resize(kMaxCycleRows);
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    return a->started_ns < b->started_ns || (a->started_ns == b->started_ns && a->id < b->id);
  });
  auto count = [](const nlohmann::json& d, const char* key) {
    return d.is_object() && d.contains(key) && d[key].is_array() ? d[key].size() : size_t(0);
  };
  std::string out = "<section id=\"replay\"><h2>Replay cycles</h2>";
  if (rows.size() < p.cycles.size()) {
    out += "<p class=\"hint\">" +
           esc(std::to_string(p.cycles.size() - rows.size()) +
               " earlier cycles that passed are not listed (scout replay list shows every cycle).") +
           "</p>";
  }
  out +=
      "<table><thead><tr><th>ID</th><th class=\"num\">cycle</th><th>trigger</th><th class=\"num\">started</th>"
      "<th class=\"num\">took</th><th>backend</th><th>verdict</th><th class=\"num\">recipes</th>"
      "<th class=\"num\">GPUs</th><th>found</th></tr></thead><tbody>";
  for (const auto* c : rows) {
    out += "<tr id=\"replay-" + std::to_string(c->id) + "\"><td class=\"num\">" + std::to_string(c->id) +
           "</td><td class=\"num\">" + std::to_string(c->cycle) + "</td><td>" + esc(c->trigger) +
           "</td><td class=\"num\">" + esc(fmt_rel(c->started_ns, p.origin)) + "</td><td class=\"num\">" +
           esc(c->ended_ns > 0 ? fmt_duration(c->ended_ns - c->started_ns) : "-") + "</td><td>" +
           esc(c->backend.empty() ? "-" : c->backend) + "</td><td>" +
           badge(c->outcome.empty() ? "none" : c->outcome, c->outcome.empty() ? "no verdict" : c->outcome) +
           "</td><td class=\"num\">" + std::to_string(count(c->detail, "recipes")) + "</td><td class=\"num\">" +
           std::to_string(count(c->detail, "participants")) + "</td><td>" + esc(found_text(*c)) + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

}  // namespace

std::string report_html(store::StoreReader& rd) {
  Page p;
  p.s = exporter::load_snapshot(rd, /*with_ops=*/false);
  p.ckpts = ckpt::CkptStore::open_reader(rd.path())->checkpoints();
  p.cycles = rd.replay_cycles();
  {
    std::ostringstream st;
    StatusOptions so;
    so.prog = "scout";  // a page is read elsewhere: its hints name the command, not this binary's path
    cmd_status(rd, so, st);
    p.status_text = st.str();
  }
  p.origin = p.s.origin_ns();
  p.end = p.s.as_of_ns();
  for (const auto& f : p.s.findings) p.end = std::max(p.end, f.last_seen_ns);
  for (const auto& c : p.ckpts) p.end = std::max(p.end, c.completed_ns);
  for (const auto& c : p.cycles) p.end = std::max(p.end, std::max(c.started_ns, c.ended_ns));

  const std::string script = report_script();
  const std::string job = p.s.job ? p.s.job->job : std::string();
  std::string out;
  out.reserve(256 * 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:; base-uri 'none'; form-action 'none'; script-src " +
      script_hash(script) + "\">";
  out += "<meta name=\"generator\" content=\"scout " + esc(kVersion) + "\">";
  out += "<title>scout report: job " + esc(job) + "</title><style>" + std::string(report_css()) +
         "</style></head>\n<body>";
  // The arrow head every wait-for graph uses.
  out +=
      "<svg width=\"0\" height=\"0\" class=\"defs\" aria-hidden=\"true\"><defs><marker id=\"arrow\" "
      "viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
      "<path d=\"M0,0 L10,5 L0,10 z\" class=\"arrow-head\"/></marker></defs></svg>";
  out += header_html(p);
  out += "<main>";
  out += summary_html(p);
  out += job_html(p);
  out += findings_table_html(p);
  out += timeline_html(p);
  for (size_t i = 0; i < p.s.findings.size(); ++i) {
    if (i == kMaxFindingSections) {
      out += "<section><p class=\"hint\">" +
             esc(std::to_string(p.s.findings.size() - kMaxFindingSections) +
                 " more findings are in the table above; scout explain ID shows each.") +
             "</p></section>";
      break;
    }
    out += finding_html(p, rd, p.s.findings[i]);
  }
  out += checkpoints_html(p);
  out += cycles_html(p);
  out += "</main><footer><div class=\"wrap\">" +
         esc("Written by scout " + std::string(kVersion) + " from " + p.s.store_path + " as of " +
             fmt_utc(p.s.as_of_ns()) + ". Times are relative to the observer's start (" + fmt_utc(p.origin) +
             "). This file is self-contained: it loads nothing.") +
         "</div></footer>";
  out += "<div id=\"script-errors\" class=\"script-errors\" hidden></div>";
  out += "<script>" + script + "</script></body></html>\n";
  return out;
}

int cmd_report_html(store::StoreReader& rd, const std::string& path, std::ostream& out) {
  const std::string page = report_html(rd);
  if (path == "-") {
    out << page;
    return kExitOk;
  }
  std::string err;
  if (!exporter::write_file_atomic(path, page, &err)) throw UsageError(err);
  size_t findings = rd.findings().size();
  out << "report: " << path << " (" << fmt_bytes(page.size()) << "; " << findings
      << (findings == 1 ? " finding" : " findings") << ")\n";
  return kExitOk;
}

}  // namespace scout::cli
