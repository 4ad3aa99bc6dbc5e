// An operation the judge is done with, reduced to what the window-based detectors keep
// (stragglers, slow links, NaN origin, equivalent communicators). Plain data, no pointers into
// the Model (the Op itself is dropped after judgement).
#pragma once

#include <cstdint>
#include <vector>

#include "observer/model/model.h"

namespace scout::obs {

struct JudgedOp {
  CommKey comm;
  OpId id;
  uint8_t datatype = 0;
  uint64_t bytes = 0;           // message bytes of the record (docs/nccl-notes.md §5.1 convention per func)
  uint64_t count = 0;           // element count of the task (the record's count)
  uint8_t algo = 0, proto = 0;  // shm::Algo / shm::Proto of the record
  int n = 0;                    // participants (coll: nranks, p2p: 2)
  bool complete = false;        // every participant present, complete, with GPU start and end
  bool displaced = false;       // after an open sequence desync of its communicator: its records
                                // are different calls (SequenceCheck::suppresses); not timed
  struct Part {
    bool present = true;  // false: its record was lost before it was final
    int comm_rank = -1;
    int proc = -1;
    int64_t api_ns = 0, enqueue_ns = 0;
    int64_t start_ns = 0, end_ns = 0;  // GPU start/end (wall clock); 0 unknown
    uint8_t fp_send_status = 0, fp_recv_status = 0;
    uint64_t fp_send = 0, fp_recv = 0;
    uint32_t send_nan = 0, send_inf = 0;
  };
  std::vector<Part> parts;  // participants that reported, ascending (coll: by comm rank; p2p:
                            // send side then recv side); all n of them when complete
};

}  // namespace scout::obs
