// `scout findings`: one line per finding (table), or one JSON object per line with exactly the
// keys of obs::to_json (observer/model/finding.h).
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/cli/words.h"
#include "observer/export/snapshot.h"

namespace scout::cli {

int cmd_findings(store::StoreReader& rd, const FindingsOptions& o, std::ostream& out) {
  store::FindingFilter filter;
  filter.open_only = o.open_only;
  std::vector<obs::Finding> fs = rd.findings(filter);
  if (o.json) {
    for (const auto& f : fs)
      out << obs::to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (fs.empty()) {
    out << (o.open_only ? "no open findings\n" : "no findings\n");
    return kExitOk;
  }
  exporter::Snapshot s;
  s.job = rd.job();
  s.findings = fs;
  const int64_t origin = s.origin_ns();
  Table t;
  t.headers = {"ID",   "KIND", "VERDICT",    "STATUS",    "SUSPECTS", "PEER",
               "COMM", "KEY",  "FIRST SEEN", "LAST SEEN", "SUMMARY"};
  t.right_align = {true, false, false, false, false, false, false, false, true, true, false};
  for (const auto& f : fs) {
    t.rows.push_back({std::to_string(f.id), obs::to_string(f.kind), obs::to_string(f.verdict),
                      f.open ? "open" : "closed", suspect_ranks(f.suspects),
                      f.peer ? std::to_string(f.peer->global_rank) : "-", comm_words(f), key_words(f),
                      fmt_rel(f.first_seen_ns, origin), fmt_rel(f.last_seen_ns, origin),
                      cause_brief(f).empty() ? f.summary : f.summary + " (" + cause_brief(f) + ")"});
  }
  out << t.render();
  return kExitOk;
}

}  // namespace scout::cli
