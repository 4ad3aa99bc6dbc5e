// Command-line parsing of build/bin/scout (CLI11) and dispatch to the subcommands, one file
// each (observer/cli/*.cc). docs/cli.md documents every subcommand.
//
// Each subcommand is registered by one add_* function below: it declares the subcommand's flags
// on the parent and returns how to run it, either on the opened store (status, report, ...) or on
// its own (run, dump, ckpt, ...). main parses, then runs the one subcommand the user chose.
#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "common/flag_check.h"
#include "observer/cli/common.h"
#include "observer/cli/usage.h"
#include "observer/store/sqlite.h"
#include "scout/version.h"

namespace scout::cli {
namespace {

// Upper bound of rank, node and count flags (keeps CLI11's range message readable).
constexpr int kMaxCount = 1000000000;

// A registered subcommand: `app` is its CLI11 node; exactly one of the two runners is set.
struct Sub {
  CLI::App* app = nullptr;
  std::function<int(store::StoreReader&)> on_store;  // reads the store chosen by --store/--job/--node
  std::function<int()> alone;                        // opens what it needs itself
};
using Subs = std::vector<Sub>;

// The store flags; `node`: with --node-rank (scout run has its own, which also selects the store).
void add_store_flags(CLI::App* app, StoreOptions* w, bool node = true) {
  app->add_option("--store", w->store, "Store file to read (default: the job's store, see --job)");
  app->add_option("--job", w->job,
                  "Job id: read <SCOUT_STATE_DIR>/<job>/node-<K>.db (default: SCOUT_JOB_ID, "
                  "TORCHELASTIC_RUN_ID, SLURM_JOB_ID; scout jobs lists them)");
  if (node) {
    app->add_option("--node-rank", w->node, "Node rank K of the store to read with --job (default 0: the leader)")
        ->check(CLI::Range(0, kMaxCount));
  }
}

// A subcommand that reads the store: registers it with the store flags.
CLI::App* add_reader(CLI::App& app, StoreOptions* where, const char* name, const char* help) {
  CLI::App* s = app.add_subcommand(name, help);
  add_store_flags(s, where);
  return s;
}

void add_status(CLI::App& app, StoreOptions* where, Subs& subs) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* s = add_reader(app, where, "status", "Job summary: nodes, ranks, communicators, open findings");
  s->add_flag("--json", o->json, "One JSON object instead of text");
  subs.push_back({s,
                  [o, where](store::StoreReader& rd) {
                    o->selector = store_selector(*where);
                    return cmd_status(rd, *o, std::cout);
                  },
                  nullptr});
}

void add_report(CLI::App& app, StoreOptions* where, Subs& subs) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* s = add_reader(app, where, "report", "Per-collective table");
  s->add_option("--comm", o->comm, "Communicator: commHash (0x...) or name");
  s->add_option("--rank", o->rank, "Only operations with this global rank; adds its lateness")
      ->check(CLI::Range(0, kMaxCount));
  s->add_option("--func", o->func, "Only this function (AllReduce, AllGather, ...)");
  s->add_option("--last", o->last, "Only the N latest operations")->check(CLI::Range(1, kMaxCount));
  s->add_flag("--json", o->json, "JSON lines, one per operation");
  s->add_option("--html", o->html,
                "Write the whole job as one self-contained HTML page to FILE ('-': stdout): findings, "
                "timeline, pictures, checkpoints, replay cycles");
  subs.push_back({s, [o](store::StoreReader& rd) { return cmd_report(rd, *o, std::cout); }, nullptr});
}

void add_findings(CLI::App& app, StoreOptions* where, Subs& subs) {
  auto o = std::make_shared<FindingsOptions>();
  CLI::App* s = add_reader(app, where, "findings", "Findings table (or JSON lines)");
  s->add_flag("--open", o->open_only, "Only open findings");
  s->add_flag("--json", o->json, "One JSON object per finding per line");
  subs.push_back({s, [o](store::StoreReader& rd) { return cmd_findings(rd, *o, std::cout); }, nullptr});
}

void add_explain(CLI::App& app, StoreOptions* where, Subs& subs) {
  struct Opts {
    int64_t id = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* s = add_reader(app, where, "explain", "One finding with its evidence in words");
  s->add_option("id", o->id, "Finding id (scout findings)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) {
              return "finding id '" + v + "' is not a finding number (see " + program_name() + " findings)";
            }
            return "";
          },
          "ID", "finding number"));
  s->add_flag("--json", o->json, "The finding's JSON object");
  subs.push_back({s, [o](store::StoreReader& rd) { return cmd_explain(rd, o->id, o->json, std::cout); }, nullptr});
}

void add_export(CLI::App& app, StoreOptions* where, Subs& subs) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* s = add_reader(app, where, "export", "Export the store: JSON lines, Prometheus, Chrome trace");
  s->add_option("--format", o->format, "jsonl | prometheus | chrome-trace")->required();
  s->add_option("--out", o->out, "Output file (default stdout); written atomically");
  subs.push_back({s, [o](store::StoreReader& rd) { return cmd_export(rd, *o, std::cout); }, nullptr});
}

// `scout run`: observer flags given by name are forwarded to scout-observer in front of
// --observer-arg ones, so that both spellings work.
void add_run(CLI::App& app, Subs& subs) {
  struct Opts {
    RunOptions run;
    std::string nodes, node_rank, rdzv, hang_timeout, interval;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* s = app.add_subcommand("run", "Run COMMAND under scout: observer, plugin, status at the end");
  add_store_flags(s, &o->run.where, /*node=*/false);
  s->add_option("--nodes", o->nodes, "Observer: number of nodes (observers) in the job");
  s->add_option("--node-rank", o->node_rank, "Observer: this node's rank (also selects the store)");
  s->add_option("--rdzv", o->rdzv, "Observer: rendezvous, file:DIR or redis:HOST:PORT");
  s->add_option("--hang-timeout", o->hang_timeout, "Observer: seconds without progress before a hang")
      ->check(config::finite_range(0.1, 86400.0));
  s->add_option("--interval", o->interval, "Observer: analysis interval in ms");
  s->add_option("--observer-arg", o->run.observer_args,
                "Any other flag for scout-observer, one per use: --observer-arg=--once")
      ->allow_extra_args(false);
  s->add_option("--start-timeout", o->run.start_timeout_s,
                "Seconds to wait for the observer's first pass before COMMAND starts")
      ->check(config::finite_range(0.0, 3600.0));
  s->add_option("--stop-timeout", o->run.stop_timeout_s, "Seconds the observer gets to flush after COMMAND ends")
      ->check(config::finite_range(0.0, 3600.0));
  s->add_flag("--keep-segments", o->run.keep_segments,
              "Keep the job's shared-memory segments after the observer's final pass (for scout dump)");
  s->add_option("command", o->run.command, "COMMAND and its arguments, after --")->required();
  subs.push_back({s, nullptr, [o] {
                    RunOptions& run = o->run;
                    auto forward = [&](const char* flag, const std::string& v) {
                      if (!v.empty()) run.observer_args.insert(run.observer_args.begin(), {flag, v});
                    };
                    forward("--interval", o->interval);
                    forward("--hang-timeout", o->hang_timeout);
                    forward("--rdzv", o->rdzv);
                    forward("--node-rank", o->node_rank);
                    forward("--nodes", o->nodes);
                    auto integer = [](const char* flag, const std::string& v, int* out) {
                      if (v.empty()) return;
                      try {
                        *out = std::stoi(v);
                      } catch (...) { throw UsageError(std::string(flag) + " " + v + ": not an integer"); }
                    };
                    integer("--nodes", o->nodes, &run.nodes);
                    integer("--node-rank", o->node_rank, &run.where.node);
                    return cmd_run(run);
                  }});
}

void add_dump(CLI::App& app, Subs& subs) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* s = app.add_subcommand("dump", "Records of shared-memory segments as JSON lines");
  s->add_option("paths", o->paths, "Segment files (default: the segments of --job in --dir)");
  s->add_option("--job", o->job,
                "Job whose segments to dump (default: SCOUT_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID)");
  s->add_option("--dir", o->dir, "Directory of the segments (default: SCOUT_SHM_DIR, /dev/shm)");
  s->add_option("--host", o->host, "Only segments of this host (default: every host)");
  s->add_flag("--no-ops", o->no_ops, "Segment and communicator lines only");
  s->add_option("--ring", o->ring, "Only this ring (communicator slot)")->check(CLI::Range(0, kMaxCount));
  subs.push_back({s, nullptr, [o] { return cmd_dump(*o, std::cout); }});
}

void add_clean(CLI::App& app, Subs& subs) {
  auto o = std::make_shared<CleanOptions>();
  CLI::App* s = app.add_subcommand("clean", "Remove the segments of processes that are gone");
  s->add_option("--dir", o->dir, "Directory of the segments (default: SCOUT_SHM_DIR, /dev/shm)");
  s->add_option("--job", o->job, "Only this job's segments (default: every job)");
  subs.push_back({s, nullptr, [o] { return cmd_clean(*o, std::cout); }});
}

// `scout ckpt list|show|latest`: reads the store by path (a missing store is its own message).
void add_ckpt(CLI::App& app, Subs& subs) {
  struct Opts {
    CkptOptions ck;
    StoreOptions where;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* s = app.add_subcommand("ckpt", "Checkpoints and their certification (list, show, latest)");
  s->require_subcommand(1);
  CLI::App* list = add_reader(*s, &o->where, "list", "Every checkpoint seen, with its state");
  list->add_flag("--json", o->ck.json, "JSON lines, one per checkpoint");
  CLI::App* show = add_reader(*s, &o->where, "show", "One checkpoint, its certificate and the chain check");
  show->add_option("checkpoint", o->ck.target, "Checkpoint path or id (scout ckpt list)")->required();
  show->add_flag("--json", o->ck.json, "One JSON object");
  CLI::App* latest = add_reader(*s, &o->where, "latest", "Path of the newest checkpoint to restart from");
  latest->add_flag("--verified", o->ck.verified, "Only a verified checkpoint (else: newest not rejected)");
  subs.push_back({s, nullptr, [o, list, show] {
                    o->ck.action = *list ? "list" : *show ? "show" : "latest";
                    return cmd_ckpt(store_path(o->where), o->ck, std::cout);
                  }});
}

void add_jobs(CLI::App& app, Subs& subs) {
  auto o = std::make_shared<JobsOptions>();
  CLI::App* s =
      app.add_subcommand("jobs", "Jobs with a store in SCOUT_STATE_DIR, newest first: id, start, ranks, findings");
  s->add_option("--state-dir", o->state_dir, "State directory (default: SCOUT_STATE_DIR, /tmp/scout)");
  s->add_flag("--json", o->json, "One JSON object per job per line");
  subs.push_back({s, nullptr, [o] { return cmd_jobs(*o, std::cout); }});
}

void add_hash(CLI::App& app, Subs& subs) {
  auto path = std::make_shared<std::string>();
  CLI::App* s = app.add_subcommand("hash", "Fingerprint of a file's bytes (16 hex digits)");
  s->add_option("file", *path, "File to fingerprint")->required();
  subs.push_back({s, nullptr, [path] { return cmd_hash(*path, std::cout); }});
}

void add_config(CLI::App& app, Subs& subs) {
  struct Opts {
    bool markdown = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* s = app.add_subcommand("config", "Effective SCOUT_* configuration");
  s->add_flag("--markdown", o->markdown, "The registry as the table of docs/configuration.md");
  s->add_flag("--json", o->json, "JSON lines, one per variable");
  subs.push_back({s, nullptr, [o] { return cmd_config(o->markdown, o->json, std::cout); }});
}

// `scout replay plan|list|show|run`: the subcommand's own subcommands are registered as readers.
void add_replay(CLI::App& app, StoreOptions* where, Subs& subs) {
  CLI::App* s = app.add_subcommand("replay", "Replay: the GEMM replay plan and the replay cycles");
  s->require_subcommand(1);
  auto o = std::make_shared<ReplayPlanOptions>();
  CLI::App* plan = add_reader(*s, where, "plan", "Captured GEMM shapes, regimes, chosen recipes, coverage");
  plan->add_flag("--json", o->json, "One JSON object (docs/replay-schedule.md, \"JSON\")");
  plan->add_option("--budget-ms", o->budget_ms, "Replay time per check cycle, ms (default 50)")
      ->check(CLI::Range(0.001, 1e9));
  plan->add_option("--sm-count", o->sm_count, "SMs of the GPU model for pressure classes (default 132)")
      ->check(CLI::Range(1, 100000));
  plan->add_option("--max-recipes", o->max_recipes, "At most this many recipes (default 0: cover every shape)")
      ->check(CLI::Range(0, 1000000));
  subs.push_back({plan, [o](store::StoreReader& rd) { return cmd_replay_plan(rd, *o, std::cout); }, nullptr});
  auto list_json = std::make_shared<bool>(false);
  CLI::App* list = add_reader(*s, where, "list", "Replay cycles: trigger, outcome, what each found");
  list->add_flag("--json", *list_json, "JSON lines, one per cycle");
  subs.push_back(
      {list, [list_json](store::StoreReader& rd) { return cmd_replay_list(rd, *list_json, std::cout); }, nullptr});
  auto show_o = std::make_shared<ReplayShowOptions>();
  CLI::App* show =
      add_reader(*s, where, "show", "One replay cycle: what it found, the recipes that did not pass, the votes");
  show->add_option("id", show_o->id, "Cycle id (the ID column of scout replay list)")->required();
  show->add_flag("--samples", show_o->samples, "Also the GPUs, every recipe and every sample with its time");
  show->add_flag("--json", show_o->json, "One JSON object with the cycle's whole detail");
  subs.push_back({show,
                  [show_o, where](store::StoreReader& rd) {
                    show_o->selector = store_selector(*where);
                    return cmd_replay_show(rd, *show_o, std::cout);
                  },
                  nullptr});
  auto run_o = std::make_shared<ReplayRunOptions>();
  CLI::App* run = add_reader(*s, where, "run", "Ask the job's observer for one replay cycle now and print it");
  run->add_option("--ranks", run_o->ranks, "Global ranks to replay on, e.g. 0-3,5 (default: every GPU of the node)");
  run->add_option("--recipes", run_o->recipes, "Recipe kinds: gemm,coll,link (default: all)");
  run->add_option("--wait-s", run_o->wait_s, "How long to wait for the answer, s (default 90)")
      ->check(CLI::Range(0.1, 86400.0));
  run->add_flag("--samples", run_o->samples, "Print the cycle as scout replay show --samples");
  run->add_flag("--json", run_o->json, "The cycle as one JSON object (scout replay show --json)");
  subs.push_back({run, nullptr, [run_o, where] { return cmd_replay_run(*where, *run_o, std::cout); }});
}

// The word shown for an option's value in --help (no CLI11 type tags: docs/cli.md).
const char* value_word(const std::string& lname) {
  static const std::pair<const char*, const char*> kWords[] = {{"store", "PATH"},
                                                               {"job", "ID"},
                                                               {"node-rank", "K"},
                                                               {"comm", "NAME|0xHASH"},
                                                               {"rank", "R"},
                                                               {"func", "FUNCTION"},
                                                               {"last", "N"},
                                                               {"html", "FILE"},
                                                               {"format", "FORMAT"},
                                                               {"out", "FILE"},
                                                               {"nodes", "N"},
                                                               {"rdzv", "SPEC"},
                                                               {"hang-timeout", "S"},
                                                               {"interval", "MS"},
                                                               {"observer-arg", "FLAG"},
                                                               {"start-timeout", "S"},
                                                               {"stop-timeout", "S"},
                                                               {"dir", "DIR"},
                                                               {"host", "HOST"},
                                                               {"ring", "N"},
                                                               {"budget-ms", "MS"},
                                                               {"sm-count", "N"},
                                                               {"max-recipes", "N"},
                                                               {"ranks", "RANKS"},
                                                               {"recipes", "KINDS"},
                                                               {"wait-s", "S"},
                                                               {"state-dir", "DIR"},
                                                               {"id", "ID"},
                                                               {"command", "COMMAND..."},
                                                               {"paths", "SEGMENT..."},
                                                               {"checkpoint", "CHECKPOINT"},
                                                               {"file", "FILE"},
                                                               {"samples", "N"}};
  for (const auto& [name, word] : kWords) {
    if (lname == name) return word;
  }
  return "VALUE";
}

// Every option that takes a value shows a word for it, never CLI11's type tags ("TEXT:FLOAT",
// "INT:INT in [0 - 1000000000]"), in this app and its subcommands.
void label_values(CLI::App& app) {
  for (CLI::Option* o : app.get_options([](const CLI::Option*) { return true; })) {
    if (o->get_items_expected_max() == 0 || !o->get_option_text().empty()) continue;
    const std::string name = !o->get_lnames().empty() ? o->get_lnames().front() : o->get_name();
    o->option_text(value_word(name));
  }
  for (CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) label_values(*s);
}

// Parses argv into the chosen subcommand; returns it, or sets *exit_code and returns nullptr.
const Sub* parse(CLI::App& app, const Subs& subs, int argc, char** argv, int* exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    *exit_code = app.exit(e);
    return nullptr;
  } catch (const CLI::CallForAllHelp& e) {
    *exit_code = app.exit(e);
    return nullptr;
  } catch (const CLI::CallForVersion& e) {
    *exit_code = app.exit(e);
    return nullptr;
  } catch (const CLI::ParseError& e) {
    std::cerr << usage_message(app, e, program_name(), std::vector<std::string>(argv + 1, argv + argc)) << "\n";
    *exit_code = kExitUsage;
    return nullptr;
  }
  for (const Sub& s : subs) {
    if (*s.app) return &s;
  }
  std::cerr << "scout: no subcommand given (" << program_name() << " --help lists them)\n";
  *exit_code = kExitUsage;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  set_program_name(argc > 0 ? argv[0] : nullptr);
  CLI::App app{"scout: finds hangs, stragglers and silent data corruption in NCCL jobs", "scout"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("scout ") + kVersion);

  StoreOptions where;
  Subs subs;
  add_status(app, &where, subs);
  add_report(app, &where, subs);
  add_findings(app, &where, subs);
  add_explain(app, &where, subs);
  add_export(app, &where, subs);
  add_run(app, subs);
  add_dump(app, subs);
  add_clean(app, subs);
  add_ckpt(app, subs);
  add_hash(app, subs);
  add_config(app, subs);
  add_replay(app, &where, subs);
  add_jobs(app, subs);
  label_values(app);

  int code = kExitUsage;
  const Sub* chosen = parse(app, subs, argc, argv, &code);
  if (!chosen) return code;
  try {
    if (chosen->alone) return chosen->alone();
    auto rd = open_store(where);
    return chosen->on_store(*rd);
  } catch (const UsageError& e) {
    std::cout.flush();
    std::cerr << "scout: " << e.what() << "\n";
  } catch (const store::Error& e) {
    std::cout.flush();
    std::cerr << "scout: " << e.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace scout::cli
