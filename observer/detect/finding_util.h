// Small helpers every detector uses to fill a Finding the same way: suspects with identity,
// communicator fields, operation keys, and the wording of "who" in summaries.
#pragma once

#include <string>
#include <vector>

#include "common/hex.h"
#include "observer/model/evidence.h"
#include "observer/model/finding.h"
#include "observer/model/model.h"

namespace scout::obs {

// The suspect for process `proc` (global rank, host, pid, gpu), with its rank in the finding's
// communicator (`comm_rank`, -1 if not about one communicator).
Suspect suspect_of(const Model& m, int proc, int comm_rank = -1);
// Suspect for comm rank `rank` of `c` (identity unknown: global_rank -1).
Suspect suspect_of(const Model& m, const Comm& c, int rank);

// "rank 5 (node0, pid 4242)"; "comm rank 3 of <comm> (unknown process)" when not known.
std::string who(const Model& m, int proc);
std::string who(const Model& m, const Comm& c, int rank);
// "dp (0x00000000000000ab)" or "0x00000000000000ab" when the communicator has no name.
std::string comm_label(const Comm& c);

// Sets comm_hash, comm_name and comm_nranks of `f` from `c`.
void set_comm(Finding& f, const Comm& c);
// The issue-6 key of an operation: {func name, seq}. A p2p pair is named "Send", or "Recv" when
// the finding is about its receiving side (`rank` = the receiver's comm rank).
OpKey op_key(const OpId& id, int rank = -1);
// The evidence *comm* of `c` (hash, name, nranks).
EvComm ev_comm(const Comm& c);
// The evidence *op* of `id` (func, seq; src and dst comm ranks for p2p).
EvOp ev_op(const OpId& id);
// Comm rank of process `proc` in `c`, -1 if it is not a member.
int rank_of(const Comm& c, int proc);
// Global ranks of comm ranks `ranks` of `c` (-1 where unknown), in the same order.
std::vector<int> global_ranks(const Model& m, const Comm& c, const std::vector<int>& ranks);
// "0x" + 16 hex digits, for fingerprints (common/hex.h).
using shm::fp_hex;
// "tp3" -> "tp", "dp_12" -> "dp", "" -> "": communicators named alike play the same role.
std::string name_stem(const std::string& name);
// Class of a communicator for noise calibration: its name stem, rank count and node count
// ("tp/2/1"); communicators of one class do the same work (docs/observer.md, "Stragglers").
std::string comm_class(const Comm& c);
// ns -> ms rounded to 3 decimals, for evidence.
double to_ms(int64_t ns);

}  // namespace scout::obs
