// Command-line parsing of build/bin/scout (CLI11) and dispatch to the subcommands, one file
// each (observer/cli/*.cc). docs/cli.md documents every subcommand.
#include <CLI/CLI.hpp>

#include <iostream>

#include "observer/cli/common.h"
#include "observer/pipeline/flag_check.h"
#include "observer/store/sqlite.h"
#include "scout/version.h"

namespace scout::cli {
namespace {

// Upper bound of rank, node and count flags (keeps CLI11's range message readable).
constexpr int kMaxCount = 1000000000;

void add_store_flags(CLI::App* app, StoreOptions* w) {
  app->add_option("--store", w->store, "Store file to read (default: the job's store, see --job)");
  app->add_option("--job", w->job,
                  "Job id: read <SCOUT_STATE_DIR>/<job>/node-<K>.db (default: SCOUT_JOB_ID, "
                  "TORCHELASTIC_RUN_ID, SLURM_JOB_ID)");
  app->add_option("--node", w->node, "Node rank K of the store to read with --job (default 0: the leader)")
      ->check(CLI::Range(0, kMaxCount));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"scout: finds hangs, stragglers and silent data corruption in NCCL jobs", "scout"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("scout ") + kVersion);

  StoreOptions where;
  StatusOptions status;
  ReportOptions report;
  FindingsOptions findings;
  int64_t explain_id = 0;
  bool explain_json = false;
  ExportOptions exp;
  RunOptions run;
  bool cfg_markdown = false, cfg_json = false;

  CLI::App* s_status = app.add_subcommand("status", "Job summary: nodes, ranks, communicators, open findings");
  add_store_flags(s_status, &where);
  s_status->add_flag("--json", status.json, "One JSON object instead of text");

  CLI::App* s_report = app.add_subcommand("report", "Per-collective table");
  add_store_flags(s_report, &where);
  s_report->add_option("--comm", report.comm, "Communicator: commHash (0x...) or name");
  s_report->add_option("--rank", report.rank, "Only operations with this global rank; adds its lateness")
      ->check(CLI::Range(0, kMaxCount));
  s_report->add_option("--func", report.func, "Only this function (AllReduce, AllGather, ...)");
  s_report->add_option("--last", report.last, "Only the N latest operations")->check(CLI::Range(1, kMaxCount));
  s_report->add_flag("--json", report.json, "JSON lines, one per operation");

  CLI::App* s_findings = app.add_subcommand("findings", "Findings table (or JSON lines)");
  add_store_flags(s_findings, &where);
  s_findings->add_flag("--open", findings.open_only, "Only open findings");
  s_findings->add_flag("--json", findings.json, "One JSON object per finding per line");

  CLI::App* s_explain = app.add_subcommand("explain", "One finding with its evidence in words");
  add_store_flags(s_explain, &where);
  s_explain->add_option("id", explain_id, "Finding id (scout findings)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) {
              return "finding id '" + v + "' is not a finding number (see scout findings)";
            }
            return "";
          },
          "ID", "finding number"));
  s_explain->add_flag("--json", explain_json, "The finding's JSON object");

  CLI::App* s_export = app.add_subcommand("export", "Export the store: JSON lines, Prometheus, Chrome trace");
  add_store_flags(s_export, &where);
  s_export->add_option("--format", exp.format, "jsonl | prometheus | chrome-trace")->required();
  s_export->add_option("--out", exp.out, "Output file (default stdout); written atomically");

  CLI::App* s_run = app.add_subcommand("run", "Run COMMAND under scout: observer, plugin, status at the end");
  add_store_flags(s_run, &run.where);
  std::string nodes, node_rank, rdzv, hang_timeout, interval;
  s_run->add_option("--nodes", nodes, "Observer: number of nodes (observers) in the job");
  s_run->add_option("--node-rank", node_rank, "Observer: this node's rank (also selects the store)");
  s_run->add_option("--rdzv", rdzv, "Observer: rendezvous, file:DIR or redis:HOST:PORT");
  s_run->add_option("--hang-timeout", hang_timeout, "Observer: seconds without progress before a hang")
      ->check(obs::finite_range(0.1, 86400.0));
  s_run->add_option("--interval", interval, "Observer: analysis interval in ms");
  s_run
      ->add_option("--observer-arg", run.observer_args,
                   "Any other flag for scout-observer, one per use: --observer-arg=--once")
      ->allow_extra_args(false);
  s_run
      ->add_option("--start-timeout", run.start_timeout_s,
                   "Seconds to wait for the observer's first pass before COMMAND starts")
      ->check(obs::finite_range(0.0, 3600.0));
  s_run->add_option("--stop-timeout", run.stop_timeout_s, "Seconds the observer gets to flush after COMMAND ends")
      ->check(obs::finite_range(0.0, 3600.0));
  s_run->add_flag("--keep-segments", run.keep_segments,
                  "Keep the job's shared-memory segments after the observer's final pass (for scout dump)");
  s_run->add_option("command", run.command, "COMMAND and its arguments, after --")->required();

  DumpOptions dump;
  CLI::App* s_dump = app.add_subcommand("dump", "Records of shared-memory segments as JSON lines");
  s_dump->add_option("paths", dump.paths, "Segment files (default: the segments of --job in --dir)");
  s_dump->add_option("--job", dump.job,
                     "Job whose segments to dump (default: SCOUT_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID)");
  s_dump->add_option("--dir", dump.dir, "Directory of the segments (default: SCOUT_SHM_DIR, /dev/shm)");
  s_dump->add_option("--host", dump.host, "Only segments of this host (default: every host)");
  s_dump->add_flag("--no-ops", dump.no_ops, "Segment and communicator lines only");
  s_dump->add_option("--ring", dump.ring, "Only this ring (communicator slot)")->check(CLI::Range(0, kMaxCount));

  CleanOptions clean;
  CLI::App* s_clean = app.add_subcommand("clean", "Remove the segments of processes that are gone");
  s_clean->add_option("--dir", clean.dir, "Directory of the segments (default: SCOUT_SHM_DIR, /dev/shm)");
  s_clean->add_option("--job", clean.job, "Only this job's segments (default: every job)");

  CkptOptions ck;
  CLI::App* s_ckpt = app.add_subcommand("ckpt", "Checkpoints and their certification (list, show, latest)");
  s_ckpt->require_subcommand(1);
  CLI::App* s_ck_list = s_ckpt->add_subcommand("list", "Every checkpoint seen, with its state");
  add_store_flags(s_ck_list, &where);
  s_ck_list->add_flag("--json", ck.json, "JSON lines, one per checkpoint");
  CLI::App* s_ck_show = s_ckpt->add_subcommand("show", "One checkpoint, its certificate and the chain check");
  add_store_flags(s_ck_show, &where);
  s_ck_show->add_option("checkpoint", ck.target, "Checkpoint path or id (scout ckpt list)")->required();
  s_ck_show->add_flag("--json", ck.json, "One JSON object");
  CLI::App* s_ck_latest = s_ckpt->add_subcommand("latest", "Path of the newest checkpoint to restart from");
  add_store_flags(s_ck_latest, &where);
  s_ck_latest->add_flag("--verified", ck.verified, "Only a verified checkpoint (else: newest not rejected)");

  std::string hash_path;
  CLI::App* s_hash = app.add_subcommand("hash", "Fingerprint of a file's bytes (16 hex digits)");
  s_hash->add_option("file", hash_path, "File to fingerprint")->required();

  CLI::App* s_config = app.add_subcommand("config", "Effective SCOUT_* configuration");
  s_config->add_flag("--markdown", cfg_markdown, "The registry as the table of docs/configuration.md");
  s_config->add_flag("--json", cfg_json, "JSON lines, one per variable");

  ReplayPlanOptions rplan;
  CLI::App* s_replay = app.add_subcommand("replay", "Replay: the GEMM replay plan");
  CLI::App* s_rplan = s_replay->add_subcommand("plan", "Captured GEMM shapes, regimes, chosen recipes, coverage");
  s_replay->require_subcommand(1);
  add_store_flags(s_rplan, &where);
  s_rplan->add_flag("--json", rplan.json,
                    "One JSON object (keys shapes, regimes, recipes, coverage, cycle_ms, budget)");
  s_rplan->add_option("--budget-ms", rplan.budget_ms, "Replay time per check cycle, ms (default 50)")
      ->check(CLI::Range(0.001, 1e9));
  s_rplan->add_option("--sm-count", rplan.sm_count, "SMs of the GPU model for pressure classes (default 132)")
      ->check(CLI::Range(1, 100000));
  s_rplan->add_option("--max-recipes", rplan.max_recipes, "At most this many recipes (default 0: cover every shape)")
      ->check(CLI::Range(0, 1000000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
    std::cerr << "scout: " << e.what() << " (scout --help)\n";
    return kExitUsage;
  }

  if (app.get_subcommands().empty()) {
    std::cerr << "scout: no subcommand given (scout --help lists them)\n";
    return kExitUsage;
  }
  try {
    if (*s_config) return cmd_config(cfg_markdown, cfg_json, std::cout);
    if (*s_hash) return cmd_hash(hash_path, std::cout);
    if (*s_dump) return cmd_dump(dump, std::cout);
    if (*s_clean) return cmd_clean(clean, std::cout);
    if (*s_run) {
      auto forward = [&](const char* flag, const std::string& v) {
        if (v.empty()) return;
        run.observer_args.insert(run.observer_args.begin(), {flag, v});
      };
      forward("--interval", interval);
      forward("--hang-timeout", hang_timeout);
      forward("--rdzv", rdzv);
      forward("--node-rank", node_rank);
      forward("--nodes", nodes);
      if (!nodes.empty()) {
        try {
          run.nodes = std::stoi(nodes);
        } catch (...) { throw UsageError("--nodes " + nodes + ": not an integer"); }
      }
      if (!node_rank.empty()) {
        try {
          run.where.node = std::stoi(node_rank);
        } catch (...) { throw UsageError("--node-rank " + node_rank + ": not an integer"); }
      }
      return cmd_run(run);
    }
    if (*s_ckpt) {
      ck.action = *s_ck_list ? "list" : *s_ck_show ? "show" : "latest";
      return cmd_ckpt(store_path(where), ck, std::cout);
    }
    auto rd = open_store(where);
    status.selector = store_selector(where);
    if (*s_status) return cmd_status(*rd, status, std::cout);
    if (*s_report) return cmd_report(*rd, report, std::cout);
    if (*s_findings) return cmd_findings(*rd, findings, std::cout);
    if (*s_explain) return cmd_explain(*rd, explain_id, explain_json, std::cout);
    if (*s_export) return cmd_export(*rd, exp, std::cout);
    if (*s_rplan) return cmd_replay_plan(*rd, rplan, std::cout);
  } catch (const UsageError& e) {
    std::cout.flush();
    std::cerr << "scout: " << e.what() << "\n";
    return kExitUsage;
  } catch (const store::Error& e) {
    std::cout.flush();
    std::cerr << "scout: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitUsage;
}

}  // namespace scout::cli
