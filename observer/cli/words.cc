#include "observer/cli/words.h"

#include "observer/cli/format.h"

namespace scout::cli {

std::string suspect_words(const obs::Suspect& s) {
  std::string out = s.global_rank >= 0 ? "rank " + std::to_string(s.global_rank) : "rank ?";
  std::vector<std::string> parts;
  if (!s.host.empty()) parts.push_back(s.host);
  if (s.pid > 0) parts.push_back("pid " + std::to_string(s.pid));
  if (!s.gpu.empty()) parts.push_back("GPU " + s.gpu);
  if (!parts.empty()) {
    out += " (";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    out += ")";
  }
  return out;
}

std::string suspect_ranks(const std::vector<obs::Suspect>& v) {
  std::vector<int> ranks;
  for (const auto& s : v) ranks.push_back(s.global_rank);
  return ranks.empty() ? "-" : fmt_ranges(ranks);
}

std::string comm_words(const obs::Finding& f) {
  if (f.comm_hash == 0) return "-";
  return f.comm_name.empty() ? obs::hex64(f.comm_hash) : f.comm_name;
}

std::string key_words(const obs::Finding& f) {
  if (!f.key) return "-";
  return f.key->func + " #" + std::to_string(f.key->seq);
}

}  // namespace scout::cli
