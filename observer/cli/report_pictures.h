// The pictures of `scout report --html` (docs/cli.md, "scout report --html"), as inline SVG
// drawn here in C++ (the page needs no script to show them): per finding kind the picture that
// convicts, and the job's timeline. The CSS classes they use are styled by the page
// (observer/cli/report_html.cc).
//
//   straggler  per-rank lateness (GPU start minus the earliest rank's, ms) over the finding's
//              window of collectives in each communicator of the evidence, with the late threshold
//   slowlink   per channel (pair, communicator, network link): its median time against its peers'
//   sdc        the fingerprint vote: one cell per rank, coloured by the fingerprint it holds
//   desync     the metadata / frontier / sequence vote, as sdc; a hang part as for hang
//   hang, stall, crash, deadlock
//              the wait-for chain as a graph: ranks (waiting ranks with the same wait merged) and
//              arrows to the rank each waits for, labelled with the communicator and operation
//
// Everything taken from the store is escaped (observer/cli/html.h).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "observer/ckpt/states.h"
#include "observer/model/evidence.h"
#include "observer/model/finding.h"
#include "observer/model/replay_cycle.h"
#include "observer/store/reader.h"

namespace scout::cli::report {

// Lateness of every rank of one communicator over a window of its collectives, oldest first.
struct LatenessWindow {
  std::string comm;                     // "dp1 (0x...)"
  std::vector<std::string> ops;         // "AllReduce #5", one per collective
  std::vector<int> ranks;               // global ranks, ascending
  std::vector<std::vector<double>> ms;  // [rank index][collective index]; NaN where unknown
};

// The last `window` collectives (kind coll) of communicator `comm_hash` whose first GPU start is
// at or before `until_ns`, with each rank's lateness from the store's timings. Empty ops when the
// store keeps none of them (SCOUT_STORE_MAX_OPS). Throws store::Error.
LatenessWindow lateness_window(store::StoreReader& rd, uint64_t comm_hash, const std::string& comm_words,
                               int64_t until_ns, int window);

// The picture of one finding (SVG markup, possibly several <svg> with captions), "" when its
// kind has none or its evidence does not read as its kind's (observer/model/evidence.h).
// Reads the store for a straggler's lateness windows.
std::string finding_picture(store::StoreReader& rd, const obs::Finding& f);

// The pictures themselves, from evidence already read.
std::string straggler_picture(const obs::Finding& f, const obs::StragglerEvidence& e,
                              const std::vector<LatenessWindow>& windows);
std::string slowlink_picture(const obs::SlowLinkEvidence& e);
std::string sdc_picture(const obs::SdcEvidence& e);
std::string desync_picture(const obs::DesyncEvidence& e);
// `roots`: the roots of the evidence (hang, stall), each drawn with its reason; `dead_rank` >= 0
// for a crash (the rank the chain ends at); `cycle` for a deadlock.
std::string wait_graph_picture(const std::vector<obs::EvWaitEdge>& edges, const std::vector<obs::EvHangRoot>& roots,
                               int dead_rank, bool cycle);

// One vote as cells: rows of cells (one per rank or communicator), each in the colour of the
// group it voted with; a legend with each group's value and size.
struct VoteCell {
  std::string label;    // "5", "dp3"
  std::string tooltip;  // "rank 5 (comm rank 5): 0x..."
  int group = 0;        // index into groups
};
struct VoteGroup {
  std::string value;  // "0x62e972e97723e98f", "float32 x 1024"
  size_t size = 0;
  bool majority = false;
};
std::string vote_picture(const std::string& caption, const std::vector<VoteCell>& cells,
                         const std::vector<VoteGroup>& groups);

// The job's timeline: one lane per finding kind (a bar per finding from first to last seen,
// linking to its section), a lane of checkpoints (a mark at each completion, coloured by state)
// and one of replay cycles (a bar per cycle, coloured by outcome). Times from `origin_ns` to
// `end_ns` (CLOCK_REALTIME ns).
std::string timeline_picture(const std::vector<obs::Finding>& findings, const std::vector<ckpt::Checkpoint>& ckpts,
                             const std::vector<obs::ReplayCycleRecord>& cycles, int64_t origin_ns, int64_t end_ns);

}  // namespace scout::cli::report
