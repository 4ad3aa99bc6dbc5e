#include "observer/ckpt/certifier.h"

#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/utf8.h"
#include "observer/ckpt/certificate.h"
#include "observer/store/sqlite.h"

namespace scout::ckpt {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

bool relevant(obs::FindingKind k) {
  return k == obs::FindingKind::kSdc || k == obs::FindingKind::kNan || k == obs::FindingKind::kDesync;
}

// Earliest API time among the records of operations the judge has not decided yet; INT64_MAX
// when none. Counts them in *n.
int64_t oldest_undecided(const obs::Model& m, int64_t* n) {
  int64_t t = INT64_MAX;
  *n = 0;
  for (const auto& [key, c] : m.comms()) {
    for (const auto& [id, op] : c.ops) {
      (*n)++;
      for (const obs::OpSlot& s : op.slots)
        if (s.rec.api_ns > 0) t = std::min(t, s.rec.api_ns);
    }
  }
  return t;
}

}  // namespace

std::string certificate_dir(const std::string& store_path) {
  const size_t slash = store_path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : store_path.substr(0, slash)) + "/certificates";
}

CertifierOptions certifier_options(const config::Config& cfg, const std::string& job, const std::string& store_path,
                                   const std::vector<std::string>& dirs) {
  CertifierOptions o;
  o.job = job;
  o.watch.roots = dirs;
  o.watch.quiet_ns = int64_t(cfg.ckpt_quiet_s * 1e9);
  o.watch.generic = cfg.ckpt_generic;
  o.watch.poll_ns = int64_t(cfg.ckpt_poll_s * 1e9);
  o.cycle_ns = int64_t(cfg.check_cycle_s * 1e9);
  o.k = int(cfg.ckpt_k);
  o.cert_dir = certificate_dir(store_path);
  return o;
}

Certifier::Certifier(CertifierOptions o, CkptStore* store, ReplayCycles* replay)
    : o_(std::move(o)), store_(store), replay_(replay), watcher_(o_.watch) {
  load();
}

void Certifier::load() {
  for (const Checkpoint& c : ckpts_) watcher_.forget(c.path);
  ckpts_ = store_->checkpoints();
  for (const Checkpoint& c : ckpts_) watcher_.mark_known(c.path);
  judged_.clear();
  for (CycleVerdict& v : store_->cycles()) judged_[v.index] = v;
  events_.clear();
  for (const FindingEvent& e : store_->finding_events()) events_[e.id] = e;
  cert_seq_ = 0;
  prev_sha_.clear();
  for (const CertificateRow& r : store_->certificates()) {
    cert_seq_ = r.seq;
    prev_sha_ = r.sha256;
  }
  // A stored position counts only for the same cycle length (a damaged value counts as none).
  const auto len = store_->meta("cycle_ns");
  const auto next = store_->meta("next_cycle");
  auto number = [](const std::string& v, int64_t* out) {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (errno != 0 || end == v.c_str() || *end != '\0') return false;
    *out = x;
    return true;
  };
  int64_t l = 0, n = 0;
  if (len && next && number(*len, &l) && number(*next, &n) && l == o_.cycle_ns) next_cycle_ = n;
}

void Certifier::undo_pass() {
  // The store rolled back what this pass wrote: memory goes back to what the store holds, and
  // certificate files the pass issued (seq beyond the stored chain) are removed, so the chain
  // stays intact and the next pass decides again.
  try {
    store_->rollback();
  } catch (const std::exception&) {}
  std::vector<int64_t> issued;
  for (int64_t seq = cert_seq_; seq > 0; --seq) issued.push_back(seq);
  try {
    load();
  } catch (const std::exception& e) {
    say(std::string("certification: cannot reload its state from the store: ") + printable(e.what()));
    return;
  }
  for (int64_t seq : issued) {
    if (seq <= cert_seq_) break;
    ::unlink(certificate_file(o_.cert_dir, seq).c_str());
  }
}

std::vector<FindingEvent> Certifier::events() const {
  std::vector<FindingEvent> v;
  for (const auto& [id, e] : events_) v.push_back(e);
  return v;
}

void Certifier::note_ops(const obs::JudgeOutput& out, int64_t now_ns) {
  for (const obs::OpSummary& s : out.summaries) {
    const int64_t t = s.first_arrival_ns ? s.first_arrival_ns : (s.end_ns ? s.end_ns : now_ns);
    op_time_[{s.comm_hash, s.func, s.seq}] = t;
    const int64_t idx = floor_div(t, o_.cycle_ns);
    if (idx < next_cycle_) continue;  // its cycle was judged already (it waited past stale_ns)
    evidence_[idx].add(s.comm_hash, s.comm_name, s.nranks, s.fp_verdict, s.ranks_reported, s.bytes);
  }
}

bool Certifier::note_findings(const obs::FindingBoard& board) {
  bool changed = false;
  for (const obs::Finding* f : board.all()) {
    if (!relevant(f->kind) || f->id == 0) continue;
    FindingEvent e;
    e.id = f->id;
    e.kind = obs::to_string(f->kind);
    e.verdict = obs::to_string(f->verdict);
    e.open = f->open;
    e.last_seen_ns = f->last_seen_ns;
    e.event_ns = f->first_seen_ns;
    auto old = events_.find(f->id);
    if (old != events_.end()) e.event_ns = std::min(e.event_ns, old->second.event_ns);
    if (f->key) {
      auto t = op_time_.find({f->comm_hash, f->key->func, f->key->seq});
      if (t != op_time_.end()) e.event_ns = std::min(e.event_ns, t->second);
    }
    if (old != events_.end() && old->second.event_ns == e.event_ns && old->second.open == e.open &&
        old->second.last_seen_ns == e.last_seen_ns)
      continue;
    if (old == events_.end())
      say("certification: " + e.kind + " finding #" + std::to_string(e.id) + " counts against checkpoints");
    events_[e.id] = e;
    store_->put_finding_event(e);
    changed = true;
  }
  return changed;
}

void Certifier::discover(int64_t now_ns) {
  const int64_t horizon = next_cycle_ * o_.cycle_ns;  // end of the last judged cycle
  std::vector<Entry> found = watcher_.poll(now_ns);
  for (const std::string& line : watcher_.take_notes()) say("certification: " + line);
  for (Entry& e : found) {
    Checkpoint c;
    c.path = e.path;
    c.framework = e.framework;
    c.step = e.step;
    c.completed_ns = e.marker_ns;
    c.discovered_ns = now_ns;
    c.manifest = take_manifest(c.path);
    say("checkpoint " + printable(c.path) + " (" + c.framework + ", step " + std::to_string(c.step) + ", " +
        std::to_string(c.manifest.files.size()) + " files, " + std::to_string(c.manifest.bytes) +
        " bytes) is a candidate");
    store_->put_checkpoint(&c);
    ckpts_.push_back(c);
    Checkpoint& ref = ckpts_.back();
    // Cycles judged before it was seen (a late scan) still count.
    bool done = reject_on_findings(ref, events(), horizon, now_ns);
    for (auto it = judged_.begin(); !done && it != judged_.end(); ++it)
      done = apply_cycle(ref, it->second, o_.k, now_ns);
    if (done) decided(ref, now_ns);
    store_->put_checkpoint(&ref);
  }
}

void Certifier::decided(Checkpoint& c, int64_t now_ns) {
  std::vector<CycleVerdict> used;
  for (int64_t idx : c.cycles) {
    auto it = judged_.find(idx);
    if (it != judged_.end()) used.push_back(it->second);
  }
  const int64_t seq = cert_seq_ + 1;
  nlohmann::json doc = make_certificate(o_.job, seq, c, used, prev_sha_, now_ns);
  const std::string text = certificate_text(doc);
  CertificateRow row;
  row.seq = seq;
  row.checkpoint_id = c.id;
  row.sha256 = doc["sha256"].get<std::string>();
  row.prev_sha256 = prev_sha_;
  row.file = certificate_file(o_.cert_dir, seq);
  row.json = text;
  std::string err;
  if (!write_atomic(row.file, text, &err)) say("certificate: " + err);
  if (o_.write_beside) {
    struct stat st;
    if (::lstat(c.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        !write_atomic(c.path + "/scout-certificate.json", text, &err))
      say("certificate: " + err);
  }
  store_->put_certificate(row);
  cert_seq_ = seq;
  prev_sha_ = row.sha256;
  say("checkpoint " + printable(c.path) + " " + to_string(c.state) + ": " + printable(c.reason) + " (certificate " +
      printable(row.file) + ")");
}

void Certifier::judge_cycles(const obs::Model& m, int64_t now_ns) {
  int64_t undecided = 0;
  const int64_t oldest = oldest_undecided(m, &undecided);
  while (true) {
    const int64_t begin = next_cycle_ * o_.cycle_ns;
    const int64_t end = begin + o_.cycle_ns;
    if (now_ns < end + o_.grace_ns) return;
    const bool blocked = oldest < end;
    if (blocked && now_ns < end + o_.stale_ns) return;
    std::optional<ReplayCycleResult> replay;
    if (replay_) {
      // Replay on: wait for a finished replay cycle covering it, as for undecided operations.
      replay = replay_->result(begin, end);
      const bool pending = replay->status == ReplayStatus::kNone || replay->status == ReplayStatus::kUnfinished;
      if (pending && now_ns < end + o_.stale_ns) return;
    }
    CycleVerdict v =
        judge_cycle(next_cycle_, o_.cycle_ns, evidence_[next_cycle_], begin >= watch_start_ns_, events(), replay);
    if (blocked && v.status != CycleStatus::kDirty) {
      v.status = CycleStatus::kIncomplete;
      v.reasons.push_back(std::to_string(undecided) + " operations still undecided " +
                          std::to_string((now_ns - end) / 1'000'000'000) + " s after its end");
    }
    judged_now_.push_back(next_cycle_);  // its evidence is dropped once the pass is committed
    judged_[v.index] = v;
    store_->put_cycle(v);
    for (Checkpoint& c : ckpts_) {
      if (c.state != State::kCandidate) continue;
      bool done = reject_on_findings(c, events(), end, now_ns);
      if (!done) done = apply_cycle(c, v, o_.k, now_ns);
      if (done) decided(c, now_ns);
      store_->put_checkpoint(&c);
    }
    next_cycle_++;
    store_->put_meta("next_cycle", std::to_string(next_cycle_));
    // Operation times of judged cycles are no longer needed (findings resolve within a cycle or two).
    const int64_t keep = (next_cycle_ - 2) * o_.cycle_ns;
    for (auto it = op_time_.begin(); it != op_time_.end();) it = it->second < keep ? op_time_.erase(it) : std::next(it);
  }
}

void Certifier::on_pass(const obs::Model& m, const obs::JudgeOutput& out, const obs::FindingBoard& board,
                        int64_t now_ns) {
  try {
    store_->begin();
    if (watch_start_ns_ == 0) {
      watch_start_ns_ = now_ns;
      if (next_cycle_ < 0) next_cycle_ = floor_div(now_ns, o_.cycle_ns);
      store_->put_meta("cycle_ns", std::to_string(o_.cycle_ns));
      store_->put_meta("next_cycle", std::to_string(next_cycle_));
      store_->put_meta("k", std::to_string(o_.k));  // for the CLI's "verifies in" (observer/cli/ckpt_words.h)
    }
    note_ops(out, now_ns);
    if (note_findings(board)) {
      const int64_t horizon = next_cycle_ * o_.cycle_ns;
      for (Checkpoint& c : ckpts_) {
        if (reject_on_findings(c, events(), horizon, now_ns)) {
          decided(c, now_ns);
          store_->put_checkpoint(&c);
        }
      }
    }
    discover(now_ns);
    judge_cycles(m, now_ns);
    store_->commit();
    for (int64_t idx : judged_now_) evidence_.erase(idx);
    judged_now_.clear();
    if (failed_passes_ > 0) {
      say("certification: its store writes succeed again after " + std::to_string(failed_passes_) +
          " failed passes (redone from the store's state)");
      failed_passes_ = 0;
    }
  } catch (const std::exception& e) {
    // A store write that failed (full disk, lock timeout, read-only file system) or anything a
    // checkpoint directory holds must not stop the observer (a crash here would repeat at every
    // restart): the pass is undone and retried at the next, said once per distinct reason.
    judged_now_.clear();
    failed_passes_++;
    const std::string why = printable(e.what());
    if (failures_.insert(why).second) say("certification: pass undone, retried at the next: " + why);
    undo_pass();
  }
}

}  // namespace scout::ckpt
