// The observer's findings, one per failure (dedup_key), updated while it lasts.
//
// Detectors report() a finding each time they see the failure and close() it when it stops
// (hangs, stragglers, slow links); findings about one event (sdc, desync, nan, crash) stay open
// until a person deals with them. flush_to() hands every finding changed since the last flush to
// the Sink (upsert by dedup_key; the Sink assigns ids).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/sink.h"

namespace scout::obs {

class FindingBoard {
 public:
  // Opens (or reopens) the finding with f.dedup_key, or updates it: suspects, peer, verdict,
  // summary, evidence, key, comm and last_seen_ns are replaced; first_seen_ns becomes the
  // earlier of the stored and the new one; id is kept.
  void report(Finding f);
  // Closes the finding with this key if it is open; last_seen_ns = now_ns. False if not open.
  bool close(const std::string& dedup_key, int64_t now_ns);
  const Finding* find(const std::string& dedup_key) const;
  bool is_open(const std::string& dedup_key) const;
  // Every finding, in the order first reported.
  std::vector<const Finding*> all() const;
  // Upserts each finding changed since the last flush (does not call sink.flush()).
  void flush_to(Sink& sink);
  size_t size() const { return order_.size(); }

 private:
  std::map<std::string, Finding> by_key_;
  std::vector<std::string> order_;
  std::vector<std::string> dirty_;
};

}  // namespace scout::obs
