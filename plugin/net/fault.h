// Net drills: the faults SCOUT_NET_FAULT injects into the connections the net plugin half wraps
// (docs/net-plugin.md, "Drills"). Off unless the variable is set.
//
//   delay:peer=R,ms=M[,rank=Q]      every transfer of a selected connection completes no earlier
//                                   than M ms after it was posted
//   stall:peer=R,after=N[,rank=Q]   after N completed transfers, no transfer of a selected
//                                   connection ever completes again
//   flip:peer=R,every=N[,rank=Q]    every N-th send to global rank R carries one flipped bit
//                                   (host memory only; R then receives corrupted data)
//
// R and Q are global ranks. delay and stall select the links that touch R: a send connection of
// process P whose remote end X is known (from the listen handle) when P == R or X == R, and a
// receive connection (whose remote end a net plugin is not told) when P == R; with rank=Q only
// the link between Q and R, i.e. send connections with {P, X} == {Q, R}. flip selects send
// connections with X == R (and P == Q when rank is given).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scout::net {

enum class FaultKind { kDelay, kStall, kFlip };

struct FaultSpec {
  FaultKind kind = FaultKind::kDelay;
  int peer = -1;       // R (required)
  int rank = -1;       // Q (optional; -1: every link touching R)
  int64_t ms = 0;      // delay: ms >= 1
  uint64_t after = 0;  // stall: completed transfers before the stall (>= 0)
  uint64_t every = 0;  // flip: every N-th send (N >= 1)
};

// Parses SCOUT_NET_FAULT: specs separated by ';' (empty entries ignored). On a bad spec returns
// false with *error naming it and what is accepted; *out then holds nothing.
bool parse_faults(std::string_view text, std::vector<FaultSpec>* out, std::string* error);

// What the drills do to one connection.
struct ConnFaults {
  const FaultSpec* delay = nullptr;  // first matching delay spec
  const FaultSpec* stall = nullptr;
  const FaultSpec* flip = nullptr;
  bool any() const { return delay != nullptr || stall != nullptr || flip != nullptr; }
};

// The faults of a connection of process `me` (global rank) whose remote end is `peer` (global
// rank, -1 unknown), for a send (`send`) or receive connection, per the selection rules above.
ConnFaults faults_for(const std::vector<FaultSpec>& specs, int me, int peer, bool send);

// One line for logs: "delay:peer=3,ms=20" (as parsed).
std::string describe(const FaultSpec& f);

}  // namespace scout::net
