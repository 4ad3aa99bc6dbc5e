#include "test/sim/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "scout/config.h"
#include "test/sim/checkpoint_writer.h"
#include "test/sim/layout.h"
#include "test/sim/workload.h"

namespace scout::sim {
namespace {

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Qualifies rank R's operation for the fault kinds that pick "the first suitable operation at or
// after N" (options.h, FaultSpec::target_op).
bool qualifies(FaultKind k, const Action& a, int nranks, bool is_root) {
  switch (k) {
    case FaultKind::kSdc:
      return a.kind == ActionKind::kColl &&
             (a.func == Func::kAllReduce || a.func == Func::kAllGather || a.func == Func::kBroadcast);
    case FaultKind::kNan: return action_send_elems(a, nranks, is_root) > 0;
    case FaultKind::kDesync:
    case FaultKind::kDtype:
    case FaultKind::kOptype:
    case FaultKind::kSkip:
    case FaultKind::kKernelStall: return a.kind == ActionKind::kColl;
    case FaultKind::kWrongGroup: return a.kind == ActionKind::kSend && a.comm == CommKind::kPp;
    default: return true;
  }
}

// Range checks and resolution of one fault against the job shape. Returns "" or the error.
std::string resolve_fault(FaultSpec* f, const Layout& L, const SimOptions& o) {
  const int n = o.ranks;
  if (f->kind == FaultKind::kSlowNic || f->kind == FaultKind::kNicDown) {  // one node's host NIC
    if (o.nodes < 2)
      return f->kind == FaultKind::kSlowNic ? "slownic needs --nodes >= 2 (it slows one host's transfers to the others)"
                                            : "nicdown needs --nodes >= 2 (it cuts one host off the others)";
    if (f->node >= o.nodes)
      return "node " + std::to_string(f->node) + " is out of range (--nodes " + std::to_string(o.nodes) + ")";
    if (f->step >= o.steps)
      return "step " + std::to_string(f->step) + " is beyond the run (--steps " + std::to_string(o.steps) + ")";
    f->node_ranks.clear();
    for (int g = 0; g < n; ++g)
      if (L.coord(g).node == f->node) f->node_ranks.push_back(g);
    f->rank = f->node_ranks.front();  // the rank that writes the ground-truth line
    f->target_step = f->step;
    return "";
  }
  if (f->rank >= n) return "rank " + std::to_string(f->rank) + " is out of range (--ranks " + std::to_string(n) + ")";
  if (f->kind == FaultKind::kLinkDown) {
    if (f->peer >= n) return "peer " + std::to_string(f->peer) + " is out of range (--ranks " + std::to_string(n) + ")";
    if (f->peer == f->rank) return "peer must differ from rank";
    if (!L.share_comm(f->rank, f->peer))
      return "ranks " + std::to_string(f->rank) + " and " + std::to_string(f->peer) + " share no communicator";
  }
  if (f->kind == FaultKind::kLinkSdc) {
    if (f->peer >= n) return "peer " + std::to_string(f->peer) + " is out of range (--ranks " + std::to_string(n) + ")";
    if (f->peer == f->rank) return "peer must differ from rank";
  }
  if (f->kind == FaultKind::kExtraStep) return "";  // acts before step 0, on no operation of the run
  if ((f->kind == FaultKind::kP2pOrder || f->kind == FaultKind::kWrongGroup) && !L.comm_of(f->rank, CommKind::kPp))
    return std::string(fault_kind_name(f->kind)) + " needs --pp > 1 (rank " + std::to_string(f->rank) +
           " has no pipeline peer)";
  if (f->kind == FaultKind::kP2pOrder) {
    if (f->step >= o.steps)
      return "step " + std::to_string(f->step) + " is beyond the run (--steps " + std::to_string(o.steps) + ")";
    f->target_step = f->step;
    f->target_op = static_cast<int64_t>(first_op_of_step(L, o, f->rank, f->step));
    return "";
  }
  if (f->kind == FaultKind::kPause) {
    if (f->every >= o.steps)
      return "every=" + std::to_string(f->every) + " leaves no step to pause at (steps K, 2K, ... below --steps " +
             std::to_string(o.steps) + ")";
    f->target_step = f->every;
    return "";
  }
  if (is_hardware_fault(f->kind) || f->kind == FaultKind::kNondet) {
    if (f->step >= o.steps)
      return "step " + std::to_string(f->step) + " is beyond the run (--steps " + std::to_string(o.steps) + ")";
    f->target_step = f->step;
    return "";
  }
  if (f->kind == FaultKind::kSlowlink) {
    if (f->peer >= n) return "peer " + std::to_string(f->peer) + " is out of range (--ranks " + std::to_string(n) + ")";
    if (f->peer == f->rank) return "peer must differ from rank";
    if (!L.share_comm(f->rank, f->peer))
      return "ranks " + std::to_string(f->rank) + " and " + std::to_string(f->peer) + " share no communicator";
  }
  if (f->step >= o.steps)
    return "step " + std::to_string(f->step) + " is beyond the run (--steps " + std::to_string(o.steps) + ")";
  uint64_t total = total_ops(L, o, f->rank);
  if (f->kind == FaultKind::kSlowlink) {
    f->target_step = f->step;
    return "";
  }
  uint64_t start = f->op >= 0 ? static_cast<uint64_t>(f->op) : first_op_of_step(L, o, f->rank, f->step);
  if (start >= total)
    return (f->op >= 0 ? "op " + std::to_string(f->op) : "step " + std::to_string(f->step)) + " is beyond rank " +
           std::to_string(f->rank) + "'s last operation (" + std::to_string(total) + " operations in " +
           std::to_string(o.steps) + " steps)";
  int64_t step = 0;
  Action a;
  for (uint64_t op = start; op < total; ++op) {
    if (!find_op(L, o, f->rank, op, &step, &a)) break;
    const CommSpec* c = L.comm_of(f->rank, a.comm);
    int nranks = c ? c->nranks() : 1;
    bool is_root = c && a.peer == c->rank_of(f->rank);
    if (qualifies(f->kind, a, nranks, is_root)) {
      f->target_op = static_cast<int64_t>(op);
      f->target_step = step;
      return "";
    }
  }
  const char* what = f->kind == FaultKind::kSdc          ? "AllReduce, AllGather or Broadcast"
                     : f->kind == FaultKind::kNan        ? "operation with a send buffer"
                     : f->kind == FaultKind::kWrongGroup ? "pipeline Send"
                                                         : "collective";
  return std::string("rank ") + std::to_string(f->rank) + " issues no " + what + " at or after operation " +
         std::to_string(start);
}

}  // namespace

bool is_hardware_fault(FaultKind k) {
  return k == FaultKind::kGpuSdc || k == FaultKind::kLinkSdc || k == FaultKind::kSlowGpu || k == FaultKind::kLinkDown ||
         k == FaultKind::kNicDown;
}

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::kGpuSdc: return "gpusdc";
    case FaultKind::kLinkSdc: return "linksdc";
    case FaultKind::kSlowGpu: return "slowgpu";
    case FaultKind::kSdc: return "sdc";
    case FaultKind::kStraggler: return "straggler";
    case FaultKind::kHang: return "hang";
    case FaultKind::kDesync: return "desync";
    case FaultKind::kCrash: return "crash";
    case FaultKind::kSlowlink: return "slowlink";
    case FaultKind::kNan: return "nan";
    case FaultKind::kDtype: return "dtype";
    case FaultKind::kOptype: return "optype";
    case FaultKind::kSkip: return "skip";
    case FaultKind::kExtraStep: return "extrastep";
    case FaultKind::kNondet: return "nondet";
    case FaultKind::kPause: return "pause";
    case FaultKind::kP2pOrder: return "p2porder";
    case FaultKind::kWrongGroup: return "wronggroup";
    case FaultKind::kEnqueueStall: return "enqueuestall";
    case FaultKind::kKernelStall: return "kernelstall";
    case FaultKind::kSlowNic: return "slownic";
    case FaultKind::kLinkDown: return "linkdown";
    case FaultKind::kNicDown: return "nicdown";
  }
  return "?";
}

bool parse_fault_spec(const std::string& text, FaultSpec* out, std::string* error) {
  static const std::map<std::string, FaultKind> kinds = {
      {"sdc", FaultKind::kSdc},         {"straggler", FaultKind::kStraggler}, {"hang", FaultKind::kHang},
      {"desync", FaultKind::kDesync},   {"crash", FaultKind::kCrash},         {"slowlink", FaultKind::kSlowlink},
      {"nan", FaultKind::kNan},         {"gpusdc", FaultKind::kGpuSdc},       {"linksdc", FaultKind::kLinkSdc},
      {"slowgpu", FaultKind::kSlowGpu}, {"dtype", FaultKind::kDtype},         {"optype", FaultKind::kOptype},
      {"skip", FaultKind::kSkip},       {"extrastep", FaultKind::kExtraStep}, {"nondet", FaultKind::kNondet},
      {"pause", FaultKind::kPause},     {"p2porder", FaultKind::kP2pOrder},   {"wronggroup", FaultKind::kWrongGroup},
      {"enqueuestall", FaultKind::kEnqueueStall}, {"kernelstall", FaultKind::kKernelStall},
      {"slownic", FaultKind::kSlowNic},           {"linkdown", FaultKind::kLinkDown},
      {"nicdown", FaultKind::kNicDown}};
  FaultSpec f;
  f.text = text;
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  auto it = kinds.find(kind);
  if (it == kinds.end()) {
    *error = "fault '" + text + "': unknown fault kind '" + kind +
             "' (sdc, straggler, hang, desync, crash, slowlink, nan, gpusdc, linksdc, slowgpu, dtype, optype, skip, "
             "extrastep, nondet, pause, p2porder, wronggroup, enqueuestall, kernelstall, slownic, linkdown, nicdown)";
    return false;
  }
  f.kind = it->second;
  if (colon == std::string::npos || colon + 1 == text.size()) {
    *error = "fault '" + text + "': needs " +
             (f.kind == FaultKind::kSlowNic || f.kind == FaultKind::kNicDown ? "node=K" : "rank=R");
    return false;
  }
  std::map<std::string, uint64_t> kv;
  std::stringstream ss(text.substr(colon + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (key != "rank" && key != "op" && key != "step" && key != "ms" && key != "peer" && key != "factor" &&
        key != "stage" && key != "every" && key != "s" && key != "node") {
      *error = "fault '" + text + "': unknown key '" + key + "' (rank, stage, node, op, step, ms, peer, factor, every, s)";
      return false;
    }
    if (eq == std::string::npos || eq + 1 == item.size()) {
      *error = "fault '" + text + "': missing value for " + key;
      return false;
    }
    uint64_t v = 0;
    std::string val = item.substr(eq + 1);
    if (key == "rank") {  // R or R1+R2+...
      if (kv.count(key)) {
        *error = "fault '" + text + "': rank given twice";
        return false;
      }
      std::stringstream rs(val);
      std::string one;
      while (std::getline(rs, one, '+')) {
        if (!parse_u64(one, &v) || v > (1ull << 30)) {
          *error = "fault '" + text + "': rank=" + val + " is not a rank or a list R1+R2+... of ranks";
          return false;
        }
        if (std::find(f.ranks.begin(), f.ranks.end(), int(v)) != f.ranks.end()) {
          *error = "fault '" + text + "': rank " + one + " is listed twice";
          return false;
        }
        f.ranks.push_back(static_cast<int>(v));
      }
      if (f.ranks.empty() || val.back() == '+') {
        *error = "fault '" + text + "': rank=" + val + " is not a rank or a list R1+R2+... of ranks";
        return false;
      }
      kv[key] = f.ranks[0];
      continue;
    }
    if (key == "factor") {
      char* end = nullptr;
      double d = std::strtod(val.c_str(), &end);
      if (end == val.c_str() || *end || !(d > 1.0) || d > 1000.0) {
        *error = "fault '" + text + "': factor=" + val + " must be a number in (1, 1000]";
        return false;
      }
      if (kv.count(key)) {
        *error = "fault '" + text + "': " + key + " given twice";
        return false;
      }
      f.factor = d;
      kv[key] = 1;
      continue;
    }
    if (!parse_u64(val, &v) || v > (1ull << 40)) {
      *error = "fault '" + text + "': " + key + "=" + val + " is not a non-negative integer";
      return false;
    }
    if (kv.count(key)) {
      *error = "fault '" + text + "': " + key + " given twice";
      return false;
    }
    kv[key] = v;
  }
  const bool timed = f.kind == FaultKind::kStraggler || f.kind == FaultKind::kSlowlink;
  auto fail = [&](const std::string& why) {
    *error = "fault '" + text + "': " + why;
    return false;
  };
  if (f.kind == FaultKind::kSlowNic) {
    if (kv.count("rank") || kv.count("stage")) return fail("slownic names a host: node=K, not rank= or stage=");
    for (const char* k : {"op", "peer", "factor", "every", "s"})
      if (kv.count(k)) return fail(std::string(k) + " does not apply to slownic (slownic:node=K,ms=M[,step=N])");
    if (!kv.count("node")) return fail("slownic needs node=K");
    if (!kv.count("ms")) return fail("slownic needs ms=M");
    if (kv["ms"] == 0 || kv["ms"] > 3600 * 1000) return fail("ms must be in 1..3600000");
    f.node = static_cast<int>(std::min<uint64_t>(kv["node"], 1u << 30));
    f.ms = static_cast<int64_t>(kv["ms"]);
    f.step = kv.count("step") ? static_cast<int64_t>(kv["step"]) : 0;
    f.ranks = {0};  // placeholder: resolved to the host's first rank (it writes the ground truth)
    *out = f;
    return true;
  }
  if (f.kind == FaultKind::kNicDown) {
    if (kv.count("rank") || kv.count("stage")) return fail("nicdown names a host: node=K, not rank= or stage=");
    for (const char* k : {"op", "peer", "factor", "every", "s", "ms"})
      if (kv.count(k)) return fail(std::string(k) + " does not apply to nicdown (nicdown:node=K[,step=N])");
    if (!kv.count("node")) return fail("nicdown needs node=K");
    f.node = static_cast<int>(std::min<uint64_t>(kv["node"], 1u << 30));
    f.step = kv.count("step") ? static_cast<int64_t>(kv["step"]) : 0;
    f.ranks = {0};  // placeholder: resolved to the host's first rank (it writes the ground truth)
    *out = f;
    return true;
  }
  if (kv.count("node")) return fail("node applies to slownic and nicdown only");
  if (kv.count("rank") && kv.count("stage")) return fail("give rank=R or stage=S, not both");
  if (!kv.count("rank") && !kv.count("stage")) return fail("needs rank=R");
  if (kv.count("op") && kv.count("step")) return fail("give op=N or step=N, not both");
  if ((f.ranks.size() > 1 || kv.count("stage")) &&
      (f.kind == FaultKind::kSlowlink || f.kind == FaultKind::kLinkSdc || f.kind == FaultKind::kLinkDown))
    return fail(std::string(fault_kind_name(f.kind)) + " names one pair: rank lists and stage= do not apply");
  if (kv.count("stage")) {
    f.stage = static_cast<int>(std::min<uint64_t>(kv["stage"], 1u << 30));
    kv["rank"] = 0;  // placeholder: parse_options gives each rank of the stage its own spec
  }
  if (f.kind == FaultKind::kPause) {
    for (const char* k : {"op", "step", "ms", "peer", "factor"})
      if (kv.count(k)) return fail(std::string(k) + " does not apply to pause (pause:rank=R,every=K,s=S)");
    if (!kv.count("every")) return fail("pause needs every=K (it pauses before steps K, 2K, ...)");
    if (!kv.count("s")) return fail("pause needs s=S (seconds asleep)");
    if (kv["every"] < 1) return fail("every must be >= 1");
    if (kv["s"] < 1 || kv["s"] > 3600) return fail("s must be in 1..3600 (seconds)");
    f.rank = static_cast<int>(std::min<uint64_t>(kv["rank"], 1u << 30));
    if (f.ranks.empty()) f.ranks.push_back(f.rank);
    f.every = static_cast<int64_t>(kv["every"]);
    f.pause_s = static_cast<int64_t>(kv["s"]);
    *out = f;
    return true;
  }
  if (kv.count("every") || kv.count("s")) return fail("every and s apply to pause only");
  const bool new_kind = f.kind == FaultKind::kDtype || f.kind == FaultKind::kOptype || f.kind == FaultKind::kSkip ||
                        f.kind == FaultKind::kExtraStep || f.kind == FaultKind::kNondet ||
                        f.kind == FaultKind::kP2pOrder || f.kind == FaultKind::kWrongGroup ||
                        f.kind == FaultKind::kEnqueueStall || f.kind == FaultKind::kKernelStall;
  if (new_kind) {
    const std::string name = fault_kind_name(f.kind);
    if (kv.count("ms")) return fail("ms applies to straggler, slowlink and slownic only");
    if (kv.count("peer")) return fail("peer applies to slowlink, linksdc and linkdown only");
    if (kv.count("factor")) return fail("factor applies to slowgpu only");
    if (f.kind == FaultKind::kExtraStep && (kv.count("op") || kv.count("step")))
      return fail("extrastep takes no op or step (the extra step comes before step 0)");
    if (f.kind == FaultKind::kNondet && kv.count("op")) return fail("nondet takes step=N (it acts from that step on)");
    if (f.kind == FaultKind::kP2pOrder && kv.count("op"))
      return fail("p2porder takes step=N (it reorders that step's pipeline calls)");
    if (f.kind == FaultKind::kSkip && !kv.count("op") && !kv.count("step")) return fail("skip needs op=N or step=N");
    f.rank = static_cast<int>(std::min<uint64_t>(kv["rank"], 1u << 30));
    if (f.ranks.empty()) f.ranks.push_back(f.rank);
    if (kv.count("op")) f.op = static_cast<int64_t>(kv["op"]);
    if (kv.count("step")) f.step = static_cast<int64_t>(kv["step"]);
    if (f.kind != FaultKind::kExtraStep && f.op < 0 && f.step < 0) f.step = 0;
    *out = f;
    return true;
  }
  if (is_hardware_fault(f.kind)) {
    if (kv.count("op"))
      return fail(std::string(fault_kind_name(f.kind)) + " takes step=N (a persistent hardware fault)");
    if (kv.count("ms")) return fail("ms applies to straggler, slowlink and slownic only");
    if (f.kind == FaultKind::kLinkSdc && !kv.count("peer")) return fail("linksdc needs peer=Q (the sender)");
    if (f.kind == FaultKind::kLinkDown && !kv.count("peer")) return fail("linkdown needs peer=Q (the other end)");
    if (f.kind != FaultKind::kLinkSdc && f.kind != FaultKind::kLinkDown && kv.count("peer"))
      return fail("peer applies to slowlink, linksdc and linkdown only");
    if (f.kind == FaultKind::kSlowGpu && !kv.count("factor")) return fail("slowgpu needs factor=F");
    if (f.kind != FaultKind::kSlowGpu && kv.count("factor")) return fail("factor applies to slowgpu only");
    f.rank = static_cast<int>(std::min<uint64_t>(kv["rank"], 1u << 30));
    f.step = kv.count("step") ? static_cast<int64_t>(kv["step"]) : 0;
    if (kv.count("peer")) f.peer = static_cast<int>(std::min<uint64_t>(kv["peer"], 1u << 30));
    if (f.ranks.empty()) f.ranks.push_back(f.rank);
    *out = f;
    return true;
  }
  if (kv.count("factor")) return fail("factor applies to slowgpu only");
  if (f.kind == FaultKind::kSlowlink && kv.count("op"))
    return fail("slowlink takes step=N (it acts on operations of both ranks)");
  if (!timed && !kv.count("op") && !kv.count("step"))
    return fail(std::string(fault_kind_name(f.kind)) + " needs op=N or step=N");
  if (timed && !kv.count("ms")) return fail(std::string(fault_kind_name(f.kind)) + " needs ms=M");
  if (!timed && kv.count("ms")) return fail(std::string("ms applies to straggler, slowlink and slownic only"));
  if (timed && (kv["ms"] == 0 || kv["ms"] > 3600 * 1000)) return fail("ms must be in 1..3600000");
  if (f.kind == FaultKind::kSlowlink && !kv.count("peer")) return fail("slowlink needs peer=Q");
  if (f.kind != FaultKind::kSlowlink && kv.count("peer")) return fail("peer applies to slowlink, linksdc and linkdown only");
  f.rank = static_cast<int>(std::min<uint64_t>(kv["rank"], 1u << 30));
  if (kv.count("op")) f.op = static_cast<int64_t>(kv["op"]);
  if (kv.count("step")) f.step = static_cast<int64_t>(kv["step"]);
  if (timed && f.op < 0 && f.step < 0) f.step = 0;
  if (kv.count("ms")) f.ms = static_cast<int64_t>(kv["ms"]);
  if (kv.count("peer")) f.peer = static_cast<int>(std::min<uint64_t>(kv["peer"], 1u << 30));
  if (f.ranks.empty()) f.ranks.push_back(f.rank);
  *out = f;
  return true;
}

ParseStatus parse_options(int argc, const char* const* argv, SimOptions* out, std::string* message) {
  SimOptions o;
  std::string bytes_text = "256K";
  std::vector<std::string> fault_texts;
  CLI::App app{
      "scout-sim: an emulated multi-process NCCL training job that drives the profiler plugin "
      "exactly as NCCL 2.28.9 does, with injectable faults (docs/scout-sim.md).",
      "scout-sim"};
  app.option_defaults()->always_capture_default();
  app.add_option("--ranks", o.ranks, "world size N: one process per rank")->required();
  app.add_option("--tp", o.tp, "tensor-parallel size T");
  app.add_option("--pp", o.pp, "pipeline-parallel size P");
  app.add_option("--ep", o.ep, "expert-parallel size E (divides DP = N/(T*C*P))");
  app.add_option("--cp", o.cp, "context-parallel size C (ring attention: K/V passed around each CP group)");
  app.add_option("--vpp", o.vpp, "virtual pipeline stages per rank V (interleaved schedule; needs --pp > 1)");
  app.add_option("--nodes", o.nodes, "emulated hosts M (SCOUT_HOST node0..node{M-1})");
  app.add_option("--steps", o.steps, "training steps");
  app.add_option("--bytes", bytes_text, "base message size B (bytes; K, M, G suffixes)");
  app.add_option("--step-ms", o.step_ms, "compute time between steps, ms");
  app.add_option("--job", o.job, "job id (exported as SCOUT_JOB_ID); default $SCOUT_JOB_ID, else sim-<pid>");
  app.add_option("--seed", o.seed, "seed of data, unique id and channel choices");
  app.add_option("--timeout", o.timeout_s, "end the job after S seconds, exit 3 (0: never)");
  app.add_option("--idle-timeout", o.idle_timeout_s,
                 "end the job once no rank issued an operation for S seconds (a hang or crash drill), exit 3 "
                 "(0: never)");
  app.add_option("--fault", fault_texts,
                 "KIND:rank=R[,op=N|,step=N][,ms=M][,peer=Q] or pause:rank=R,every=K,s=S; repeatable");
  app.add_option("--truth", o.truth, "ground-truth file (JSON lines); default <SCOUT_STATE_DIR>/<job>/truth.jsonl");
  app.add_option("--bcast-every", o.bcast_every, "world Broadcast every K steps (0: never)");
  app.add_option("--ckpt-every", o.ckpt_every, "write a checkpoint after every N steps (0: never)");
  app.add_option("--ckpt-dir", o.ckpt_dir, "checkpoint directory (needed with --ckpt-every)");
  app.add_option("--ckpt-format", o.ckpt_format, "checkpoint layout: megatron, dcp, deepspeed, hf or nemo");
  app.add_option("--ckpt-kill-at", o.ckpt_kill_at, "kill every rank half-way through writing the checkpoint of step N");
  app.add_option(
      "--moe-experts", o.moe_experts,
      "X experts over the E expert-parallel ranks: each step logs its GEMMs through a cuBLASLt logger stand-in");
  app.add_option("--worker-rank", o.worker_rank)->group("");
  app.add_option("--fabric-fd", o.fabric_fd)->group("");
  try {
    app.parse(argc, const_cast<char**>(argv));
  } catch (const CLI::CallForHelp&) {
    *message = app.help();
    return ParseStatus::kHelp;
  } catch (const CLI::ParseError& e) {
    *message = "scout-sim: " + one_line(e.what()) + " (see --help)";
    return ParseStatus::kError;
  }
  auto fail = [&](const std::string& why) {
    *message = "scout-sim: " + why;
    return ParseStatus::kError;
  };
  std::string err;
  double min_b = static_cast<double>(kMinBytes), max_b = static_cast<double>(kMaxBytes);
  if (!config::parse_size(bytes_text, min_b, max_b, &o.bytes, &err)) return fail("--bytes: " + one_line(err));
  if (o.ranks < 1 || o.ranks > kMaxRanks) return fail("--ranks must be in 1.." + std::to_string(kMaxRanks));
  if (o.tp < 1 || o.pp < 1 || o.ep < 1 || o.cp < 1 || o.vpp < 1 || o.nodes < 1)
    return fail("--tp, --pp, --ep, --cp, --vpp and --nodes must be >= 1");
  if (o.ranks % (o.tp * o.cp * o.pp) != 0)
    return fail("--tp " + std::to_string(o.tp) + " x --cp " + std::to_string(o.cp) + " x --pp " + std::to_string(o.pp) +
                " does not divide --ranks " + std::to_string(o.ranks));
  if (o.vpp > 1 && o.pp < 2) return fail("--vpp " + std::to_string(o.vpp) + " needs --pp > 1");
  if (o.dp() % o.ep != 0)
    return fail("--ep " + std::to_string(o.ep) + " does not divide DP = " + std::to_string(o.dp()));
  if (o.moe_experts < 0 || o.moe_experts > 4096 || (o.moe_experts > 0 && o.moe_experts % o.ep != 0))
    return fail("--moe-experts " + std::to_string(o.moe_experts) + " must be in [0, 4096] and a multiple of --ep " +
                std::to_string(o.ep));
  if (o.ranks % o.nodes != 0)
    return fail("--nodes " + std::to_string(o.nodes) + " does not divide --ranks " + std::to_string(o.ranks));
  if ((o.ranks / o.nodes) % o.tp != 0)
    return fail("--nodes " + std::to_string(o.nodes) + " would split TP groups across hosts (" +
                std::to_string(o.ranks / o.nodes) + " ranks per host, --tp " + std::to_string(o.tp) + ")");
  if (o.steps < 1) return fail("--steps must be >= 1");
  if (o.step_ms < 0) return fail("--step-ms must be >= 0");
  if (o.timeout_s < 0) return fail("--timeout must be >= 0");
  if (o.idle_timeout_s < 0) return fail("--idle-timeout must be >= 0");
  if (o.bcast_every < 0) return fail("--bcast-every must be >= 0");
  if (o.ckpt_every < 0) return fail("--ckpt-every must be >= 0");
  if (o.ckpt_every > 0 && o.ckpt_dir.empty()) return fail("--ckpt-every needs --ckpt-dir");
  if (!valid_ckpt_format(o.ckpt_format))
    return fail("--ckpt-format " + o.ckpt_format + ": expected megatron, dcp, deepspeed, hf or nemo");
  if (o.ckpt_kill_at != 0 && (o.ckpt_every == 0 || o.ckpt_kill_at % o.ckpt_every != 0 || o.ckpt_kill_at > o.steps))
    return fail("--ckpt-kill-at must name a checkpointed step (a multiple of --ckpt-every, at most --steps)");
  if (o.job.find_first_of(" \t\n/") != std::string::npos) return fail("--job must not contain spaces or '/'");
  Layout layout(o);
  for (const std::string& t : fault_texts) {
    FaultSpec f;
    if (!parse_fault_spec(t, &f, &err)) return fail(err);
    // One spec per rank: rank=R1+R2+... or every rank of stage S (global rank order).
    std::vector<int> ranks = f.ranks;
    if (f.stage >= 0) {
      if (f.stage >= o.pp)
        return fail("fault '" + t + "': stage " + std::to_string(f.stage) + " is out of range (--pp " +
                    std::to_string(o.pp) + ")");
      ranks.clear();
      for (int g = 0; g < o.ranks; ++g)
        if (layout.coord(g).pp == f.stage) ranks.push_back(g);
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      FaultSpec one = f;
      one.rank = ranks[i];
      one.expanded = static_cast<int>(i);
      std::string why = resolve_fault(&one, layout, o);
      if (!why.empty()) return fail("fault '" + t + "': " + why);
      o.faults.push_back(one);
    }
  }
  if (o.is_worker() && (o.worker_rank >= o.ranks || o.fabric_fd < 0)) return fail("bad worker arguments");
  *out = o;
  return ParseStatus::kOk;
}

std::vector<std::string> worker_argv(const std::string& exe, const SimOptions& o, int rank, int fabric_fd) {
  std::vector<std::string> a = {exe,
                                "--ranks",
                                std::to_string(o.ranks),
                                "--tp",
                                std::to_string(o.tp),
                                "--pp",
                                std::to_string(o.pp),
                                "--ep",
                                std::to_string(o.ep),
                                "--cp",
                                std::to_string(o.cp),
                                "--vpp",
                                std::to_string(o.vpp),
                                "--nodes",
                                std::to_string(o.nodes),
                                "--steps",
                                std::to_string(o.steps),
                                "--bytes",
                                std::to_string(o.bytes),
                                "--step-ms",
                                std::to_string(o.step_ms),
                                "--job",
                                o.job,
                                "--seed",
                                std::to_string(o.seed),
                                "--timeout",
                                std::to_string(o.timeout_s),
                                "--bcast-every",
                                std::to_string(o.bcast_every),
                                "--ckpt-every",
                                std::to_string(o.ckpt_every),
                                "--ckpt-dir",
                                o.ckpt_dir,
                                "--ckpt-format",
                                o.ckpt_format,
                                "--ckpt-kill-at",
                                std::to_string(o.ckpt_kill_at),
                                "--moe-experts",
                                std::to_string(o.moe_experts),
                                "--worker-rank",
                                std::to_string(rank),
                                "--fabric-fd",
                                std::to_string(fabric_fd)};
  if (!o.truth.empty()) {
    a.push_back("--truth");
    a.push_back(o.truth);
  }
  for (const FaultSpec& f : o.faults) {
    if (f.expanded > 0) continue;  // the worker expands the flag again
    a.push_back("--fault");
    a.push_back(f.text);
  }
  return a;
}

}  // namespace scout::sim
