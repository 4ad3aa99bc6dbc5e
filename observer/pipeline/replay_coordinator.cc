#include "observer/pipeline/replay_coordinator.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/clock.h"
#include "common/names.h"
#include "observer/detect/finding_util.h"
#include "observer/net/key_store.h"
#include "replay/contract.h"
#include "replay/server.h"
#include "replay/vote.h"

namespace scout::obs {
namespace {

using shm::mono_ns;

using replay::Participant;
using replay::Recipe;
using replay::RecipeKind;


std::string ms_text(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f ms", double(ns) / 1e6);
  return b;
}

int proc_of_rank(const Model& m, int global_rank) {
  for (const Proc& p : m.procs())
    if (p.global_rank == global_rank) return p.id;
  return -1;
}

// Global ranks of a communicator's members; empty if one is unknown.
std::vector<int> members_of(const Model& m, const Comm& c) {
  std::vector<int> out;
  if (!c.members_known()) return {};
  for (const RankProgress& r : c.ranks) {
    if (r.proc < 0 || m.proc(r.proc).global_rank < 0) return {};
    out.push_back(m.proc(r.proc).global_rank);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Comm* comm_by_hash(const Model& m, uint64_t hash, int nranks) {
  auto it = m.comms().find(CommKey{hash, nranks});
  return it == m.comms().end() ? nullptr : &it->second;
}

}  // namespace

std::string default_replay_program() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "scout-replay";
  std::string exe(buf, size_t(n));
  return exe.substr(0, exe.rfind('/') + 1) + "scout-replay";
}

ReplayCoordinator::ReplayCoordinator(ReplayOptions opt, std::string job, std::string shm_dir, int node_rank,
                                     std::function<void(const std::string&)> log)
    : opt_(std::move(opt)),
      job_(std::move(job)),
      shm_dir_(std::move(shm_dir)),
      node_rank_(node_rank),
      log_(std::move(log)) {
  std::vector<std::string> argv = opt_.program;
  if (argv.empty()) argv = {default_replay_program()};
  if (argv.size() == 1) {
    argv.insert(argv.end(), {"--job", job_, "--shm-dir", shm_dir_, "--max-mem", std::to_string(opt_.max_mem)});
  }
  channel_ = std::make_unique<ReplayChannel>(argv);
  if (!opt_.rdzv.empty() && opt_.nodes > 1) {
    try {
      cross_ = std::make_unique<CrossStore>(net::open_key_store(opt_.rdzv), job_);
    } catch (const std::exception& e) {
      if (log_) log_(std::string("replay: no links across nodes: ") + e.what());
    }
  }
  thread_ = std::thread([this] { worker(); });
}

ReplayCoordinator::~ReplayCoordinator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sigset_t pipe_set, old_set;  // stop() writes "quit" from this thread
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  channel_->stop();
  timespec zero{0, 0};  // consume a SIGPIPE the write raised before unblocking
  while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
}

int ReplayCoordinator::child_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return channel_->pid();
}

uint64_t ReplayCoordinator::cycles_done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cycles_done_;
}

bool ReplayCoordinator::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

std::vector<ReplayCycleRecord> ReplayCoordinator::take_records() {
  std::vector<ReplayCycleRecord> out;
  out.swap(records_);
  return out;
}

void ReplayCoordinator::observe(const Model& m, const JudgedOp& j) {
  if (j.id.cls != OpClass::kColl || !j.complete || j.n < 2) return;
  if (j.id.func != shm::kFuncAllReduce && j.id.func != shm::kFuncAllGather && j.id.func != shm::kFuncReduceScatter &&
      j.id.func != shm::kFuncBroadcast)
    return;  // the collectives replay re-issues
  const Comm* c = comm_by_hash(m, j.comm.hash, j.comm.nranks);
  if (!c) return;
  std::vector<int> members = members_of(m, *c);
  if (members.empty()) return;
  if (std::find(groups_.begin(), groups_.end(), members) == groups_.end() && groups_.size() < 1024)
    groups_.push_back(members);
  replay::CollClass cls;
  cls.func = shm::func_name(j.id.func);
  cls.datatype = shm::datatype_name(j.datatype);
  cls.elem_bytes = int(shm::datatype_size(j.datatype));
  cls.count = j.count;
  cls.algo = j.algo ? shm::algo_name(j.algo) : "";
  cls.proto = j.proto ? shm::proto_name(j.proto) : "";
  cls.ranks = members;
  classes_.add(cls);
}

std::vector<replay::GemmShape> ReplayCoordinator::gemm_shapes() {
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

std::vector<Participant> ReplayCoordinator::local_participants(const Model& m) const {
  std::vector<Participant> out;
  for (const Proc& p : m.procs()) {
    if (p.node_rank != node_rank_ || p.state != ProcState::kRunning || p.global_rank < 0 || p.gpu.empty()) continue;
    out.push_back({p.global_rank, p.gpu, p.cuda_dev});
  }
  std::sort(out.begin(), out.end(),
            [](const Participant& a, const Participant& b) { return a.global_rank < b.global_rank; });
  return out;
}

std::vector<replay::CollClass> ReplayCoordinator::colls_within(const std::set<int>& local,
                                                               const std::vector<int>& members, size_t* cursor) const {
  std::vector<const replay::CollClass*> fit;
  for (const replay::CollClass& c : classes_.classes()) {
    const bool on_node = std::all_of(c.ranks.begin(), c.ranks.end(), [&](int r) { return local.count(r) > 0; });
    if (on_node && std::includes(members.begin(), members.end(), c.ranks.begin(), c.ranks.end())) fit.push_back(&c);
  }
  std::vector<replay::CollClass> out;
  const size_t start = cursor && !fit.empty() ? *cursor % fit.size() : 0;
  for (size_t i = 0; i < fit.size() && int(out.size()) < opt_.max_colls; ++i) out.push_back(*fit[(start + i) % fit.size()]);
  if (cursor) *cursor = start + out.size();
  return out;
}

std::optional<ReplayCoordinator::Job> ReplayCoordinator::demand_job(const Model& m, const ReplayRequest& rq,
                                                                    int64_t now_ns) {
  Job job;
  job.trigger = "demand";
  job.request = rq.id;
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
  plan.seed = next_cycle_;
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
  job.cycle = next_cycle_++;
  job.started_ns = now_ns;
  if (why.empty()) return job;
  ReplayCycleRecord rec;  // answered at once, so the CLI waiting for it is not left hanging
  rec.cycle = job.cycle;
  rec.trigger = job.trigger;
  rec.started_ns = rec.ended_ns = shm::wall_ns();
  rec.outcome = "inconclusive";
  rec.detail = {{"request", rq.id}, {"participants", nlohmann::json::array()}, {"recipes", nlohmann::json::array()},
                {"error", why}};
  records_.push_back(rec);
  if (log_) log_("replay request " + rq.id + ": " + why);
  return std::nullopt;
}

std::vector<replay::GemmShape> ReplayCoordinator::periodic_gemms(const Model& m, const std::set<int>& local) {
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

std::optional<ReplayCoordinator::Job> ReplayCoordinator::next_job(const Model& m, const FindingBoard& board,
                                                                  int64_t now_ns) {
  if (!opt_.request_prefix.empty()) {
    std::string err;
    if (std::optional<ReplayRequest> rq = take_replay_request(opt_.request_prefix, &err))
      return demand_job(m, *rq, now_ns);
    if (!err.empty() && log_) log_(err);
  }
  Job job;
  job.participants = local_participants(m);
  if (job.participants.empty()) return std::nullopt;
  std::set<int> local;
  for (const Participant& p : job.participants) local.insert(p.global_rank);
  if (first_seen_ns_ == 0) {
    first_seen_ns_ = now_ns;
    next_periodic_ns_ = now_ns + opt_.min_period_ns;
  }
  replay::RecipePlan plan;
  plan.seed = next_cycle_;
  // Triggers from findings, first come first served.
  for (const Finding* f : board.all()) {
    if (!f->open || handled_.count(f->dedup_key)) continue;
    const bool from_replay = f->evidence.is_object() && f->evidence.value("source", "") == "replay";
    if (f->kind == FindingKind::kSdc && f->verdict == Verdict::kInconclusive && !from_replay) {
      const Comm* c = comm_by_hash(m, f->comm_hash, f->comm_nranks);
      std::vector<int> members = c ? members_of(m, *c) : std::vector<int>{};
      std::vector<int> mine;
      for (int r : members)
        if (local.count(r)) mine.push_back(r);
      plan.gemms = gemm_shapes();
      plan.colls = colls_within(local, mine);
      plan.links = replay::pairs_of({mine});
      job.trigger = "sdc";
    } else if (f->kind == FindingKind::kStraggler && !f->suspects.empty()) {
      auto it = causes_.find(f->suspects[0].global_rank);
      if (it != causes_.end() && it->second.at_ns >= f->first_seen_ns) continue;
      if (!local.count(f->suspects[0].global_rank)) continue;
      plan.gemms = gemm_shapes();
      job.trigger = "straggler";
    } else if (f->kind == FindingKind::kSlowLink && f->evidence.is_object() &&
               f->evidence.value("class", "") == "comm") {
      const Comm* c = comm_by_hash(m, f->comm_hash, f->comm_nranks);
      std::vector<int> mine;
      if (c)
        for (int r : members_of(m, *c))
          if (local.count(r)) mine.push_back(r);
      plan.links = replay::pairs_of({mine});
      job.trigger = "slowlink";
    } else {
      continue;
    }
    handled_.insert(f->dedup_key);
    break;
  }
  if (job.trigger.empty()) {
    if (now_ns < next_periodic_ns_) return std::nullopt;
    job.trigger = "periodic";
    if (!gemm_unavailable_) plan.gemms = periodic_gemms(m, local);
    plan.colls = colls_within(local, std::vector<int>(local.begin(), local.end()), &coll_cursor_);
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
    for (size_t i = 0; i < pairs.size() && int(plan.links.size()) < opt_.max_pairs; ++i)
      plan.links.push_back(pairs[(pair_cursor_ + i) % pairs.size()]);
    if (!pairs.empty()) pair_cursor_ = (pair_cursor_ + plan.links.size()) % pairs.size();
  }
  job.recipes = replay::build_recipes(plan);
  if (job.recipes.empty()) {
    if (job.trigger == "periodic") next_periodic_ns_ = now_ns + opt_.min_period_ns;
    return std::nullopt;
  }
  job.cycle = next_cycle_++;
  job.started_ns = now_ns;
  return job;
}

void ReplayCoordinator::worker() {
  // A write to a scout-replay that died must fail with EPIPE, not kill the observer: SIGPIPE is
  // directed at the writing thread, so blocking it here is enough (the child inherits the mask;
  // scout-replay ignores SIGPIPE anyway).
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  for (;;) {
    std::optional<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return stop_ || pending_.has_value(); };
      if (cross_)
        cv_.wait_for(lock, std::chrono::milliseconds(200), ready);  // polls the store for plans
      else
        cv_.wait(lock, ready);
      if (stop_) return;
      job.swap(pending_);
    }
    if (!job) {
      cross_tick();
      continue;
    }
    Done d = run(*job);
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(d));
    in_flight_ = false;
    cycles_done_++;
  }
}

void ReplayCoordinator::start_record(const Job& job, ReplayCycleRecord* rec, nlohmann::json* parts,
                                     nlohmann::json* recipes) {
  rec->cycle = job.cycle;
  rec->trigger = job.trigger;
  rec->started_ns = shm::wall_ns();
  rec->outcome = "inconclusive";
  *parts = nlohmann::json::array();
  *recipes = nlohmann::json::array();
  nlohmann::json rids = nlohmann::json::array();
  for (const Participant& p : job.participants) parts->push_back(replay::to_json(p));
  for (const Recipe& r : job.recipes) {
    rids.push_back(r.id);
    recipes->push_back(replay::to_json(r));
  }
  rec->detail["participants"] = *parts;
  rec->detail["recipes"] = rids;
}

replay::Admission ReplayCoordinator::admit_answers(const replay::Contract& contract, const nlohmann::json& answers,
                                                   const std::vector<Recipe>& recipes, ReplayCycleRecord* rec,
                                                   std::vector<replay::GpuInfo>* gpus) {
  std::vector<replay::Readiness> ready;
  nlohmann::json gj = nlohmann::json::array();
  for (const auto& a : answers) {
    replay::Readiness r;
    std::string e;
    if (!a.is_object() || !a.contains("gpu") || !replay::from_json(a["gpu"], &r.gpu, &e)) continue;
    r.digest = std::strtoull(a.value("digest", "0").c_str(), nullptr, 16);
    ready.push_back(r);
    gpus->push_back(r.gpu);
    gj.push_back(replay::to_json(r.gpu));
  }
  rec->detail["gpus"] = gj;
  replay::ContractCheck check = replay::check_contract(contract, ready);
  rec->detail["contract"] = {{"digest", replay::fp_hex(replay::contract_digest(contract))},
                             {"missing", check.missing},
                             {"not_ready", check.not_ready},
                             {"wrong_contract", check.wrong_contract}};
  return replay::admit(recipes, check, ready);
}

void ReplayCoordinator::tally_cost(const std::vector<replay::Sample>& samples, Done* d) {
  std::map<int, int64_t> busy;
  for (const replay::Sample& x : samples) {
    if (x.status != replay::SampleStatus::kOk || x.ns < 0) continue;
    d->any_ok = true;
    busy[x.global_rank] += x.ns;
    if (x.peer >= 0) busy[x.peer] += x.ns;  // a link occupies the sender too
  }
  for (const auto& [rank, ns] : busy) d->gpu_cost_ns = std::max(d->gpu_cost_ns, ns);
}

ReplayCoordinator::Done ReplayCoordinator::run(const Job& job) {
  Done d;
  d.job = job;
  ReplayCycleRecord& rec = d.record;
  nlohmann::json parts, recipes;
  start_record(job, &rec, &parts, &recipes);
  if (!job.request.empty()) rec.detail["request"] = job.request;
  const int64_t t0 = mono_ns();
  const int64_t deadline = t0 + opt_.deadline_ns;
  replay::Contract contract;
  contract.cycle = job.cycle;
  for (const Recipe& r : job.recipes) contract.recipes.push_back(r.id);
  for (const Participant& p : job.participants) contract.members.push_back(p.global_rank);
  auto give_up = [&](const std::string& why) {
    rec.detail["error"] = why;
    rec.ended_ns = shm::wall_ns();
    return d;
  };
  nlohmann::json ans;
  std::string err;
  nlohmann::json prep = {
      {"op", "prepare"}, {"contract", replay::to_json(contract)}, {"participants", parts}, {"recipes", recipes}};
  if (!channel_->call(prep, &ans, deadline - mono_ns(), &err)) return give_up(err);
  if (ans.value("op", "") != "ready") return give_up("scout-replay: " + ans.value("error", ans.dump()));
  rec.backend = ans.value("backend", "");
  std::vector<replay::GpuInfo> gpus;
  replay::Admission adm = admit_answers(contract, ans.value("answers", nlohmann::json::array()), job.recipes, &rec, &gpus);
  std::vector<replay::Sample> samples;
  if (!adm.run.empty()) {
    const int64_t left_ms = (deadline - mono_ns()) / 1'000'000;
    nlohmann::json run = {{"op", "run"},
                          {"cycle", job.cycle},
                          {"admitted", adm.run},
                          {"deadline_ms", std::max<int64_t>(0, left_ms * 8 / 10)}};
    if (!channel_->call(run, &ans, deadline - mono_ns(), &err)) {
      // A participant lost mid-cycle: every admitted recipe is undecided.
      for (const std::string& id : adm.run) adm.inconclusive.push_back({id, "participant lost: " + err});
      rec.detail["error"] = err;
    } else if (ans.value("op", "") != "result") {
      for (const std::string& id : adm.run) adm.inconclusive.push_back({id, "scout-replay: " + ans.value("error", "")});
    } else {
      nlohmann::json sj = nlohmann::json::array();
      for (const auto& s : ans.value("samples", nlohmann::json::array())) {
        replay::Sample x;
        std::string e;
        if (replay::from_json(s, &x, &e)) {
          samples.push_back(x);
          sj.push_back(s);
        }
      }
      rec.detail["samples"] = sj;
      tally_cost(samples, &d);
    }
  }
  d.verdict = replay::judge(job.recipes, gpus, samples, adm.inconclusive, opt_.rule);
  d.have_verdict = true;
  rec.outcome = d.verdict.outcome;
  rec.detail["verdict"] = replay::to_json(d.verdict);
  rec.ended_ns = shm::wall_ns();
  return d;
}

void ReplayCoordinator::pace_periodic(const Done& d, int64_t now_ns) {
  if (d.job.trigger == "periodic") {
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
}

void ReplayCoordinator::apply(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  const int64_t cost = rec.ended_ns - rec.started_ns;
  pace_periodic(d, now_ns);
  if (log_) {
    std::string why = rec.detail.contains("error") ? " (" + rec.detail["error"].get<std::string>() + ")" : "";
    log_("replay cycle " + std::to_string(rec.cycle) + " (" + rec.trigger + "): " + rec.outcome + ", " +
         std::to_string(d.job.recipes.size()) + " recipes, " + ms_text(cost) + why);
  }
  if (!d.have_verdict) return;
  const replay::CycleVerdict& v = d.verdict;
  // GEMMs that no GPU could run (library missing): stop asking for them periodically.
  bool any_gemm = false, gemm_ran = false;
  std::string gemm_why;
  for (const replay::RecipeOutcome& r : v.recipes) {
    if (r.kind != "gemm") continue;
    any_gemm = true;
    if (r.outcome != "inconclusive" || r.reason.find("skipped") == std::string::npos)
      gemm_ran = true;
    else
      gemm_why = r.reason;
  }
  if (any_gemm && !gemm_ran && !gemm_unavailable_) {
    gemm_unavailable_ = true;
    if (log_) log_("replay: GEMM recipes cannot run here (" + gemm_why + "); periodic cycles leave them out");
  }
  report_sdc(m, board, d, now_ns);
  report_slow_pairs(m, board, d, now_ns);
  note_causes(d);
}

void ReplayCoordinator::report_sdc(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  const replay::CycleVerdict& v = d.verdict;
  // sdc: one finding per suspect rank.
  std::map<int, std::vector<const replay::SdcVerdict*>> by_rank;
  for (const replay::SdcVerdict& s : v.sdc) by_rank[s.global_rank].push_back(&s);
  if (!d.report) return;
  for (const auto& [rank, list] : by_rank) {
    const int proc = proc_of_rank(m, rank);
    if (proc < 0) continue;
    Finding f;
    f.kind = FindingKind::kSdc;
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(suspect_of(m, proc));
    const replay::SdcVerdict& first = *list[0];
    int peer = -1;
    for (const auto* s : list)
      if (s->peer >= 0) peer = s->peer;
    if (peer >= 0) f.peer = suspect_for(m, peer, d);
    f.first_seen_ns = rec.started_ns;
    f.last_seen_ns = now_ns;
    nlohmann::json checks = nlohmann::json::array();
    for (const auto* s : list)
      checks.push_back({{"check", s->check},
                        {"recipe", s->recipe},
                        {"votes", s->votes},
                        {"peer", s->peer >= 0 ? nlohmann::json(s->peer) : nlohmann::json(nullptr)}});
    nlohmann::json gpus = nlohmann::json::array();
    for (const Participant& p : d.job.participants) gpus.push_back({{"global_rank", p.global_rank}, {"gpu", p.gpu}});
    f.evidence = {{"source", "replay"},   {"cycle", rec.cycle},     {"trigger", rec.trigger},
                  {"check", first.check}, {"recipe", first.recipe}, {"votes", first.votes},
                  {"checks", checks},     {"gpus", gpus},           {"gpu", first.gpu}};
    const Proc& p = m.proc(proc);
    f.dedup_key = "sdc:replay:" + p.host + ":" + std::to_string(p.pid);
    if (first.check == "link" || (peer >= 0 && first.check != "gemm-vote" && first.check != "gemm-self"))
      f.summary = "replay: data " + who(m, proc) + " receives from " + who_for(m, peer, d) +
                  " arrives corrupted (" + first.recipe + ")";
    else if (first.check == "gemm-self")
      f.summary = "replay: the GPU of " + who(m, proc) + " (" + first.gpu + ") gives different bits for the same " +
                  first.recipe + " on two runs";
    else if (first.check == "gemm-vote")
      f.summary = "replay: the GPU of " + who(m, proc) + " (" + first.gpu + ") computes " + first.recipe +
                  " differently from the majority of its peers";
    else
      f.summary = "replay: " + who(m, proc) + " received a wrong result in " + first.recipe;
    board.report(f);
  }
}

void ReplayCoordinator::report_slow_pairs(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  const replay::CycleVerdict& v = d.verdict;
  // Slow pairs: a slowlink of class link (the live detector's key for the same pair).
  std::set<std::string> slow_now;
  if (!d.report) return;
  std::map<std::string, std::map<int, int>> comm_ranks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    comm_ranks = cross_comm_ranks_;
  }
  // A finding's end as a global rank; one named by its comm rank only (a far end the live
  // detector of another node saw) through the spanning communicators' members (-1 unknown).
  auto global_of = [&](const Finding& g, const Suspect& s) {
    if (s.global_rank >= 0 || s.comm_rank < 0) return s.global_rank;
    auto c = comm_ranks.find(cross_comm_key(g.comm_hash, g.comm_nranks));
    if (c == comm_ranks.end()) return -1;
    auto r = c->second.find(s.comm_rank);
    return r == c->second.end() ? -1 : r->second;
  };
  for (const replay::SlowPair& sp : v.slow_pairs) {
    const Suspect sa = suspect_for(m, sp.a, d), sb = suspect_for(m, sp.b, d);
    if (sa.pid == 0 || sb.pid == 0) continue;
    const int pa = proc_of_rank(m, sp.a), pb = proc_of_rank(m, sp.b);
    auto key_of = [&](const Suspect& x, const Suspect& y) {
      return "slowlink:link:" + x.host + ":" + std::to_string(x.pid) + ":" + y.host + ":" + std::to_string(y.pid);
    };
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
      live = !g->evidence.is_object() || g->evidence.value("source", "") != "replay";
    }
    if (live) continue;  // the cycle's verdict (slow_pairs) is in its stored record
    Finding f;
    f.kind = FindingKind::kSlowLink;
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(sa);
    f.peer = sb;
    f.first_seen_ns = rec.started_ns;
    f.last_seen_ns = now_ns;
    f.dedup_key = key;
    f.evidence = {{"class", "link"},
                  {"source", "replay"},
                  {"cycle", rec.cycle},
                  {"recipes", sp.recipes},
                  {"ms", to_ms(sp.ns)},
                  {"median_ms", to_ms(sp.median_ns)},
                  {"thresholds", {{"min_ratio", opt_.rule.min_ratio}, {"min_ms", to_ms(opt_.rule.min_ns)}}}};
    f.summary = "replay: the link between " + who_for(m, sp.a, d) + " and " + who_for(m, sp.b, d) +
                " is slow: " + ms_text(sp.ns) +
                " for a transfer the cycle's other pairs do in " + ms_text(sp.median_ns) + " (median)";
    board.report(f);
    replay_links_[key] = {std::min(sp.a, sp.b), std::max(sp.a, sp.b)};
    slow_now.insert(key);
  }
  // A pair this cycle measured (either direction) and found normal closes its replay finding.
  std::set<std::pair<int, int>> measured;
  for (const replay::RecipeOutcome& r : v.recipes) {
    if (r.kind != "link" || r.outcome == "inconclusive") continue;
    for (const Recipe& x : d.job.recipes)
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

void ReplayCoordinator::note_causes(const Done& d) {
  const ReplayCycleRecord& rec = d.record;
  const replay::CycleVerdict& v = d.verdict;
  // GEMM timing verdicts: straggler causes.
  for (const replay::SlowGpu& s : v.slow_gpus)
    causes_[s.global_rank] = {"gpu",
                              rec.started_ns,
                              {{"cycle", rec.cycle},
                               {"recipe", s.recipe},
                               {"ms",
                                [&] {
                                  nlohmann::json a = nlohmann::json::array();
                                  for (int64_t x : s.ns) a.push_back(to_ms(x));
                                  return a;
                                }()},
                               {"median_ms", to_ms(s.median_ns)}}};
  for (int r : v.gpu_normal) causes_[r] = {"host", rec.started_ns, {{"cycle", rec.cycle}}};
}

void ReplayCoordinator::mark_stragglers(const Model& m, FindingBoard& board) {
  std::vector<Finding> updates;
  for (const Finding* f : board.all()) {
    if (f->kind != FindingKind::kStraggler || !f->open || f->suspects.empty()) continue;
    std::string cause = "unknown";
    nlohmann::json detail;
    auto it = causes_.find(f->suspects[0].global_rank);
    if (it != causes_.end() && it->second.at_ns >= f->first_seen_ns) {
      cause = it->second.cause;
      detail = it->second.evidence;
    }
    if (f->evidence.is_object() && f->evidence.value("cause", "") == cause) continue;
    Finding g = *f;
    if (!g.evidence.is_object()) g.evidence = nlohmann::json::object();
    g.evidence["cause"] = cause;
    if (!detail.is_null()) g.evidence["replay"] = detail;
    updates.push_back(std::move(g));
  }
  for (Finding& g : updates) board.report(std::move(g));
}

void ReplayCoordinator::step(const Model& m, FindingBoard& board, int64_t now_ns) {
  std::deque<Done> done;
  std::vector<std::string> lines;
  std::optional<NodeMembers> members;  // at most once a second: the worker publishes changes
  if (cross_ && now_ns - members_ns_ >= 1'000'000'000) {
    members = node_members(m);
    members_ns_ = now_ns;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
    lines.swap(worker_log_);
    if (members && !(*members == members_)) {
      members_ = std::move(*members);
      members_dirty_ = true;
    }
  }
  if (log_)
    for (const std::string& l : lines) log_(l);
  for (Done& d : done) {
    apply(m, board, d, now_ns);
    records_.push_back(d.record);
  }
  mark_stragglers(m, board);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_) return;
  }
  std::optional<Job> job = next_job(m, board, now_ns);
  if (!job) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(job);
    in_flight_ = true;
  }
  cv_.notify_all();
}

Suspect ReplayCoordinator::suspect_for(const Model& m, int global_rank, const Done& d) const {
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

std::string ReplayCoordinator::who_for(const Model& m, int global_rank, const Done& d) const {
  const int proc = proc_of_rank(m, global_rank);
  if (proc >= 0) return who(m, proc);
  const Suspect s = suspect_for(m, global_rank, d);
  return "rank " + std::to_string(global_rank) +
         (s.pid ? " (" + s.host + ", pid " + std::to_string(s.pid) + ")" : std::string(" (another node)"));
}

}  // namespace scout::obs
