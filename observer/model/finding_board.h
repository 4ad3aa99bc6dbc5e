// The observer's findings, one per failure (dedup_key), updated while it lasts.
//
// Detectors report() a finding each time they see the failure and close() it when it stops
// (hangs, stragglers, slow links); findings about one event (sdc, desync, nan, crash) stay open
// until a person deals with them. flush_to() hands every finding changed since the last flush to
// the Sink (upsert by dedup_key; the Sink assigns ids).
//
// Cost: find, report and close are O(log F) in the F findings held (a hash index by key); every
// change gets a stamp, so consumers that follow the board each pass (the leader's merge, the
// forwarding of findings to the leader, flush_to) read only what changed since they last looked
// (changed_since), never the whole board.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
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
  // Upserts each finding changed since the last flush (does not call sink.flush()), in the order
  // of their first change since then. Returns their positions, for unflushed().
  std::vector<size_t> flush_to(Sink& sink);
  // The sink could not store the batch these findings were put in: they are put again at the
  // next flush_to (a full disk must not lose a finding for good).
  void unflushed(const std::vector<size_t>& positions);
  size_t size() const { return entries_.size(); }
  size_t open_count() const { return open_; }

  // Stamp of the latest change (report or close); 0 before any. Stamps only grow.
  uint64_t stamp() const { return stamp_; }
  // The findings whose latest change has a stamp above `since`, in stamp order: what changed
  // after a consumer that last looked at stamp() == since. O(changed + log F).
  std::vector<const Finding*> changed_since(uint64_t since) const;
  // Position of the finding in first-report order (as in all()); -1 if there is none.
  int64_t order(const std::string& dedup_key) const;

 private:
  struct Entry {
    Finding f;
    uint64_t stamp = 0;  // latest change
    bool dirty = false;  // changed since the last flush_to
  };
  void touch(size_t i);

  std::deque<Entry> entries_;                      // first-report order; never removed (stable addresses)
  std::unordered_map<std::string, size_t> index_;  // dedup_key -> entry
  std::map<uint64_t, size_t> by_stamp_;            // latest stamp -> entry
  std::vector<size_t> dirty_;                      // entries changed since the last flush, first change first
  uint64_t stamp_ = 0;
  size_t open_ = 0;
};

}  // namespace scout::obs
