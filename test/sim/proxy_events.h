// ProxyOp and ProxyStep events of a collective's network transfers (docs/scout-sim.md, "Network
// steps"), delivered on the communicator's proxy thread while its emulated kernel runs, as NCCL's
// net transport delivers them when the activation mask asks (docs/nccl-notes.md §3.4, §6.7).
//
// The emulated ring: per channel ch, each host's members (in comm-rank order) rotated by ch, the
// hosts one after the other; the ring crosses hosts from the last member of one host to the first
// of the next, so different channels cross between different pairs, as NCCL's rings do over
// several NICs. Only those crossings are network transfers: a rank sends on a channel where it
// is its host's last member, receives where it is the first.
#pragma once

#include <cstdint>
#include <vector>

#include "test/sim/layout.h"

namespace scout::sim {

class Communicator;
struct KernelTask;

// The emulated ring of `spec` on channel `ch`: every comm rank once, each host's members (in
// comm-rank order) rotated by ch, the hosts one after the other in order of their first member.
// On one host every channel's ring has the same neighbours.
std::vector<int> ring_order(const CommSpec& spec, const Layout& layout, int ch);

// The ring neighbours of comm rank `me` of `spec` across hosts on channel `ch`: the comm rank it
// sends to (*send_to) and receives from (*recv_from), -1 where the ring stays on its host.
void ring_net_peers(const CommSpec& spec, const Layout& layout, int me, int ch, int* send_to, int* recv_from);

// linkdown / nicdown (faults.h): the channels of task `t` of `c` whose ring has a link that
// delivers nothing at the task's step (bit i: the task's i-th channel, t.channel_base + i); 0: none.
uint64_t stuck_channels(const Communicator& c, const KernelTask& t);

// Bytes one rank moves over one ring channel for task `t` (the nccl-tests traffic convention,
// docs/nccl-notes.md §5.1, split over the task's channels).
uint64_t ring_channel_bytes(const KernelTask& t, int nranks);

// Emits the ProxyOp/ProxyStep events of task `t` (a collective) of `c` for its inter-host ring
// transfers if t.mask asks for them; steps of kNetChunk bytes. A pair with a slowlink fault
// (faults.h) takes its delay in its steps: step k of n of such a pair completes at
// `release_ns` + ms * (k + 1) / n (both ends), and no sooner than ms / n after it entered the
// network; the other steps as fast as the calls go.
// On the channels of `stuck` (stuck_channels(); docs/scout-sim.md "Network steps") the transfers
// stop: a crossing over a link that is down has its first send step handed to the network
// (SendWait) and its first receive step posted (RecvWait), neither ever completing; every other
// crossing of those channels completes its first step and then starves (its second send step
// waits for the GPU's data, its second receive step for data that never comes); their ProxyOps are
// never stopped.
// kernelstall (`hung_rank`: the comm rank whose kernel hung at its start, -1 none; every channel in
// `stuck`): the hung rank's GPU neither produces nor consumes data, its proxy thread still runs, so
// its send crossings post their first step and wait for the GPU's data (SendGPUWait) and its
// receive crossings take their first step from the network and hand it to the GPU (RecvWait,
// RecvFlushWait, RecvGPUWait), never consumed; a receive from the hung rank waits at RecvWait of
// its first step; every other crossing completes its first step and starves at the second.
void emit_coll_proxy_events(Communicator& c, const KernelTask& t, int64_t release_ns, uint64_t stuck = 0,
                            int hung_rank = -1);

// Task `t` (a collective) of `c` was posted behind a kernel that never completes: NCCL's proxy
// thread still appends its proxy ops and starts their ProxyOps (when t.mask asks), but they wait
// behind the stuck ops of their connections (v2.28.9-1:src/proxy.cc ProxyAppend, nextPeer), so no
// InProgress, step or stop ever follows (docs/scout-sim.md, "Network steps").
void emit_appended_proxy_ops(Communicator& c, const KernelTask& t);

}  // namespace scout::sim
