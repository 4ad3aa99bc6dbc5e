#include "observer/replay/triggers.h"

#include <algorithm>

#include "common/clock.h"
#include "common/names.h"
#include "observer/replay/lookup.h"

namespace scout::obs {

using replay::Participant;

ReplayTriggers::ReplayTriggers(const ReplayOptions& opt, int node_rank, std::atomic<uint64_t>* next_cycle,
                               std::function<void(const std::string&)> log)
    : opt_(opt), node_rank_(node_rank), next_cycle_(next_cycle), log_(std::move(log)) {}

namespace {

// The collective class of a record's fields (ranks empty); nullopt for a function replay does
// not re-issue.
std::optional<replay::CollClass> class_of(uint8_t func, uint8_t datatype, uint64_t count, uint8_t algo, uint8_t proto) {
  if (func != shm::kFuncAllReduce && func != shm::kFuncAllGather && func != shm::kFuncReduceScatter &&
      func != shm::kFuncBroadcast)
    return std::nullopt;  // the collectives replay re-issues
  replay::CollClass cls;
  cls.func = shm::func_name(func);
  cls.datatype = shm::datatype_name(datatype);
  cls.elem_bytes = int(shm::datatype_size(datatype));
  cls.count = count;
  cls.algo = algo ? shm::algo_name(algo) : "";
  cls.proto = proto ? shm::proto_name(proto) : "";
  return cls;
}

}  // namespace

void ReplayTriggers::observe(const Model& m, const JudgedOp& j) {
  if (j.displaced || j.id.cls != OpClass::kColl || !j.complete || j.n < 2) return;
  std::optional<replay::CollClass> cls = class_of(j.id.func, j.datatype, j.count, j.algo, j.proto);
  if (!cls) return;
  const Comm* c = comm_by_hash(m, j.comm.hash, j.comm.nranks);
  if (!c) return;
  std::vector<int> members = members_of(m, *c);
  if (members.empty()) return;
  if (std::find(groups_.begin(), groups_.end(), members) == groups_.end() && groups_.size() < 1024)
    groups_.push_back(members);
  cls->ranks = members;
  classes_.add(*cls);
}

void ReplayTriggers::observe_spanning(const Model& m) {
  // Operations of a communicator spanning nodes are never judged on one node (op_judge.h): its
  // classes are read from the live operations' records, the latest kSpanningOpsPerFunc of each
  // function per call (bounded work once a second, whatever the job's rate).
  for (const auto& [key, c] : m.comms()) {
    if (!spans_nodes(c) || c.key.nranks < 2) continue;
    const std::string k = cross_comm_key(key.hash, key.nranks);
    auto it = spanning_.find(k);
    if (it == spanning_.end()) {
      if (spanning_.size() >= kMaxSpanningComms) continue;
      it = spanning_.emplace(k, replay::CollClassSet(kMaxSpanningClasses)).first;
    }
    for (uint8_t f : {shm::kFuncAllReduce, shm::kFuncAllGather, shm::kFuncReduceScatter, shm::kFuncBroadcast}) {
      auto op = c.ops.lower_bound(OpId{OpClass::kColl, uint8_t(f + 1), 0});
      for (size_t n = 0; n < kSpanningOpsPerFunc && op != c.ops.begin(); ++n) {
        --op;
        if (op->first.cls != OpClass::kColl || op->first.func != f) break;
        for (const OpSlot& s : op->second.slots) {
          if (s.lost || s.rec.count == 0) continue;
          if (auto cls = class_of(f, s.rec.datatype, s.rec.count, s.rec.algo, s.rec.proto)) it->second.add(*cls);
          break;
        }
      }
    }
  }
}

bool ReplayTriggers::spans_nodes(const Comm& c) { return !(c.nnodes < 2 && c.members_known()); }

std::vector<replay::GemmShape> ReplayTriggers::gemm_shapes() {
  if (opt_.gemms.empty()) return replay::default_gemms();
  std::vector<replay::GemmShape> g;
  std::string err;
  if (!replay::parse_gemms(opt_.gemms, &g, &err)) {
    if (log_) log_("replay: " + err + "; using the default GEMM set");
    opt_.gemms.clear();
    return replay::default_gemms();
  }
  return g;
}

std::vector<Participant> ReplayTriggers::local_participants(const Model& m) const {
  std::vector<Participant> out;
  for (const Proc& p : m.procs()) {
    if (p.node_rank != node_rank_ || p.state != ProcState::kRunning || p.global_rank < 0 || p.gpu.empty()) continue;
    out.push_back({p.global_rank, p.gpu, p.cuda_dev});
  }
  std::sort(out.begin(), out.end(),
            [](const Participant& a, const Participant& b) { return a.global_rank < b.global_rank; });
  return out;
}

NodeMembers ReplayTriggers::node_members(const Model& m) const {
  NodeMembers n;
  n.node = node_rank_;
  for (const Proc& p : m.procs()) {
    if (p.node_rank != node_rank_ || p.state != ProcState::kRunning || p.global_rank < 0 || p.gpu.empty()) continue;
    n.ranks.push_back({p.global_rank, p.gpu, p.cuda_dev, p.host, p.pid, node_rank_});
  }
  std::sort(n.ranks.begin(), n.ranks.end(),
            [](const CrossMember& a, const CrossMember& b) { return a.global_rank < b.global_rank; });
  for (const auto& [key, c] : m.comms()) {
    if (!spans_nodes(c)) continue;  // on this node only
    std::vector<int> mine;
    std::map<int, int> ranks;
    for (int cr = 0; cr < int(c.ranks.size()); ++cr) {
      const int proc = c.ranks[cr].proc;
      if (proc < 0 || m.proc(proc).node_rank != node_rank_ || m.proc(proc).global_rank < 0) continue;
      mine.push_back(m.proc(proc).global_rank);
      ranks[cr] = m.proc(proc).global_rank;
    }
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end());
    const std::string k = cross_comm_key(key.hash, key.nranks);
    n.comms[k] = mine;
    n.comm_ranks[k] = ranks;
    if (auto it = spanning_.find(k); it != spanning_.end()) n.colls[k] = it->second.classes();
  }
  return n;
}

std::vector<replay::CollClass> ReplayTriggers::colls_within(const std::set<int>& local, const std::vector<int>& members,
                                                            size_t* cursor) const {
  std::vector<const replay::CollClass*> fit;
  for (const replay::CollClass& c : classes_.classes()) {
    const bool on_node = std::all_of(c.ranks.begin(), c.ranks.end(), [&](int r) { return local.count(r) > 0; });
    if (on_node && std::includes(members.begin(), members.end(), c.ranks.begin(), c.ranks.end())) fit.push_back(&c);
  }
  std::vector<replay::CollClass> out;
  const size_t start = cursor && !fit.empty() ? *cursor % fit.size() : 0;
  for (size_t i = 0; i < fit.size() && int(out.size()) < opt_.max_colls; ++i)
    out.push_back(*fit[(start + i) % fit.size()]);
  if (cursor) *cursor = start + out.size();
  return out;
}

std::optional<CycleJob> ReplayTriggers::demand_job(const Model& m, const ReplayRequest& rq, int64_t now_ns,
                                                   std::vector<ReplayCycleRecord>* answered) {
  CycleJob job;
  job.trigger = Trigger::kDemand;
  job.request = rq.id;
  job.recipe_deadline_ns = opt_.recipe_deadline_ns;
  const std::set<int> asked(rq.ranks.begin(), rq.ranks.end());
  for (const Participant& p : local_participants(m))
    if (asked.empty() || asked.count(p.global_rank)) job.participants.push_back(p);
  std::set<int> local;
  std::vector<int> ranks;
  for (const Participant& p : job.participants) {
    local.insert(p.global_rank);
    ranks.push_back(p.global_rank);
  }
  auto wants = [&](const char* kind) {
    return rq.recipes.empty() || std::find(rq.recipes.begin(), rq.recipes.end(), kind) != rq.recipes.end();
  };
  replay::RecipePlan plan;
  plan.seed = next_cycle_->load();
  if (wants("gemm")) plan.gemms = gemm_shapes();
  if (wants("coll")) plan.colls = colls_within(local, ranks);
  if (wants("link")) {
    std::vector<std::pair<int, int>> pairs = replay::pairs_of({ranks});
    if (int(pairs.size()) > opt_.max_pairs) pairs.resize(size_t(opt_.max_pairs));
    plan.links = pairs;
  }
  if (!job.participants.empty()) job.recipes = replay::build_recipes(plan);
  std::string why;
  if (job.participants.empty())
    why = asked.empty() ? "no rank of this node is running with a known GPU"
                        : "none of the requested ranks runs on this node with a known GPU";
  else if (job.recipes.empty())
    why = "nothing to replay: no recipe of the requested kinds among the " + std::to_string(ranks.size()) +
          " rank(s) of this node asked for";
  job.cycle = (*next_cycle_)++;
  job.started_ns = now_ns;
  if (why.empty()) return job;
  ReplayCycleRecord rec;  // answered at once, so the CLI waiting for it is not left hanging
  rec.cycle = job.cycle;
  rec.trigger = to_string(job.trigger);
  rec.started_ns = rec.ended_ns = shm::wall_ns();
  rec.outcome = "inconclusive";
  rec.detail = {{"request", rq.id},
                {"participants", nlohmann::json::array()},
                {"recipes", nlohmann::json::array()},
                {"error", why}};
  answered->push_back(rec);
  if (log_) log_("replay request " + rq.id + ": " + why);
  return std::nullopt;
}

std::vector<replay::GemmShape> ReplayTriggers::periodic_gemms(const Model& m, const std::set<int>& local) {
  if (!opt_.gemms.empty()) return gemm_shapes();
  // The plan is made again only when the set of captured shapes (or of peer groups) grew: its
  // greedy cover over thousands of MoE shapes is not work for every periodic cycle.
  uint64_t key = groups_.size();
  for (const Proc& p : m.procs())
    if (local.count(p.global_rank)) key = key * 1000003 + uint64_t(p.global_rank) * 65537 + p.gemm_shapes.size();
  if (!plan_ || key != plan_key_) {
    std::vector<replay::ObservedShape> observed;
    for (const Proc& p : m.procs()) {
      if (!local.count(p.global_rank)) continue;
      for (const auto& [k, count] : p.gemm_shapes) observed.push_back({k, count, {p.global_rank}});
    }
    if (observed.empty()) return gemm_shapes();
    replay::PlanOptions po;
    for (const auto& g : groups_) {
      std::vector<int> mine;
      for (int r : g)
        if (local.count(r)) mine.push_back(r);
      if (mine.size() > 1) po.peer_groups.push_back(mine);
    }
    plan_ = std::make_shared<replay::ReplayPlan>(replay::make_plan(observed, po));
    plan_key_ = key;
  }
  const replay::ReplayPlan& plan = *plan_;
  if (plan.cycles.empty()) return gemm_shapes();
  const std::vector<size_t>& chosen = plan.cycles[plan_cursor_++ % plan.cycles.size()];
  std::vector<replay::GemmShape> out;
  for (size_t i : chosen) {
    const shm::GemmKey& k = plan.recipes[i].shape;
    replay::GemmShape g;
    g.m = int64_t(k.m);
    g.n = int64_t(k.n);
    g.k = int64_t(k.k);
    // The recipe's datatype is its inputs' (A's); types replay has no kernel for are left out.
    switch (k.a_type) {
      case shm::kGemmR16BF: g.dtype = "bf16"; break;
      case shm::kGemmR16F: g.dtype = "fp16"; break;
      case shm::kGemmR32F: g.dtype = "fp32"; break;
      default: continue;
    }
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out.empty() ? gemm_shapes() : out;
}

std::optional<std::vector<int>> ReplayTriggers::stuck_members(const Model& m, const Finding& f,
                                                              const std::set<int>& local) const {
  if (!f.open || handled_.count(f.dedup_key) || !f.suspects.empty()) return std::nullopt;
  if (f.kind != FindingKind::kStall && f.kind != FindingKind::kHang) return std::nullopt;
  if (!f.evidence.is_object() || f.evidence.value("class", "") != "stuck") return std::nullopt;
  const Comm* c = comm_by_hash(m, f.comm_hash, f.comm_nranks);
  if (!c) return std::nullopt;
  std::vector<int> members = members_of(m, *c);
  // Every member on this node: no proxy between them (a communicator spanning hosts is traced
  // through its network steps, docs/observer.md "Stuck collectives").
  if (members.size() < 2) return std::nullopt;  // members_of: every member known, or none
  for (int r : members)
    if (!local.count(r)) return std::nullopt;
  return members;
}

bool ReplayTriggers::stuck_pending(const Model& m, const FindingBoard& board) const {
  std::set<int> local;
  for (const Participant& p : local_participants(m)) local.insert(p.global_rank);
  for (const Finding* f : board.all())
    if (stuck_members(m, *f, local)) return true;
  return false;
}

std::optional<Trigger> ReplayTriggers::finding_trigger(const Model& m, const FindingBoard& board,
                                                       const ReplayReporter& reporter, const std::set<int>& local,
                                                       replay::RecipePlan* plan) {
  auto mine_of = [&](const Finding& f) {
    const Comm* c = comm_by_hash(m, f.comm_hash, f.comm_nranks);
    std::vector<int> mine;
    if (c)
      for (int r : members_of(m, *c))
        if (local.count(r)) mine.push_back(r);
    return mine;
  };
  for (const Finding* f : board.all()) {
    if (!f->open || handled_.count(f->dedup_key)) continue;
    const bool from_replay = f->evidence.is_object() && f->evidence.value("source", "") == "replay";
    std::optional<Trigger> t;
    if (std::optional<std::vector<int>> members = stuck_members(m, *f, local)) {
      // A stuck collective inside this node: every directed pair of its communicator and one GEMM
      // on each of its GPUs, one round, each recipe with the short deadline (docs/replay.md,
      // "Triggers and budget").
      plan->gemms = {gemm_shapes().front()};
      plan->links = replay::pairs_of({*members});
      plan->rounds = 1;
      stuck_finding_ = f->dedup_key;
      t = Trigger::kStuck;
    } else if (f->kind == FindingKind::kSdc && f->verdict == Verdict::kInconclusive && !from_replay) {
      const std::vector<int> mine = mine_of(*f);
      plan->gemms = gemm_shapes();
      plan->colls = colls_within(local, mine);
      plan->links = replay::pairs_of({mine});
      t = Trigger::kSdc;
    } else if (f->kind == FindingKind::kStraggler && !f->suspects.empty()) {
      const int rank = f->suspects[0].global_rank;
      if (reporter.cause_known(rank, f->first_seen_ns) || !local.count(rank)) continue;
      plan->gemms = gemm_shapes();
      t = Trigger::kStraggler;
    } else if (f->kind == FindingKind::kSlowLink && f->evidence.is_object() &&
               f->evidence.value("class", "") == "comm") {
      plan->links = replay::pairs_of({mine_of(*f)});
      t = Trigger::kSlowLink;
    } else {
      continue;
    }
    handled_.insert(f->dedup_key);
    return t;
  }
  return std::nullopt;
}

void ReplayTriggers::periodic_plan(const Model& m, const std::set<int>& local, replay::RecipePlan* plan) {
  if (!gemm_unavailable_) plan->gemms = periodic_gemms(m, local);
  plan->colls = colls_within(local, std::vector<int>(local.begin(), local.end()), &coll_cursor_);
  std::vector<std::vector<int>> groups;
  for (const auto& g : groups_) {
    std::vector<int> mine;
    for (int r : g)
      if (local.count(r)) mine.push_back(r);
    groups.push_back(mine);
  }
  // Communicators spanning nodes: the pairs of their members on this node (the pairs across
  // nodes are the cross cycles').
  for (const auto& [key, ranks] : node_members(m).comms) groups.push_back(ranks);
  std::vector<std::pair<int, int>> pairs = replay::pairs_of(groups);
  for (size_t i = 0; i < pairs.size() && int(plan->links.size()) < opt_.max_pairs; ++i)
    plan->links.push_back(pairs[(pair_cursor_ + i) % pairs.size()]);
  if (!pairs.empty()) pair_cursor_ = (pair_cursor_ + plan->links.size()) % pairs.size();
}

std::optional<CycleJob> ReplayTriggers::next_job(const Model& m, const FindingBoard& board,
                                                 const ReplayReporter& reporter, int64_t now_ns,
                                                 std::vector<ReplayCycleRecord>* answered) {
  if (!opt_.request_prefix.empty()) {
    std::string err;
    if (std::optional<ReplayRequest> rq = take_replay_request(opt_.request_prefix, &err))
      return demand_job(m, *rq, now_ns, answered);
    if (!err.empty() && log_) log_(err);
  }
  CycleJob job;
  job.participants = local_participants(m);
  if (job.participants.empty()) return std::nullopt;
  std::set<int> local;
  for (const Participant& p : job.participants) local.insert(p.global_rank);
  if (first_seen_ns_ == 0) {
    first_seen_ns_ = now_ns;
    next_periodic_ns_ = now_ns + opt_.min_period_ns;
  }
  replay::RecipePlan plan;
  plan.seed = next_cycle_->load();
  job.recipe_deadline_ns = opt_.recipe_deadline_ns;
  if (std::optional<Trigger> t = finding_trigger(m, board, reporter, local, &plan)) {
    job.trigger = *t;
    if (*t == Trigger::kStuck) {
      job.finding = stuck_finding_;
      job.recipe_deadline_ns = opt_.stuck_recipe_deadline_ns;
    }
  } else {
    if (now_ns < next_periodic_ns_) return std::nullopt;
    job.trigger = Trigger::kPeriodic;
    periodic_plan(m, local, &plan);
  }
  job.recipes = replay::build_recipes(plan);
  if (job.recipes.empty()) {
    if (job.trigger == Trigger::kPeriodic) next_periodic_ns_ = now_ns + opt_.min_period_ns;
    return std::nullopt;
  }
  job.cycle = (*next_cycle_)++;
  job.started_ns = now_ns;
  return job;
}

void ReplayTriggers::pace(const CycleResult& d, int64_t now_ns) {
  if (d.job.trigger == Trigger::kPeriodic) {
    // The budget is GPU time: the most any one GPU gave to this cycle, over the wall time until
    // the next periodic cycle. A cycle that ran nothing (no GPU usable) backs off instead.
    if (d.any_ok) {
      idle_period_ns_ = 0;
      next_periodic_ns_ =
          now_ns + std::max<int64_t>(opt_.min_period_ns, int64_t(double(d.gpu_cost_ns) / std::max(1e-6, opt_.budget)));
    } else {
      idle_period_ns_ = idle_period_ns_ ? std::min<int64_t>(60'000'000'000, idle_period_ns_ * 2)
                                        : std::max<int64_t>(opt_.min_period_ns, 1'000'000'000);
      next_periodic_ns_ = now_ns + idle_period_ns_;
    }
  }
  if (d.job.trigger == Trigger::kCross && d.any_ok) {
    // A cross-node cycle's GPU time (its GEMM votes and links, the most any one GPU gave) comes out
    // of the same budget: the next periodic cycle waits C / budget longer.
    next_periodic_ns_ += int64_t(double(d.gpu_cost_ns) / std::max(1e-6, opt_.budget));
  }
  if (!d.have_verdict) return;
  // GEMMs that no GPU could run (library missing): stop asking for them periodically.
  bool any_gemm = false, gemm_ran = false;
  std::string gemm_why;
  for (const replay::RecipeOutcome& r : d.verdict.recipes) {
    if (r.kind != replay::RecipeKind::kGemm) continue;
    any_gemm = true;
    if (r.outcome != replay::Outcome::kInconclusive || r.reason.find("skipped") == std::string::npos)
      gemm_ran = true;
    else
      gemm_why = r.reason;
  }
  if (any_gemm && !gemm_ran && !gemm_unavailable_) {
    gemm_unavailable_ = true;
    if (log_) log_("replay: GEMM recipes cannot run here (" + gemm_why + "); periodic cycles leave them out");
  }
}

}  // namespace scout::obs
