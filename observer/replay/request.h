// On-demand replay requests (docs/replay.md, "On demand"): `scout replay run` leaves a request
// file beside the store of the observer it asks, `<store>.replay-request.<id>.json`; that
// observer's replay coordination takes it at its next pass (triggers.h), runs one
// cycle with trigger "demand" and stores it with `detail.request` = the id, which the CLI waits
// for in the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace scout::obs {

struct ReplayRequest {
  std::string id;                    // [A-Za-z0-9-]{1,64}, unique per request
  std::vector<int> ranks;            // global ranks to replay on; empty = every rank of the node
  std::vector<std::string> recipes;  // subset of "gemm", "coll", "link"; empty = all three
};

// The request file's path prefix for a store path: `<store>.replay-request.`.
std::string replay_request_prefix(const std::string& store_path);

// Writes `r` as `<prefix><id>.json`, atomically (an O_EXCL|O_NOFOLLOW temporary in the same
// directory, then rename), mode 0600. False with *error naming the path on any failure.
bool write_replay_request(const std::string& prefix, const ReplayRequest& r, std::string* error);

// Takes the oldest request file under `prefix` (by modification time, then name): reads it,
// removes it, and returns it. A file that is not a regular file owned by this user (a FIFO, a
// symlink, another user's), is larger than 64 KiB or does not parse is removed and reported
// through *error (the caller logs it); a directory of that name is ignored (it cannot be removed
// and is not a request: it never blocks later requests). Returns nullopt when there is no valid
// request. Never blocks (O_NONBLOCK|O_NOFOLLOW).
std::optional<ReplayRequest> take_replay_request(const std::string& prefix, std::string* error);

// Whether `id` is a valid request id ([A-Za-z0-9-]{1,64}).
bool valid_request_id(const std::string& id);

}  // namespace scout::obs
