// Shared pieces of the scout CLI: the user-error type (exit code 2), finding the store, and the
// option structs of each subcommand (parsed in observer/cli/main.cc, run by one file each).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "observer/store/reader.h"

namespace scout::cli {

// Exit codes (docs/cli.md): 0 success; 2 user error (bad flags, wrong store path, store of a
// newer schema, unknown finding id), printed as one line "scout: <message>" on stderr.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
// `scout replay run` (docs/cli.md): the cycle found a failing GPU or link; no observer answered
// (nothing ran, the request is withdrawn); the cycle answered without a verdict (inconclusive, or
// not finished within --wait-s).
constexpr int kExitReplayFailed = 1;
constexpr int kExitNoObserver = 3;
constexpr int kExitNoVerdict = 4;

// A user error: main() prints "scout: <what>" and exits kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The path scout was invoked by, for the commands a hint prints: argv[0] as typed when it holds a
// '/' ("build/bin/scout"), else "scout" (found on PATH). set_program_name is called by main().
const std::string& program_name();
void set_program_name(const char* argv0);

// `s` as one POSIX shell word: unchanged when it holds only safe characters, else single-quoted.
std::string shell_word(const std::string& s);

// Where to read: --store PATH, else --job ID (node --node-rank K, default 0) through
// store::default_store_path under SCOUT_STATE_DIR, else the job from the environment
// (SCOUT_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID; see config::resolve_job_id).
struct StoreOptions {
  std::string store;
  std::string job;
  int node = 0;
};

// The flags that name this store on a command line ("--store PATH", "--job ID [--node-rank K]", or ""
// when the store comes from the environment), quoted for a POSIX shell where needed.
std::string store_selector(const StoreOptions& o);
// The path StoreOptions names. Throws UsageError.
std::string store_path(const StoreOptions& o);
// Opens that store; store errors become UsageError with the store's one-line message.
std::unique_ptr<store::StoreReader> open_store(const StoreOptions& o);

struct StatusOptions {
  bool json = false;
  // How the user named the store ("--job demo", "--store /x.db", or "" for the environment's
  // job), repeated in the hints at the end of the text so they can be pasted as printed.
  std::string selector;
  // The program the hints name ("": program_name(), the path scout was invoked by).
  std::string prog;
};
struct ReportOptions {
  std::string comm;  // "" = all; "0x..." = commHash, else name
  std::optional<int> rank;
  std::string func;
  int64_t last = 0;
  bool json = false;
  std::string html;  // --html FILE: the whole job as one HTML page ("-": stdout); no other flag
};
struct FindingsOptions {
  bool open_only = false;
  bool json = false;
};
struct ExportOptions {
  std::string format;  // jsonl | prometheus | chrome-trace
  std::string out;     // "" or "-" = stdout
};
// `scout dump`: segment paths, or the segments of a job in a directory (default: the job from
// the environment, SCOUT_SHM_DIR), optionally of one host.
struct DumpOptions {
  std::vector<std::string> paths;
  std::string job, dir, host;
  bool no_ops = false;  // segment and comm lines only
  int64_t ring = -1;    // >= 0: only this ring
};
// `scout jobs`: the jobs with a store in `state_dir` (default SCOUT_STATE_DIR).
struct JobsOptions {
  std::string state_dir;
  bool json = false;
};
// One row per job, newest first: JOB, STARTED, NODES, RANKS, FINDINGS ("N (O open)"), STORE (the
// store `scout status --job` reads: node 0's, else the lowest node's; an unreadable one says why),
// then the command for one job; --json: one object per job per line. Exit 0 (also with no jobs).
int cmd_jobs(const JobsOptions& o, std::ostream& out);

// `scout clean`: the segments in `dir` (default SCOUT_SHM_DIR) of `job` (default: every job).
struct CleanOptions {
  std::string dir, job;
};
// `scout run`. The job is --job, else the environment's (SCOUT_JOB_ID, TORCHELASTIC_RUN_ID,
// SLURM_JOB_ID), else a fresh "run-<YYYYmmdd-HHMMSS>-<pid>".
struct RunOptions {
  StoreOptions where;                      // job and store passed to the observer
  int nodes = 1;                           // observers in the job (--nodes, also forwarded)
  std::vector<std::string> observer_args;  // forwarded flags
  double start_timeout_s = 30;             // wait for the observer's first pass before COMMAND
  double stop_timeout_s = 30;              // SIGTERM -> SIGKILL grace for the observer
  bool keep_segments = false;              // keep the job's segments after the final pass
  std::vector<std::string> command;
};

// `scout ckpt list|show|latest`.
struct CkptOptions {
  std::string action;  // list | show | latest
  std::string target;  // show: checkpoint path or id
  bool json = false;
  bool verified = false;  // latest: only verified checkpoints
};

// Subcommands. Each writes to `out` and returns the exit code; user errors throw UsageError,
// store failures throw store::Error.
// `scout replay plan` (docs/cli.md): flags of the GEMM replay scheduler (replay/schedule/plan.h).
struct ReplayPlanOptions {
  bool json = false;
  double budget_ms = 50;
  int sm_count = 132;
  int max_recipes = 0;
};
int cmd_replay_plan(store::StoreReader& rd, const ReplayPlanOptions& o, std::ostream& out);
// `scout replay list`: one row per replay cycle in the store (JSON lines with --json); exit 0.
// `scout replay show ID`: one cycle (store row id) with its GPUs, recipes, verdicts and every
// sample's fingerprint and time; an unknown id is a UsageError (docs/cli.md, "scout replay list").
int cmd_replay_list(store::StoreReader& rd, bool json, std::ostream& out);
// `scout replay run`: one replay cycle now, on the observer of `where` (docs/cli.md "scout replay
// run"). Prints the cycle as `scout replay show` does; exit 0 when it passed, kExitReplayFailed when
// it found a failing GPU or link, kExitNoObserver when no observer answered (within 1.5 s when
// none runs: the store was not written and the request not taken), kExitNoVerdict when the cycle
// was inconclusive or did not finish within wait_s; bad flags or no store are a UsageError.
struct ReplayRunOptions {
  std::string ranks;    // "0-3,5"; "" = every GPU of the node
  std::string recipes;  // "gemm,coll,link" subset; "" = all
  double wait_s = 90;   // how long to wait for the observer's answer
  bool json = false;
  bool samples = false;  // print the cycle as `scout replay show --samples`
};
int cmd_replay_run(const StoreOptions& where, const ReplayRunOptions& o, std::ostream& out);
// `scout replay show ID` (docs/cli.md): the summary; with samples, also the GPUs of the readiness
// contract, every recipe and every sample. An unknown id is a UsageError.
struct ReplayShowOptions {
  int64_t id = 0;
  bool json = false;
  bool samples = false;
  std::string selector;  // how the user named the store (store_selector), repeated in the hint
};
int cmd_replay_show(store::StoreReader& rd, const ReplayShowOptions& o, std::ostream& out);
// What a replay cycle found, in a few words (the FOUND column of `scout replay list`): "sdc on 5",
// "slow GPU 6", "slow link 1-6", then the cycle's error when with_error, or "-".
std::string found_text(const obs::ReplayCycleRecord& c, bool with_error = true);
// The OUTCOME column: the stored outcome (pass, fail, inconclusive), except "slow" for a cycle
// that passed (every output right) but found a slow GPU or link, so that it agrees with FOUND.
std::string outcome_text(const obs::ReplayCycleRecord& c);
// One replay cycle as `scout replay show` prints it (selector: the flags that named the store,
// store_selector, repeated in the --samples hint so it pastes as printed); exit 0.
int print_replay_cycle(const obs::ReplayCycleRecord& c, bool json, bool samples, const std::string& selector,
                       std::ostream& out);

int cmd_status(store::StoreReader& rd, const StatusOptions& o, std::ostream& out);
int cmd_report(store::StoreReader& rd, const ReportOptions& o, std::ostream& out);
// `scout report --html FILE` (observer/cli/report_html.h): writes the page to `path` atomically
// and prints "report: PATH (SIZE; N findings)" on `out`, or writes the page itself on `out` when
// path is "-". An unwritable path is a UsageError.
int cmd_report_html(store::StoreReader& rd, const std::string& path, std::ostream& out);
int cmd_findings(store::StoreReader& rd, const FindingsOptions& o, std::ostream& out);
int cmd_explain(store::StoreReader& rd, int64_t id, bool json, std::ostream& out);
// The text of `scout explain` for one finding: header (kind, verdict, status, summary, suspects,
// peer, communicator, operation, first and last seen) and the evidence in words; times relative
// to `origin_ns` (the job start). With `ranks` (the store's ranks now), a suspect whose process
// died says so ("; its process is dead"), whatever the evidence recorded when it was named. The HTML report shows the same words.
std::string explain_text(const obs::Finding& f, int64_t origin_ns, const std::vector<obs::RankInfo>* ranks = nullptr);
int cmd_export(store::StoreReader& rd, const ExportOptions& o, std::ostream& out);
int cmd_config(bool markdown, bool json, std::ostream& out);
int cmd_hash(const std::string& path, std::ostream& out);
int cmd_run(const RunOptions& o);
// Checkpoints of the store at `store_path` (docs/cli.md, "scout ckpt"). list: exit 0. show: exit 0,
// or 1 when the certificate chain is broken; an unknown checkpoint is a UsageError. latest: the
// path on `out` and exit 0, or why there is none on stderr and exit 1.
int cmd_ckpt(const std::string& store_path, const CkptOptions& o, std::ostream& out);
// Dumps every segment it can read; a path that is not a readable segment prints one line
// "scout: <why>" on stderr and the command goes on, then returns kExitUsage. Throws UsageError
// when --job finds no segment.
int cmd_dump(const DumpOptions& o, std::ostream& out);
// Removes the segments whose writer process is gone (one line each, then a summary); segments
// of running processes and files the reader refuses are left. Throws UsageError when `dir`
// cannot be listed.
int cmd_clean(const CleanOptions& o, std::ostream& out);

// Entry point of build/bin/scout.
int main(int argc, char** argv);

}  // namespace scout::cli
