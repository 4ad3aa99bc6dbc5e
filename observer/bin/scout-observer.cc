// scout-observer: one per node, beside the training processes. Reads every scout segment of
// the job on this node, judges (consensus, hangs, stragglers, slow links) and writes the SQLite
// store the `scout` CLI reads. Usage and defaults: observer/pipeline/command_line.h,
// docs/observer.md.
//
// Exit status: 0 after --once, or after SIGINT/SIGTERM (a final pass is written first);
// 2 for a usage error or a store that can never be opened (not a scout store, another job's,
// damaged; one line on stderr); 3 when findings could not be stored by the end (a store that stayed
// unwritable: full disk, lock held, read-only; each was printed). A store that cannot be written
// for a while (a transient failure) does not stop the observer: it keeps its findings in memory
// and writes them as soon as the store takes them (docs/store.md, "When writes fail").
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/store_replay.h"
#include "observer/cluster/cross_node.h"
#include "observer/net/clock_sync.h"
#include "observer/pipeline/command_line.h"
#include "observer/pipeline/observer.h"
#include "observer/replay/coordinator.h"
#include "observer/store/retrying.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "scout/version.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

void say(const std::string& line) { std::fprintf(stderr, "scout-observer: %s\n", line.c_str()); }

// What announce() said so far: each finding's state as last printed ("open hang", "closed
// stall") by dedup key, and the board's stamp at the last call.
struct Announced {
  std::map<std::string, std::string> seen;
  uint64_t stamp = 0;
};

// Prints findings that are new, changed open/closed or changed kind (a stall that became the hang)
// since the last call, in the board's order; reads only what changed. Called after each pass, and
// by certification before it logs, so a finding's line comes before any line that cites it.
void announce(const scout::obs::FindingBoard& board, Announced* a) {
  std::map<std::string, std::string>* seen = &a->seen;
  uint64_t* stamp = &a->stamp;
  std::vector<const scout::obs::Finding*> changed = board.changed_since(*stamp);
  *stamp = board.stamp();
  std::sort(changed.begin(), changed.end(), [&](const scout::obs::Finding* a, const scout::obs::Finding* b) {
    return board.order(a->dedup_key) < board.order(b->dedup_key);
  });
  for (const scout::obs::Finding* f : changed) {
    const std::string state = std::string(f->open ? "open " : "closed ") + to_string(f->kind);
    auto it = seen->find(f->dedup_key);
    if (it != seen->end() && it->second == state) continue;
    std::string was;
    if (it != seen->end() && f->open && it->second.rfind("open ", 0) == 0)
      was = " (was " + it->second.substr(5) + ")";  // "finding 1 hang (was stall) (attributed): ..."
    say(std::string(f->open ? "finding " : "closed ") + std::to_string(f->id) + " " + to_string(f->kind) + was + " (" +
        to_string(f->verdict) + "): " + f->summary);
    (*seen)[f->dedup_key] = state;
  }
}

// The first line of a run: version, job, node, where segments and the store are, the timeouts.
void say_start(const scout::obs::CommandLine& cl) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "scout %s: job %s, node %d of %d, host %s, segments in %s, store %s, hang timeout %.1f s, "
                "interval %lld ms%s",
                scout::kVersion, cl.opt.job.c_str(), cl.opt.node_rank, cl.opt.nodes, cl.opt.host.c_str(),
                cl.opt.shm_dir.c_str(), cl.store.c_str(), double(cl.opt.hang.timeout_ns) / 1e9,
                static_cast<long long>(cl.opt.interval_ns / 1'000'000), cl.once ? ", one pass" : "");
  say(line);
}

// Checkpoint certification (docs/certification.md): its tables, the replay cycles it reads back
// (replay on) and the certifier, hooked after each pass.
struct Certification {
  std::unique_ptr<scout::ckpt::CkptStore> store;
  std::unique_ptr<scout::ckpt::StoreReplayCycles> replay_cycles;
  std::unique_ptr<scout::ckpt::Certifier> certifier;
};

// Starts certification on `observer` when checkpoint directories are given. Its tables are
// opened when `store` can be written (at once, or at the first pass after a held lock or a full
// disk let go); until then certification waits and says why once per distinct error.
void start_certification(const scout::config::Config& cfg, const scout::obs::CommandLine& cl, bool replay_on,
                         scout::store::RetryingStore* store, scout::obs::Observer& observer, Certification* c,
                         Announced* announced) {
  if (cl.ckpt_dirs.empty()) return;
  scout::ckpt::CertifierOptions co = scout::ckpt::certifier_options(cfg, cl.opt.job, cl.store, cl.ckpt_dirs);
  co.write_beside = cl.ckpt_write_certificate;
  co.grace_ns = std::max<int64_t>(co.grace_ns, 2 * cl.opt.interval_ns);
  co.stale_ns = std::max<int64_t>(co.stale_ns, cl.opt.judge.settle_timeout_ns + co.cycle_ns);
  if (!cl.quiet) co.log = say;
  // Replay on: each check cycle's replay cycle, from the store, must pass for it to be clean.
  if (replay_on) c->replay_cycles = std::make_unique<scout::ckpt::StoreReplayCycles>(cl.store);
  const std::string path = cl.store;
  std::string ckpt_error;
  observer.set_after_pass_step([c, co, store, path, ckpt_error, announced, quiet = cl.quiet](
                                   const scout::obs::Model& m, const scout::obs::JudgeOutput& out,
                                   const scout::obs::FindingBoard& board, int64_t now_ns) mutable {
    if (!quiet) announce(board, announced);  // the findings' lines before the lines citing them
    if (!c->certifier) {
      if (!store->is_open()) return;
      try {
        c->store = scout::ckpt::CkptStore::open_writer(path);
        c->certifier = std::make_unique<scout::ckpt::Certifier>(co, c->store.get(), c->replay_cycles.get());
      } catch (const std::exception& e) {
        c->store.reset();
        if (ckpt_error != e.what()) say(std::string("certification waits for its store: ") + e.what());
        ckpt_error = e.what();
        return;
      }
    }
    c->certifier->on_pass(m, out, board, now_ns);
  });
  if (!cl.quiet) {
    std::string dirs;
    for (const auto& d : cl.ckpt_dirs) dirs += (dirs.empty() ? "" : ", ") + d;
    say("certification: watching " + dirs + ", check cycle " + std::to_string(co.cycle_ns / 1'000'000) + " ms, K " +
        std::to_string(co.k) + ", replay " + (c->replay_cycles ? "on" : "off") + ", certificates in " + co.cert_dir);
  }
}

// Says once when the observer network has not formed (or broke) for 10 s, and again when it
// connects: a node whose observer never joins is said in the log, not only in `scout status`.
class NetDownLog {
 public:
  void check(const scout::obs::CrossNode& network, const scout::obs::CommandLine& cl) {
    const scout::net::NetAgent::Status ns = network.status();
    const int64_t now = scout::shm::wall_ns();
    constexpr int64_t kSayDownAfterNs = 10'000'000'000;
    if (ns.connected) {
      if (said_) say("network: connected to " + std::to_string(ns.peers) + " other observers");
      since_ = 0;
      said_ = false;
      return;
    }
    if (since_ == 0) since_ = now;
    if (said_ || now - since_ < kSayDownAfterNs) return;
    say("network: not connected for " + std::to_string((now - since_) / 1'000'000'000) + " s (rendezvous " + cl.rdzv +
        ", " + std::to_string(cl.opt.nodes) +
        " nodes expected): an observer is missing or unreachable; operations spanning nodes are not compared "
        "until the channel forms" +
        (ns.last_error.empty() ? std::string() : " (last error: " + ns.last_error + ")"));
    said_ = true;
  }

 private:
  int64_t since_ = 0;  // wall ns the network was first seen down (0: connected)
  bool said_ = false;
};

// After the first pass: "ready" (or "ready store-unwritable") on --ready-fd, then the pipe is
// closed. `scout run` starts COMMAND at this line, whether or not the store took the pass.
void say_ready(int* ready_fd, const scout::store::RetryingStore& store) {
  if (*ready_fd < 0) return;
  const std::string line = store.health().failing_since_ns != 0 ? "ready store-unwritable\n" : "ready\n";
  ssize_t ignored = ::write(*ready_fd, line.data(), line.size());
  (void)ignored;
  ::close(*ready_fd);
  *ready_fd = -1;
}

// Passes every interval until --once or SIGINT/SIGTERM, announcing findings as they change.
void run_passes(scout::obs::Observer& observer, const scout::obs::CommandLine& cl,
                const scout::store::RetryingStore& store, const scout::obs::CrossNode* network, Announced* announced) {
  int ready_fd = cl.ready_fd;
  NetDownLog net_down;
  while (true) {
    // The final pass must begin after the stop request: a pass already under way when SIGTERM
    // arrives may have read the segments before the job's last records (e.g. `scout run` stops
    // the observer right after COMMAND exits), so one more pass follows it.
    const bool final_pass = g_stop.load();
    observer.pass(scout::shm::wall_ns());
    say_ready(&ready_fd, store);
    if (!cl.quiet) announce(observer.findings(), announced);
    if (network && !cl.quiet) net_down.check(*network, cl);
    if (cl.once || final_pass) break;
    if (g_stop.load()) continue;  // requested during the pass: the final pass now
    timespec ts{time_t(cl.opt.interval_ns / 1'000'000'000), long(cl.opt.interval_ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);  // a signal ends the sleep early; the next pass is the final one
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> warnings;
  scout::config::Config cfg = scout::config::load({}, [&](const std::string& m) { warnings.push_back(m); });
  scout::obs::CommandLine cl;
  std::string msg;
  switch (scout::obs::parse_command_line(argc, argv, cfg, &cl, &msg)) {
    case scout::obs::ParseResult::kHelp: std::fputs(msg.c_str(), stdout); return 0;
    case scout::obs::ParseResult::kError: say(msg); return 2;
    case scout::obs::ParseResult::kOk: break;
  }
  for (const auto& w : warnings) say(w);
  if (!cl.quiet) cl.opt.log = say;
  scout::obs::ReplayOptions replay_opt;
  if (!scout::obs::replay_options(cfg, cl, &replay_opt, &msg)) {
    say(msg);
    return 2;
  }

  scout::store::WriterOptions wo;
  wo.max_ops = cfg.store_max_ops;
  wo.on_error = say;
  wo.job = cl.opt.job;
  auto store = std::make_unique<scout::store::RetryingStore>(cl.store, wo);
  if (!store->is_open()) {
    if (store->permanent()) {
      say(store->error());
      return 2;
    }
    say(store->error() +
        "; the job is observed and its findings kept in memory until the store can be written "
        "(retried every pass)");
  }

  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A reader gone from the ready pipe (--ready-fd: scout run may have seen the first pass in the
  // store first) or a socket closed by a peer must be an error to handle, never a signal that kills.
  signal(SIGPIPE, SIG_IGN);

  if (!cl.quiet) say_start(cl);

  scout::obs::Observer observer(cl.opt, store.get());
  // Replay cycles (docs/replay.md) at each pass, after the detectors.
  std::unique_ptr<scout::obs::ReplayCoordinator> replay;
  if (replay_opt.enabled) {
    replay = std::make_unique<scout::obs::ReplayCoordinator>(replay_opt, cl.opt.job, cl.opt.shm_dir, cl.opt.node_rank,
                                                             cl.opt.log);
    observer.set_after_detect_step([&](scout::obs::Observer::AfterDetectIo& io) {
      replay->on_pass(io.model, io.judged, io.board, io.sink, io.now_ns);
    });
  }
  Certification certification;
  Announced announced;  // the finding lines said (after each pass, and before certification's)
  start_certification(cfg, cl, replay_opt.enabled, store.get(), observer, &certification, &announced);
  // Several nodes: the observer network runs beside the passes (docs/observer-network.md).
  scout::net::RealtimeClock clock;
  std::unique_ptr<scout::obs::CrossNode> network;
  if (cl.opt.nodes > 1) {
    scout::obs::CrossNodeOptions no = scout::obs::cross_node_options(cfg, cl.opt, cl.rdzv);
    if (!cl.quiet) {
      say("network: node-rank " + std::to_string(cl.opt.node_rank) + " of " + std::to_string(cl.opt.nodes) +
          (cl.opt.node_rank == 0 ? " (leader: its store holds the job-wide findings)" : "") + ", rendezvous " +
          cl.rdzv + ", digest round every " + std::to_string(cfg.net_interval_ms) + " ms");
    }
    network = std::make_unique<scout::obs::CrossNode>(observer, no, clock);
    network->start();
  }
  run_passes(observer, cl, *store, network.get(), &announced);
  if (network) {
    network->stop();
    if (!cl.quiet) say(network->status_line());
  }
  // Findings still unstored (the store took none of the last batch): one more try a second later.
  if (store->health().failing_since_ns != 0) {
    timespec ts{1, 0};
    nanosleep(&ts, nullptr);
    observer.pass(scout::shm::wall_ns());
  }
  if (!cl.quiet) say(observer.stats_line());
  const scout::obs::StoreHealth h = store->health();
  if (h.failing_since_ns != 0 && h.unstored_findings > 0) {
    say(std::to_string(h.unstored_findings) + " findings could not be stored in " + cl.store + " (" + h.last_error +
        "): they are in the lines above only");
    return 3;
  }
  if (h.failing_since_ns != 0)
    say("the store could not be written at the end (" + h.last_error +
        "): no finding is missing, the last state of ranks and operations is");
  if (h.failed_batches > 0 && !cl.quiet)
    say(std::to_string(h.failed_batches) + " store batches failed and were written again later: no finding lost");
  return 0;
}
