// Findings and their parts in words, shared by `scout status`, `scout findings` and
// `scout explain`.
#pragma once

#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/job.h"

namespace scout::cli {

// "rank 5 (node1, pid 4242, GPU GPU-5)"; parts that are unknown are left out; "rank ?" for -1.
std::string suspect_words(const obs::Suspect& s);
// Global ranks of the suspects, compact: "4-5,7"; "-" when none.
std::string suspect_ranks(const std::vector<obs::Suspect>& v);
// "dp" (or the hash when the name is empty); "-" when the finding has no communicator.
std::string comm_words(const obs::Finding& f);
// "AllReduce #40"; "-" without key.
std::string key_words(const obs::Finding& f);

// A communicator's state as `status` and `report --html` show it: the observer's word (docs/
// observer.md, "Hangs"), except that a store written before the observer said "dead" shows an
// "active" communicator whose member ranks (`ranks`: the store's) are all gone, at least one dead,
// as "dead".
std::string comm_state_shown(const obs::CommInfo& c, const std::vector<obs::RankInfo>& ranks);

// A straggler's cause with the number that proves it (docs/findings.md, straggler `cause` and
// `replay`), for the first screen (`status`, `explain`): "its GPU: replay cycle 4 ran
// gemm:fp32:4096x4096x4096 in 27.6ms and 27.4ms (2 rounds) vs 6.90ms median"; "the host, input
// pipeline or launch path: replay cycle 5 ran gemm:fp32:4096x4096x4096 on its GPU in 6.93ms and
// 6.91ms (2 rounds) vs 6.90ms median (normal); it arrives 59.3ms late (median)" (without the GEMM's times, from a store
// written before the host case carried them: "... replay cycle 5 measured its GPU's GEMM time and
// found it normal; ..."); "not known yet: no replay cycle has measured its GPU since it began; it
// arrives ...". "" for other kinds and for a straggler without `cause` (replay off).
std::string cause_words(const obs::Finding& f);
// The same in a few words for a table cell (`findings`): "cause gpu: GEMM 27.6ms vs 6.90ms
// median", "cause host: GEMM 6.93ms vs 6.90ms median, 59.3ms late" (older stores: "cause host:
// GEMM normal, 59.3ms late"), "cause unknown yet"; "" as above.
std::string cause_brief(const obs::Finding& f);

}  // namespace scout::cli
