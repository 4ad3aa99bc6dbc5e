// Which link, GPU or host stopped a stuck collective (docs/observer.md, "Stuck collectives").
//
// A collective is stuck when every participant started it and none completes (comm_waits.h, class
// "stuck"). Its records say that much and no more; its progress sources say where it stopped:
//   - KernelCh per channel (OpRecord ch_started_mask / ch_stopped_mask): the channels that never
//     stopped on any rank while the others did (a dead path stops the channels whose ring uses it);
//   - the progress table (ProxyOp/ProxyStep of NCCL's network transport, per channel, peer and
//     direction; docs/record-format.md "Progress table"), for the operation's ProxyOps the plugin
//     received: a send step handed to the network that never completes is a link that stopped
//     delivering ("stopped"); data received and handed to the GPU that the GPU never consumes is a
//     GPU that stopped ("gpu"); every other unfinished step waits for one of those ("starved").
// Verdict: a GPU path and no stopped send names the rank(s) ("gpu"; of several, those whose GPU
// moved no data of the operation, sent or consumed, when some did: the others are blocked behind
// it on a hop without steps); stopped sends name their
// links: when every stopped link touches one host and they reach at least two other hosts, that
// host's network is down ("host": every member on it); otherwise the links' two ends ("link").
// With no progress for the operation (no network steps: a collective inside one host; or with
// SCOUT_PROXY_PROGRESS=0 one enqueued outside a window or trace, since NCCL reads the activation
// mask when it enqueues a task; docs/plugin.md, "Tracing a stuck collective") the verdict is
// "none" and the channels are the evidence.
#pragma once

#include <cstdint>
#include <vector>

#include "observer/model/evidence.h"
#include "observer/model/model.h"

namespace scout::obs {

struct StuckVerdict {
  EvStuckTrace trace;
  std::vector<int> suspects;  // Model proc ids, ascending by global rank
};

// Traces stuck collective `op` of `c` through what the Model holds of its members' progress
// tables and records.
StuckVerdict trace_stuck(const Model& m, const Comm& c, const OpId& op);

}  // namespace scout::obs
